import { ReadCache } from '../cache/read-cache.js';
import type { Clock } from '../core/clock.js';
import type { ApiKeyRecord } from '../storage/index.js';
import type { Body, ListingBody } from './bodies.js';

/** Keys and origin checks are small entries, bounded by count; an unknown key is cached too. */
const MAX_AUTH_ENTRIES = 50_000;

export interface ReadCacheSettings {
  clock: Clock;
  /** READ_CACHE_TTL_MS: the safety expiry of every entry; 0 turns every cache off. */
  ttlMs: number;
  /** READ_CACHE_MAX_MB in bytes: shared by the caches of bodies, by the shares below. */
  maxBodyBytes: number;
}

/**
 * Every cache of the read path, by name, with its bound: one place to see what is cached and how
 * much memory it may take. They share one freshness rule (cache/read-cache.ts and
 * docs/design/read-caches.md): keyed by the version read at, single-flight, refreshed in the last
 * quarter of READ_CACHE_TTL_MS, never served past it, nor past the soonest expiry they show.
 */
export function createReadCaches({ clock, ttlMs, maxBodyBytes }: ReadCacheSettings) {
  // Bodies are bounded by their bytes only (each entry costs what it holds, nothing set aside).
  const bodies = <V extends Body>(share: number) =>
    new ReadCache<V>({ clock, ttlMs, maxSize: Math.max(1, Math.floor(maxBodyBytes * share)), sizeOf: (b) => b.bytes.length });
  return {
    /** Key records by hash, under the auth version (D4). */
    keys: new ReadCache<ApiKeyRecord | null>({ clock, ttlMs, maxEntries: MAX_AUTH_ENTRIES }),
    /** Origin checks by account, country and origin, under the auth version (D17). */
    origins: new ReadCache<boolean>({ clock, ttlMs, maxEntries: MAX_AUTH_ENTRIES }),
    /** Serialised listings by id, each for one change: the parts of pages and the detail answers. */
    listings: bodies<ListingBody>(1 / 2),
    /** Page answers by tenant version, page, size and view (D23). */
    pages: bodies<Body>(1 / 4),
    /** Change-feed answers by tenant version, limit and cursor (D22). */
    feed: bodies<Body>(1 / 4),
  };
}

export type ReadCaches = ReturnType<typeof createReadCaches>;

/** Reads started ahead of an entry's expiry, over every cache. */
export function refreshedAhead(caches: ReadCaches): number {
  return Object.values(caches).reduce((sum, cache) => sum + cache.refreshes, 0);
}
