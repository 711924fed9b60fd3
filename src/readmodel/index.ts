import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ReadCache, refreshAheadAt } from '../cache/read-cache.js';
import { batchPerTurn } from '../core/turn-batch.js';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import type { Tenant } from '../core/tenant.js';
import type { KeyLookup } from '../auth/authenticate.js';
import type { ApiKeyRecord, ServedListingRow, Store } from '../storage/index.js';
import { createFeed } from './feed.js';
import { TenantIndex, type IndexEntry } from './tenant-index.js';
import { filterInSlices, matches, sortInSlices, SORTS, type View } from './views.js';

/**
 * The read path's data (spec 4.2, 4.3): keys, origins, pages and details, each answered from
 * memory when it can be and from the database when it must, always exact:
 *
 * - keys and origins are cached under the auth version, so a revocation or an origin removal is
 *   refused on the next request anywhere (D4);
 * - listings are read through a per-tenant index (tenant-index.ts) at the tenant's version, so a
 *   read costs its page, and a write to one tenant leaves every other tenant's caches alone;
 * - a serialised listing is cached by id and used only for the change the index shows, a page
 *   body by (tenant, version, page, size) until the soonest expiry it depends on (D10), each with
 *   its strong ETag (D21).
 *
 * With READ_CACHE_TTL_MS=0 nothing is reused from one request to the next but the indexes, which
 * are not caches but the read path's structure, kept exact by the change log.
 */
export interface Body {
  /** The UTF-8 bytes of the JSON answer. */
  bytes: Buffer;
  /** Strong, from the bytes alone: the same body has the same ETag on every instance, after restarts (D21). */
  etag: string;
}

export { tenantOf, type Tenant } from '../core/tenant.js';

/** Counters of the read path, for metrics and for tests that prove what was (not) read again. */
export interface ReadStats {
  pages: { hits: number; misses: number };
  details: { hits: number; misses: number };
  /** Reads of listing rows by id (details and pages that missed, details refreshed ahead): one per turn however many were asked. */
  listingRowReads: number;
  keys: { hits: number; misses: number };
  origins: { hits: number; misses: number };
  /** Tenant indexes built from scratch, and brought up to date from the change log. */
  indexBuilds: number;
  indexReplays: number;
  /** Filtered or sorted views computed (once per view and index generation). */
  viewsComputed: number;
  /** Cached keys, origins, bodies and answers read again ahead of their safety TTL (cache/read-cache.ts). */
  refreshedAhead: number;
  /** Tenants and listings held in memory now. */
  tenants: number;
  listings: number;
}

export interface ListingReads extends KeyLookup {
  /** D17; synchronous when cached. */
  isOriginAllowed(accountId: string, country: Country, origin: string): boolean | Promise<boolean>;
  /** The page envelope (spec 2.3) of a tenant's listings, filtered and sorted by `view` if given (D23). */
  listPage(tenant: Tenant, page: number, perPage: number, view?: View): Body | Promise<Body>;
  /** One listing, or undefined when the tenant cannot see it (D11). */
  detail(tenant: Tenant, id: string): Body | undefined | Promise<Body | undefined>;
  /** One answer of the change feed (D22) from a cursor (none: from the start). */
  changes(tenant: Tenant, cursor: string | undefined, limit: number): Body | Promise<Body>;
  /**
   * Builds the tenant's index (or brings it up to date) as its first read would, sharing the work
   * with any read of it meanwhile; resolves with its visible listings (the warm-up, warm-up.ts).
   */
  warm(tenant: Tenant): Promise<number>;
  stats(): ReadStats;
}

export interface ReadModelOptions {
  /** READ_CACHE_TTL_MS: safety expiry of cached keys, origins and bodies; 0 turns those caches off. */
  cacheTtlMs: number;
  /** Bound on the listings held by all tenant indexes together; least recently read tenants go first. */
  maxIndexedListings?: number;
  /**
   * READ_CACHE_MAX_MB in bytes: the bound on all cached bodies together: half for serialised
   * listings (which are also the detail answers), a quarter each for pages and feed answers.
   */
  maxBodyBytes?: number;
}

/** The cache of keys and of origin checks: entries, each small; an unknown key is cached too. */
const MAX_AUTH_ENTRIES = 50_000;

/** READ_CACHE_MAX_MB's default. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

export function etagOf(bytes: Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
}

function toBody(text: string): Body {
  const bytes = ownBuffer(text);
  return { bytes, etag: etagOf(bytes) };
}

/**
 * A serialised listing: a fragment of every page that shows it, and the whole body of its
 * detail answer. Its ETag is computed the first time a detail answer needs it: a page built
 * from twenty listings has no use for twenty hashes.
 */
