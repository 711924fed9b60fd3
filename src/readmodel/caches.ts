import { freshness, ReadCache, type Freshness } from '../cache/read-cache.js';
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
 * Every cache of the read path, by name, with its bound and its freshness (cache/read-cache.ts,
 * docs/design/read-caches.md): keyed by the version read at, single-flight, stale (answered while
 * read again in the background) for the last part of READ_CACHE_TTL_MS from its read, never served
 * past it, nor past the soonest expiry it shows.
 */
export function createReadCaches({ clock, ttlMs, maxBodyBytes }: ReadCacheSettings) {
  /** Fresh for the first three quarters of the TTL, stale for the last. */
  const usual = freshness(ttlMs, 3 / 4);
  // Bodies are bounded by their bytes only (each entry costs what it holds, nothing set aside).
  const bodies = <V extends Body>(share: number, rule: Freshness) =>
    new ReadCache<V>({ clock, freshness: rule, maxSize: Math.max(1, Math.floor(maxBodyBytes * share)), sizeOf: (b) => b.bytes.length });
  return {
    /** Key records by hash, under the auth version (D4); a connection recalls its key while fresh (auth/connection-keys.ts). */
    keys: new ReadCache<ApiKeyRecord | null>({ clock, freshness: usual, maxEntries: MAX_AUTH_ENTRIES }),
    /** Origin checks by account, country and origin, under the auth version (D17). */
    origins: new ReadCache<boolean>({ clock, freshness: usual, maxEntries: MAX_AUTH_ENTRIES }),
    /**
     * Serialised listings by id, each for one change: the detail answers, and the parts of pages.
     * Fresh for half the TTL: a page is made of fresh parts only, so that it is served for at
     * least half a TTL and is not stale as soon as it is made.
     */
    listings: bodies<ListingBody>(1 / 2, freshness(ttlMs, 1 / 2)),
    /** Page answers by tenant version, page, size and view (D23). */
    pages: bodies<Body>(1 / 4, usual),
    /** Change-feed answers by tenant version, limit and cursor (D22). */
    feed: bodies<Body>(1 / 4, usual),
  };
}

export type ReadCaches = ReturnType<typeof createReadCaches>;

/** Reads started ahead of an entry's expiry, over every cache. */
export function refreshedAhead(caches: ReadCaches): number {
  return Object.values(caches).reduce((sum, cache) => sum + cache.refreshes, 0);
}
