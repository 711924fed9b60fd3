import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { isCountry } from '../core/countries.js';
import { canonicalUuid } from '../core/formats.js';
import type { AccountKind, ImportCounts, StagedListing, Store } from '../storage/index.js';
import { listingBodyHead } from './body.js';
import { IMPORTED_FIELDS, LISTING_FIELD_NAMES, readField, type ListingField } from './fields.js';

/** A bad import line: the message names the line and the field (OPERATIONS "Import format"). */
export class ImportError extends Error {
  constructor(readonly line: number, readonly field: string | undefined, problem: string) {
    // A file's text (a field name, a value, a parser's excerpt) must not drive the operator's
    // terminal: control and direction-changing characters are shown escaped.
    super(escapeControlCharacters(`line ${line}${field === undefined ? '' : `, field "${field}"`}: ${problem}`));
    this.name = 'ImportError';
  }
}

/** C0 and C1 controls (ESC starts terminal sequences), and bidirectional overrides, as \uXXXX. */
export function escapeControlCharacters(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Fields an import line may carry besides the listing object's (OPERATIONS "Import format"). */
const PLACEMENT_FIELDS = ['country', 'owner_account_id'] as const;
const KNOWN_FIELDS: ReadonlySet<string> = new Set<string>([...LISTING_FIELD_NAMES, ...PLACEMENT_FIELDS]);

export { parseIsoDate } from './fields.js';

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A line's listing, before its owner is known (its `org_id` and JSON come with the owner, D1). */
export type ParsedListing = Omit<StagedListing, 'body_head'>;

export interface ParsedLine {
  line: number;
  /** `created_at` null when the line gave none: an update keeps the stored one, an insert takes the import time. */
  row: ParsedListing;
  /** As given, if given: checked against the owner's kind once owners are known (D1). */
  orgId: string | null | undefined;
}

/**
 * Validates one NDJSON line into a row: each field by its declaration (fields.ts), then the rules
 * between fields. `orgId` is settled later, once the owner's kind is known.
 */
export function parseImportLine(text: string, line: number): ParsedLine {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (error) {
    throw new ImportError(line, undefined, `not valid JSON (${(error as Error).message})`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ImportError(line, undefined, 'expected a JSON object');
  const given = obj as Record<string, unknown>;
  for (const field of Object.keys(given)) {
    if (!KNOWN_FIELDS.has(field)) throw new ImportError(line, field, 'is not a field of a listing');
  }
  const read = (field: ListingField, value: unknown = given[field]): unknown => {
    const result = readField(field, value);
    if ('problem' in result) throw new ImportError(line, field, result.problem);
    return result.value;
  };

  const country = given.country;
  if (country === undefined || country === null) throw new ImportError(line, 'country', 'is required');
  if (!isCountry(country)) throw new ImportError(line, 'country', `expected one of sg, my, uk, in, us, ca, au, nz, got ${show(country)}`);
  const row: Record<string, unknown> = { line, country };
  // In the order of the listing object, so that the first bad field of a line is the one named.
  for (const field of IMPORTED_FIELDS) {
    row[field] = read(field);
    if (field === 'id') row.owner_account_id = readOwner(given.owner_account_id, line);
  }
  // Between fields: the cover is one of the images (or 0 when there are none).
  const images = JSON.parse(row.images as string) as string[];
  const cover = row.cover_image_index as number;
  if (images.length === 0 ? cover !== 0 : cover >= images.length) {
    throw new ImportError(line, 'cover_image_index', images.length === 0 ? `must be 0 when there are no images, got ${cover}` : `must be an index into images (0 to ${images.length - 1}), got ${cover}`);
  }
  const orgId = given.org_id === undefined ? undefined : given.org_id === null ? null : (read('org_id') as string);
  row.org_id = null;
  row.created_at = given.created_at === undefined || given.created_at === null ? null : read('created_at');
  return { line, orgId, row: row as unknown as ParsedListing };
}

/** The owning account (D1): a UUID, required. */
function readOwner(value: unknown, line: number): string {
  if (value === undefined || value === null) throw new ImportError(line, 'owner_account_id', 'is required');
  const id = canonicalUuid(value);
  if (id === undefined) throw new ImportError(line, 'owner_account_id', `expected a UUID, got ${show(value)}`);
  return id;
}

/** Lines staged per batch (bounded memory, whatever the file's size). */
const BATCH = 1000;

/** 31-bit hash of an id: a set of these finds repeated ids in a file of any size in little memory. */
function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 1;
}

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
 */
export async function importListings(store: Store, input: Readable, now: Date, options: ImportOptions = {}): Promise<ImportCounts> {
  const progressEvery = options.progressEvery ?? 10_000;
  return store.listings.importing(async (session) => {
    const kinds = new Map<string, AccountKind | null>();
    const seen = new Set<number>();
    let batch: StagedListing[] = [];
    const batchLines = new Map<string, number>();
    let lineNumber = 0;
    let staged = 0;

    /** The line that gave this id earlier in the file, if any. */
    const earlierLine = async (id: string): Promise<number | undefined> => {
      const hash = idHash(id);
      if (!seen.has(hash)) {
        seen.add(hash);
        return undefined;
      }
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
    const flush = async () => {
      await session.stage(batch);
      staged += batch.length;
      batch = [];
      batchLines.clear();
    };

    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      lineNumber++;
      if (options.onProgress && lineNumber % progressEvery === 0) options.onProgress(lineNumber);
      const text = lineNumber === 1 && raw.startsWith('\uFEFF') ? raw.slice(1) : raw;
      if (text.trim() === '') continue;
      const parsed = parseImportLine(text, lineNumber);
      const { row } = parsed;
      const first = await earlierLine(row.id);
      if (first !== undefined) throw new ImportError(lineNumber, 'id', `${row.id} is already on line ${first}; give each listing once`);
      const kind = await kindOf(row.owner_account_id);
      if (kind === null) throw new ImportError(lineNumber, 'owner_account_id', `no account ${row.owner_account_id}; create it first (account create)`);
      // D1: org_id is the owner's id for an organisation and null for an individual landlord.
      const derived = kind === 'organisation' ? row.owner_account_id : null;
      if (parsed.orgId !== undefined && parsed.orgId !== derived) {
        throw new ImportError(lineNumber, 'org_id', `must be ${derived === null ? 'null (the owner is an individual)' : `the owner's id ${derived}`} or omitted`);
      }
      row.org_id = derived;
      batch.push(Object.assign(row, { body_head: listingBodyHead(row) }));
      batchLines.set(row.id, lineNumber);
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    if (staged === 0) return { inserted: 0, updated: 0, unchanged: 0 };
    return session.swapIn(now.toISOString());
  });
}