class ListingBody implements Body {
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

const COMMA = Buffer.from(',');

/**
 * A cached serialised listing for an index entry: only at the entry's change. The cache is keyed by
 * the id alone (the string the index holds, whose hash is computed once), not by a key made per
 * read; a newer change of the listing replaces the older one.
 */
function bodyAt(cached: ListingBody | undefined, entry: IndexEntry): ListingBody | undefined {
  return cached !== undefined && cached.changeSeq === entry.changeSeq ? cached : undefined;
}

/**
 * Cached bytes in memory of their own. `Buffer.from` and `Buffer.concat` put anything under 4 KB
 * in a slice of a shared 8 KB pool, so one cached listing (about 1 KB) or small page kept its whole
 * slab alive, with whatever else was cut from it: the caches held far more memory than their byte
 * bound counts. In the scale bench the production server's RSS after its phases went from 350-377
 * MB to 251 MB with this.
 */
function ownBuffer(text: string): Buffer {
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

/** D8: never 0, so "request page=1, 2, ... until page equals pages" ends for every total. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

export function createReadModel(store: Store, clock: Clock, options: ReadModelOptions): ListingReads {
  const ttlMs = options.cacheTtlMs;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const keys = new ReadCache<ApiKeyRecord | null>({ clock, ttlMs, maxEntries: MAX_AUTH_ENTRIES });
  /** When each key record the cache holds was read from the database (taken before the read). */
  const keyReadAt = new WeakMap<ApiKeyRecord, number>();
  const origins = new ReadCache<boolean>({ clock, ttlMs, maxEntries: MAX_AUTH_ENTRIES });
  // Bodies are bounded by their bytes only (each entry costs what it holds, nothing set aside).
  const bodyBytes = (b: Body) => b.bytes.length;
  // Serialised listings by id (each for one change, see `bodyAt`): pages are joined from these, and a detail answers with one.
  const listingBodies = new ReadCache<ListingBody>({ clock, ttlMs, maxSize: Math.max(1, Math.floor(maxBodyBytes / 2)), sizeOf: bodyBytes });
  const pages = new ReadCache<Body>({ clock, ttlMs, maxSize: Math.max(1, Math.floor(maxBodyBytes / 4)), sizeOf: bodyBytes });
  const feedAnswers = new ReadCache<Body>({ clock, ttlMs, maxSize: Math.max(1, Math.floor(maxBodyBytes / 4)), sizeOf: bodyBytes });
  const counters = { indexBuilds: 0, indexReplays: 0, detailHits: 0, detailMisses: 0, rowReads: 0, viewsComputed: 0 };
  // Filtered and sorted views of an index generation: exact for it (not a TTL cache), bounded by size.
  const views = new LRUCache<string, readonly IndexEntry[]>({
    maxSize: options.maxIndexedListings ?? 2_000_000,
    sizeCalculation: (v) => Math.max(1, v.length),
  });
  const computingViews = new Map<string, Promise<readonly IndexEntry[]>>();

  /** The entries of a view of the index (its own entries without a view). */
  function viewOf(index: TenantIndex, view: View | undefined): readonly IndexEntry[] | Promise<readonly IndexEntry[]> {
    if (view === undefined || view.key === '') return index.entries;
    const key = `${index.ownerAccountId}\n${index.country}\n${index.generation}\n${view.key}`;
    const ready = views.get(key);
    if (ready !== undefined) return ready;
    let computing = computingViews.get(key);
    if (computing === undefined) {
      computing = (async () => {
        counters.viewsComputed++;
        let entries = index.entries;
        if (view.filter !== undefined) entries = await filterInSlices(entries, matches(view.filter));
        if (view.sort !== undefined) entries = await sortInSlices(entries, SORTS[view.sort]);
        views.set(key, entries);
        return entries;
      })().finally(() => computingViews.delete(key));
      computingViews.set(key, computing);
    }
    return computing;
  }
  const indexes = new LRUCache<string, TenantIndex>({
    maxSize: options.maxIndexedListings ?? 2_000_000,
    sizeCalculation: (index) => Math.max(1, index.size),
  });

  /** The tenant's index, current as of now: synchronous unless it has to catch up (or be built). */
  function currentIndex(tenant: Tenant): TenantIndex | Promise<TenantIndex> {
    const pending = store.changes.pending();
    if (pending !== undefined) return pending.then(() => currentIndex(tenant));
    const key = tenant.key;
    let index = indexes.get(key);
    if (index === undefined) {
      index = new TenantIndex(tenant.ownerAccountId, tenant.country, store, clock, (kind) => (kind === 'build' ? counters.indexBuilds++ : counters.indexReplays++));
      indexes.set(key, index);
    }
    const refreshing = index.refresh(store.changes.tenantVersion(key));
    if (refreshing === undefined) return index;
    const ready = index;
    return refreshing.then(() => {
      // Sizes are known once built: let the bound see it.
      indexes.set(key, ready);
      return ready;
    });
  }

  /**
   * A listing's JSON as just read (written with the listing: listings/body.ts), kept in place of
   * any older copy; never in place of a newer one (a read that started before a write can end
   * after a read made since).
   */
  function listingBody(row: ServedListingRow): ListingBody {
    const body = new ListingBody(ownBuffer(row.body), Number(row.change_seq), clock());
    const cached = listingBodies.peek(row.id);
    if (cached === undefined || cached.changeSeq <= body.changeSeq) listingBodies.remember(row.id, body);
    return body;
  }
  // The feed reads its listings' rows itself, and its answers are cached whole.
  const feed = createFeed(store, clock, (row) => row.body);

  /**
   * A listing's row by id, read with those every other request of the same turn asks for, in one
   * read (core/turn-batch.ts; storage/listings.ts `rows` queries up to 128 ids at a time): the
   * details and pages that missed the cache together (fifty connections' worth after the caches
   * expired while traffic paused, or every request with the caches off), and the details due for
   * their refresh-ahead.
   */
  const rowById = batchPerTurn(async (ids: string[]) => {
    counters.rowReads++;
    return new Map((await store.listings.rows(ids)).map((row) => [row.id, row]));
  });

  /**
   * A cached detail due for its refresh-ahead (cache/read-cache.ts) is read again while the read
   * that found it due answers from memory: at whatever change the listing is now (an older one
   * is never answered for a newer index entry, see `bodyAt`).
   */
  const refreshAhead = (id: string): void => {
    rowById(id).then(
      (row) => {
        if (row !== undefined) listingBody(row);
      },
      // Nothing to answer here: the entry is answered until it expires, and the next read then
      // reads it itself, and answers the error if there still is one.
      () => undefined,
    );
  };

  /**
   * The JSON of each entry, from the cache if it was read from the database since `readSince`,
   * else read now. A row whose change is newer than the entry's means the tenant changed
   * meanwhile: undefined, and the caller reads again at the new version.
   */
  async function listingBodiesOf(entries: readonly IndexEntry[], readSince: number): Promise<ListingBody[] | undefined> {
    const found: Array<ListingBody | undefined> = entries.map((e) => {
      const cached = bodyAt(listingBodies.peek(e.id), e);
      return cached !== undefined && cached.readAt >= readSince ? cached : undefined;
    });
    if (!found.includes(undefined)) return found as ListingBody[];
    // With the rows every other request of this turn misses: the same page asked by many at once is one read.
    const rows = await Promise.all(entries.map((e, i) => (found[i] === undefined ? rowById(e.id) : undefined)));
    for (const [i, entry] of entries.entries()) {
      if (found[i] !== undefined) continue;
      const row = rows[i];
      if (row === undefined || Number(row.change_seq) !== entry.changeSeq) return undefined;
      found[i] = listingBody(row);
    }
    return found as ListingBody[];
  }

  /** Runs `read` on a current index; again at the new version when the tenant changed under it. */
  async function withIndex<T>(tenant: Tenant, read: (index: TenantIndex) => Promise<T | typeof STALE>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const index = await currentIndex(tenant);
      const result = await read(index);
      if (result !== STALE) return result;
      if (attempt >= 5) throw new Error('the listings kept changing under a read; giving up after 5 attempts');
      // Catch up with what changed before reading again (the change is committed, so it is in the log).
      await index.refresh(index.version + 1);
    }
  }

