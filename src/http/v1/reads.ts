import { VersionedCache } from '../../cache/versioned-cache.js';
import type { Clock } from '../../core/clock.js';
import type { Country } from '../../core/countries.js';
import type { ApiKeyRecord, Store, Visibility } from '../../storage/index.js';
import { toListing, type Listing } from '../../listings/listing.js';
import { pageCount } from './params.js';

/** The reads of the request path, as the handlers need them: keys, origins, and response bodies. */
export interface ListingReads {
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  isOriginAllowed(accountId: string, country: Country, origin: string): Promise<boolean>;
  /** The serialised page envelope (spec 2.3), as the UTF-8 bytes to send. */
  listBody(v: Visibility, page: number, perPage: number, serialize: (page: PageEnvelope) => string): Promise<Buffer>;
  /** The serialised listing, or undefined when the key cannot see it (D11). */
  detailBody(id: string, v: Visibility, serialize: (listing: Listing) => string): Promise<Buffer | undefined>;
}

export interface PageEnvelope {
  items: Listing[];
  page: number;
  per_page: number;
  total: number;
  pages: number;
}

export interface ReadCacheOptions {
  /** Safety expiry of every cached read (ms); 0 disables caching. */
  ttlMs: number;
}

/**
 * The store's reads behind caches that are exact (see VersionedCache): any write, here or (SQLite)
 * in another process, drops them before the next read, so a revoked key or a removed origin is
 * refused at once (D4). Response bodies are cached serialised and encoded (a page of 100 is
 * 100 KB: encoding it once, not per response, matters); each is valid until the next
 * moment its visibility can change by time alone (the soonest expiry among what it shows, D10).
 */
export function createReads(store: Store, clock: Clock, options: ReadCacheOptions): ListingReads {
  const version = () => store.changeVersion();
  const ttlMs = options.ttlMs;
  if (ttlMs <= 0) return uncachedReads(store);
  const keys = new VersionedCache<ApiKeyRecord | null>({ version, clock, ttlMs, maxEntries: 10_000 });
  const origins = new VersionedCache<boolean>({ version, clock, ttlMs, maxEntries: 10_000 });
  const bodies = new VersionedCache<Buffer>({ version, clock, ttlMs, maxEntries: 20_000, maxSize: 64 * 1024 * 1024, sizeOf: (b) => b.length });

  return {
    async findKeyByHash(keyHash) {
      const hit = keys.get(keyHash);
      if (hit !== undefined) return hit ?? undefined;
      const at = keys.version();
      const record = await store.keys.findByHash(keyHash);
      keys.set(keyHash, record ?? null, at);
      return record;
    },
    async isOriginAllowed(accountId, country, origin) {
      const cacheKey = `${accountId}\n${country}\n${origin}`;
      const hit = origins.get(cacheKey);
      if (hit !== undefined) return hit;
      const at = origins.version();
      const allowed = await store.origins.isAllowed(accountId, country, origin);
      origins.set(cacheKey, allowed, at);
      return allowed;
    },
    async listBody(v, page, perPage, serialize) {
      const cacheKey = `L\n${v.ownerAccountId}\n${v.country}\n${page}\n${perPage}`;
      const hit = bodies.get(cacheKey);
      if (hit !== undefined) return hit;
      const at = bodies.version();
      const { body, validUntil } = await readPage(store, v, page, perPage, serialize);
      bodies.set(cacheKey, body, at, validUntil);
      return body;
    },
    async detailBody(id, v, serialize) {
      const cacheKey = `D\n${v.ownerAccountId}\n${v.country}\n${id}`;
      const hit = bodies.get(cacheKey);
      if (hit !== undefined) return hit;
      const at = bodies.version();
      const row = await store.listings.findVisible(id, v);
      if (row === undefined) return undefined;
      const body = Buffer.from(serialize(toListing(row)));
      bodies.set(cacheKey, body, at, row.expiry_date === null ? Infinity : Date.parse(row.expiry_date));
      return body;
    },
  };
}

async function readPage(store: Store, v: Visibility, page: number, perPage: number, serialize: (page: PageEnvelope) => string) {
  const [summary, rows] = await Promise.all([store.listings.summary(v), store.listings.page(v, perPage, (page - 1) * perPage)]);
  // D7: a page beyond the last is an empty page with the true total and pages.
  const body = Buffer.from(serialize({ items: rows.map(toListing), page, per_page: perPage, total: summary.total, pages: pageCount(summary.total, perPage) }));
  return { body, validUntil: summary.nextExpiry === null ? Infinity : Date.parse(summary.nextExpiry) };
}

/** Straight to the store: with caching disabled (READ_CACHE_TTL_MS=0). */
function uncachedReads(store: Store): ListingReads {
  return {
    findKeyByHash: (keyHash) => store.keys.findByHash(keyHash),
    isOriginAllowed: (accountId, country, origin) => store.origins.isAllowed(accountId, country, origin),
    listBody: async (v, page, perPage, serialize) => (await readPage(store, v, page, perPage, serialize)).body,
    async detailBody(id, v, serialize) {
      const row = await store.listings.findVisible(id, v);
      return row === undefined ? undefined : Buffer.from(serialize(toListing(row)));
    },
  };
}
