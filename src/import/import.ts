import { Readable } from 'node:stream';
import type { AccountKind, ImportCounts, StagedListing, Store } from '../storage/index.js';
import { listingBodyHead } from '../listings/body.js';
import { ImportError } from './import-line.js';
import { parseLines, parseLinesInWorker, type ImportFile } from './import-lines.js';
import { SeenIds } from './seen-ids.js';

export { ImportError, escapeControlCharacters, parseImportLine, type ParsedLine } from './import-line.js';
export { parseIsoDate } from '../listings/fields.js';
export type { ImportFile } from './import-lines.js';

export interface ImportOptions {
  /** Called every `progressEvery` lines with the count read so far (for a progress line). */
  onProgress?(lines: number): void;
  progressEvery?: number;
}

/**
 * Upserts listings from NDJSON (OPERATIONS "Import format"), all or nothing, streaming: lines are
 * validated one by one, in order, and staged in batches (storage/listings.ts `importing`), so a
 * file of any size is never held in memory; the first bad line (its number and field) is
 * reported and nothing is written. Then everything is swapped in with one short transaction.
 * Blank lines are skipped; a UTF-8 byte-order mark at the start of the file is ignored.
 *
 * A stream is read and checked in this thread. A file (a path or a descriptor) is read and
 * checked by a worker thread while this one stages what it has checked, so a big file's import
 * takes the longer of the two instead of their sum; starting the thread costs some 40 ms, which
 * a small file is better without (the CLI decides by size).
 */
export async function importListings(store: Store, input: Readable | ImportFile, now: Date, options: ImportOptions = {}): Promise<ImportCounts> {
  const progressEvery = options.progressEvery ?? 10_000;
  return store.listings.importing(async (session) => {
    const kinds = new Map<string, AccountKind | null>();
    const seen = new SeenIds();
    /** The lines of the batch being checked, by id (the earlier ones are staged). */
    const batchLines = new Map<string, number>();
    let staged = 0;
    let progressAt = progressEvery;

    /** The line that gave this id earlier in the file, if any. */
    const earlierLine = async (id: string): Promise<number | undefined> => {
      if (!seen.add(id)) return undefined;
      return batchLines.get(id) ?? (await session.stagedLines([id])).get(id);
    };
    const kindOf = async (owner: string): Promise<AccountKind | null> => {
      let kind = kinds.get(owner);
      if (kind === undefined) {
        kind = (await session.accountKinds([owner])).get(owner) ?? null;
        kinds.set(owner, kind);
      }
      return kind;
    };

    // A stream (a file's stream too, which has a path and a descriptor of its own) is read here.
    const batches = input instanceof Readable ? parseLines(input) : parseLinesInWorker(input);
    for await (const { parsed, linesRead } of batches) {
      const batch: StagedListing[] = [];
      for (const { line, row, orgId } of parsed) {
        const first = await earlierLine(row.id);
        if (first !== undefined) throw new ImportError(line, 'id', `${row.id} is already on line ${first}; give each listing once`);
        const kind = await kindOf(row.owner_account_id);
        if (kind === null) throw new ImportError(line, 'owner_account_id', `no account ${row.owner_account_id}; create it first (account create)`);
        // D1: org_id is the owner's id for an organisation and null for an individual landlord.
        const derived = kind === 'organisation' ? row.owner_account_id : null;
        if (orgId !== undefined && orgId !== derived) {
          throw new ImportError(line, 'org_id', `must be ${derived === null ? 'null (the owner is an individual)' : `the owner's id ${derived}`} or omitted`);
        }
        row.org_id = derived;
        batch.push(Object.assign(row, { body_head: listingBodyHead(row) }));
        batchLines.set(row.id, line);
      }
      await session.stage(batch);
      staged += batch.length;
      batchLines.clear();
      for (; options.onProgress && progressAt <= linesRead; progressAt += progressEvery) options.onProgress(progressAt);
    }
    if (staged === 0) return { inserted: 0, updated: 0, unchanged: 0 };
    return session.swapIn(now.toISOString());
  });
}
