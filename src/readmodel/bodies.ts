import { createHash } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { batchPerTurn } from '../core/turn-batch.js';
import type { ServedListingRow, Store } from '../storage/index.js';
import type { ReadCaches } from './caches.js';
import type { IndexEntry } from './tenant-index.js';

/** An answer's body as the read path keeps and sends it. */
export interface Body {
  /** The UTF-8 bytes of the JSON answer. */
  bytes: Buffer;
  /** Strong, from the bytes alone: the same body has the same ETag on every instance, after restarts (D21). */
  etag: string;
}

export function etagOf(bytes: Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
}

export function toBody(text: string): Body {
  const bytes = ownBuffer(text);
  return { bytes, etag: etagOf(bytes) };
}

/**
 * A serialised listing: a fragment of every page that shows it, and the whole body of its
 * detail answer. Its ETag is computed the first time a detail answer needs it: a page built
 * from twenty listings has no use for twenty hashes.
 */
export class ListingBody implements Body {
  private tag: string | undefined;
  /**
   * `changeSeq`: the change of the listing it shows (answered only for an index entry at that
   * change). `readAt`: clock ms when it was read from the database (a page made of it expires a
   * TTL after its oldest).
   */
  constructor(
    readonly bytes: Buffer,
    readonly changeSeq: number,
    readonly readAt: number,
  ) {}
  get etag(): string {
    return (this.tag ??= etagOf(this.bytes));
  }
}

/**
 * A cached serialised listing for an index entry: only at the entry's change. The cache is keyed by
 * the id alone (the string the index holds, whose hash is computed once), not by a key made per
 * read; a newer change of the listing replaces the older one.
 */
export function bodyAt(cached: ListingBody | undefined, entry: IndexEntry): ListingBody | undefined {
  return cached !== undefined && cached.changeSeq === entry.changeSeq ? cached : undefined;
}

/** D8: never 0, so "request page=1, 2, ... until page equals pages" ends for every total. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

const PAGE_START = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');

/** The envelope of spec 2.3, in the order of its schema; items are the cached listings' JSON. */
export function pageBody(items: readonly ListingBody[], page: number, perPage: number, total: number): Body {
  const parts: Buffer[] = [PAGE_START];
  for (const [i, item] of items.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(item.bytes);
  }
  parts.push(Buffer.from(`],"page":${page},"per_page":${perPage},"total":${total},"pages":${pageCount(total, perPage)}}`));
  const bytes = ownConcat(parts);
  return { bytes, etag: etagOf(bytes) };
}

/**
 * Cached bytes in memory of their own. `Buffer.from` and `Buffer.concat` put anything under 4 KB
 * in a slice of a shared 8 KB pool, so one cached listing (about 1 KB) or small page kept its whole
 * slab alive, with whatever else was cut from it: the caches held far more memory than their byte
 * bound counts (the scale bench's RSS after its phases fell by about a third with this).
 */
export function ownBuffer(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

function ownConcat(parts: readonly Buffer[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const bytes = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(bytes, at);
  return bytes;
}

/**
 * Serialised listings by id, each for one change of its listing (bodies.ts `bodyAt`): pages are
 * joined from these, and a detail answers with one. Rows the cache misses are read with those every
 * other request of the same turn misses, in one query.
 */
export function createListingBodies(store: Store, clock: Clock, cache: ReadCaches['listings']) {
  let rowReads = 0;

  /**
   * A listing's JSON as just read (written with the listing: listings/body.ts), kept in place of
   * any older copy; never in place of a newer one (a read that started before a write can end
   * after a read made since).
   */
  function remember(row: ServedListingRow): ListingBody {
    const body = new ListingBody(ownBuffer(row.body), Number(row.change_seq), clock());
    const cached = cache.peek(row.id);
    if (cached === undefined || cached.changeSeq <= body.changeSeq) cache.remember(row.id, body);
    return body;
  }

  /**
   * A listing's row by id, read with those every other request of the same turn asks for, in one
   * read (core/turn-batch.ts; storage/listings.ts `rows` queries up to 128 ids at a time): the
   * details and pages that missed the cache together (fifty connections' worth after the caches
   * expired while traffic paused, or every request with the caches off), and the stale details
   * read again in the background.
   */
  const rowById = batchPerTurn(async (ids: string[]) => {
    rowReads++;
    return new Map((await store.listings.rows(ids)).map((row) => [row.id, row]));
  });

  /**
   * A stale cached detail (cache/read-cache.ts) is read again while the read that found it stale
   * answers from memory: at whatever change the listing is now (an older one is never answered
   * for a newer index entry, see `bodyAt`).
   */
  const refreshing = new Set<Promise<void>>();
  const readAgain = (id: string): void => {
    const refresh = rowById(id).then(
      (row) => {
        if (row !== undefined) remember(row);
      },
      // Nothing to answer here: the entry is answered until it expires, and the next read then
      // reads it itself, and answers the error if there still is one.
      () => undefined,
    );
    refreshing.add(refresh);
    void refresh.finally(() => refreshing.delete(refresh));
  };

  return {
    get rowReads() {
      return rowReads;
    },
    /** Resolves once the refreshes ahead under way now have landed. */
    async settled(): Promise<void> {
      await Promise.all([...refreshing, cache.settled()]);
    },

    /** A row read by the caller (a page read before its tenant's index was built): its body, kept like any other. */
    fromRow: remember,

    /** A listing's row by id, read with the other rows this turn asks for (a detail before its tenant's index is built). */
    row: (id: string): Promise<ServedListingRow | undefined> => rowById(id),

    /** The cached body of an entry, at its change; read again in the background when stale. */
    cached(entry: IndexEntry): ListingBody | undefined {
      return bodyAt(cache.peek(entry.id, readAgain), entry);
    },

    /** The entry's body read now; undefined when the listing is gone or at another change (the tenant changed meanwhile). */
    async read(entry: IndexEntry): Promise<ListingBody | undefined> {
      const row = await rowById(entry.id);
      return row === undefined || Number(row.change_seq) !== entry.changeSeq ? undefined : remember(row);
    },

    /**
     * The JSON of each entry, from the cache while fresh, else read now. A row whose change is
     * newer than the entry's means the tenant changed meanwhile: undefined, and the caller reads
     * again at the new version.
     */
    async of(entries: readonly IndexEntry[]): Promise<ListingBody[] | undefined> {
      const now = clock();
      const found: Array<ListingBody | undefined> = entries.map((e) => {
        const cached = bodyAt(cache.peek(e.id), e);
        return cached !== undefined && cache.freshUntil(cached.readAt) > now ? cached : undefined;
      });
      if (!found.includes(undefined)) return found as ListingBody[];
      // With the rows every other request of this turn misses: the same page asked by many at once is one read.
      const rows = await Promise.all(entries.map((e, i) => (found[i] === undefined ? rowById(e.id) : undefined)));
      for (const [i, entry] of entries.entries()) {
        if (found[i] !== undefined) continue;
        const row = rows[i];
        if (row === undefined || Number(row.change_seq) !== entry.changeSeq) return undefined;
        found[i] = remember(row);
      }
      return found as ListingBody[];
    },
  };
}