  return {
    findKeyByHash(keyHash) {
      const found = keys.getOrLoad(`${store.changes.authVersion()}\n${keyHash}`, async () => {
        const readAt = clock();
        const record = await store.keys.findByHash(keyHash);
        if (record !== undefined) keyReadAt.set(record, readAt);
        return { value: record ?? null, readAt };
      });
      return found instanceof Promise ? found.then((r) => r ?? undefined) : (found ?? undefined);
    },

    keyValidUntil(record) {
      // Up to the start of its refresh-ahead window, not its expiry: a key recalled by its
      // connection is not looked up, so this lets a look-up in that window read it again in the
      // background, and the connections using it never wait for the database when it expires.
      return refreshAheadAt((keyReadAt.get(record) ?? -Infinity) + ttlMs, ttlMs);
    },

    isOriginAllowed(accountId, country, origin) {
      return origins.getOrLoad(`${store.changes.authVersion()}\n${accountId}\n${country}\n${origin}`, async () => ({
        value: await store.origins.isAllowed(accountId, country, origin),
      }));
    },

    listPage(tenant, page, perPage, view) {
      const version = store.changes.pending() === undefined ? store.changes.tenantVersion(tenant.key) : undefined;
      const key = `${tenant.key}\n${version}\n${page}\n${perPage}\n${view?.key ?? ''}`;
      const load = async () =>
        withIndex(tenant, async (index) => {
          const entries = await viewOf(index, view);
          const slice = entries.slice((page - 1) * perPage, page * perPage);
          // A page is kept for a TTL from its oldest listing's read (the safety TTL bounds what it
          // shows, not only the page): listings read over half a TTL ago are read again, so that
          // it lives at least half a TTL and its refresh-ahead does not fall due at once.
          const items = await listingBodiesOf(slice, clock() - ttlMs / 2);
          if (items === undefined) return STALE;
          // The envelope of spec 2.3, in the order of its schema; items are the cached listings' JSON.
          const parts: Buffer[] = [Buffer.from('{"items":[')];
          for (const [i, item] of items.entries()) {
            if (i > 0) parts.push(COMMA);
            parts.push(item.bytes);
          }
          parts.push(Buffer.from(`],"page":${page},"per_page":${perPage},"total":${entries.length},"pages":${pageCount(entries.length, perPage)}}`));
          const bytes = ownConcat(parts);
          const readAt = items.reduce((oldest, item) => Math.min(oldest, item.readAt), clock());
          return { value: { bytes, etag: etagOf(bytes) }, validUntil: index.validUntil, readAt };
        });
      if (version === undefined) return load().then((r) => r.value);
      return pages.getOrLoad(key, load);
    },

    detail: (tenant, id) => detailOf(tenant, id),

    changes(tenant, cursor, limit) {
      const load = async () => {
        // The index gives the version the answer is computed at, and the soonest expiry: until
        // then, and until a write, the same cursor gets the same answer.
        const index = await currentIndex(tenant);
        const text = await feed.answer(tenant, cursor, limit, index.version);
        return { value: toBody(text), validUntil: index.validUntil };
      };
      const version = store.changes.pending() === undefined ? store.changes.tenantVersion(tenant.key) : undefined;
      if (version === undefined) return load().then((r) => r.value);
      // No cursor and a cursor are different questions, whatever the cursor's text (an empty one is refused).
      return feedAnswers.getOrLoad(`${tenant.key}\n${version}\n${limit}\n${cursor === undefined ? '' : `cursor=${cursor}`}`, load);
    },

    async warm(tenant) {
      return (await currentIndex(tenant)).size;
    },

    stats() {
      let listings = 0;
      for (const index of indexes.values()) listings += index.size;
      const count = (cache: { hits: number; misses: number }) => ({ hits: cache.hits, misses: cache.misses });
      return {
        pages: count(pages),
        details: { hits: counters.detailHits, misses: counters.detailMisses },
        listingRowReads: counters.rowReads,
        keys: count(keys),
        origins: count(origins),
        indexBuilds: counters.indexBuilds,
        indexReplays: counters.indexReplays,
        viewsComputed: counters.viewsComputed,
        refreshedAhead: keys.refreshes + origins.refreshes + listingBodies.refreshes + pages.refreshes + feedAnswers.refreshes,
        tenants: indexes.size,
        listings,
      };
    },
  };

  /** A visible listing's body: synchronous when its index is current and its body cached. */
  function detailOf(tenant: Tenant, id: string): Body | undefined | Promise<Body | undefined> {
    const index = currentIndex(tenant);
    if (index instanceof Promise) return index.then(() => detailOf(tenant, id));
    const entry = index.get(id);
    if (entry === undefined) return undefined;
    const cached = bodyAt(listingBodies.peek(entry.id, refreshAhead), entry);
    if (cached !== undefined) {
      counters.detailHits++;
      return cached;
    }
    counters.detailMisses++;
    return withIndex(tenant, async (current) => {
      const e = current.get(id);
      if (e === undefined) return undefined;
      const row = await rowById(e.id);
      // Gone or changed since the index was read: the tenant changed meanwhile, read again.
      return row === undefined || Number(row.change_seq) !== e.changeSeq ? STALE : listingBody(row);
    });
  }
}

const STALE = Symbol('stale');
