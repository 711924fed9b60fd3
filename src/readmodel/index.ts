import type { Clock } from '../core/clock.js';
import type { Tenant } from '../core/tenant.js';
import type { Store } from '../storage/index.js';
import { createAuthReads, type AuthReads } from './auth-reads.js';
import { createListingBodies, pageBody, toBody, type Body } from './bodies.js';
import { createReadCaches, refreshedAhead, type ReadCaches } from './caches.js';
import { createColdReads } from './cold-reads.js';
import { createFeed } from './feed.js';
import { createTenantIndexes, INDEX_BYTES_PER_LISTING, STALE, type TenantIndex, type TenantIndexes } from './tenant-index.js';
import { createFacetCache } from './facets.js';
import { createViewCache, type ListingFilter, type View } from './views.js';

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
export type { Body } from './bodies.js';
export { etagOf, pageCount } from './bodies.js';
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
  /** Filtered or sorted views computed (once per view and index generation), and held now. */
  viewsComputed: number;
  viewsHeld: number;
  /** Cached keys, origins, bodies and answers read again ahead of their safety TTL (cache/read-cache.ts). */
  refreshedAhead: number;
  /** Tenants and listings held in memory now, and the indexes' estimated bytes (READ_MODEL_MAX_MB's bound). */
  tenants: number;
  listings: number;
  indexBytes: number;
  /** Tenant indexes dropped to stay within READ_MODEL_MAX_MB. */
  indexEvictions: number;
  /** Pages and details answered from the database while their tenant's index was not built yet. */
  coldReads: number;
}

export { COLD_PAGE_DEPTH } from './cold-reads.js';

export interface ListingReads extends AuthReads {
  /** The page envelope (spec 2.3) of a tenant's listings, filtered and sorted by `view` if given (D23). */
  listPage(tenant: Tenant, page: number, perPage: number, view?: View): Body | Promise<Body>;
  /** D27: the counts of the listings `filter` selects (`key`: its canonical text; none: every listing). */
  facets(tenant: Tenant, filter: ListingFilter | undefined, key: string): Body | Promise<Body>;
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
  /**
   * Resolves once the reads started in the background so far (refreshes ahead of a cache entry's
   * expiry) have landed: for tests that move a clock, and for anything that must not race them.
   */
  settled(): Promise<void>;
}

export interface ReadModelOptions {
  /** READ_CACHE_TTL_MS: safety expiry of cached keys, origins and bodies; 0 turns those caches off. */
  cacheTtlMs: number;
  /** READ_MODEL_MAX_MB in bytes: the bound on the tenant indexes together; least recently read tenants go first (tenant-index.ts). */
  maxIndexBytes: number;
  /** Told of each tenant index built from the database, with what it took (metrics). */
  onIndexBuilt?: (ms: number) => void;
  /**
   * READ_CACHE_MAX_MB in bytes: the bound on all cached bodies together: half for serialised
   * listings (which are also the detail answers), a quarter each for pages and feed answers.
   */
  maxBodyBytes: number;
}

export function createReadModel(store: Store, clock: Clock, options: ReadModelOptions): ListingReads {
  const caches = createReadCaches({ clock, ttlMs: options.cacheTtlMs, maxBodyBytes: options.maxBodyBytes });
  const { pages, feed: feedAnswers } = caches;
  const auth = createAuthReads(store, clock, caches);
  const listingBodies = createListingBodies(store, clock, caches.listings);
  // Views hold entries of the indexes (a reference each), bounded by as many as the indexes may hold.
  const views = createViewCache(Math.max(1, Math.floor(options.maxIndexBytes / INDEX_BYTES_PER_LISTING)));
  const indexes = createTenantIndexes(store, clock, {
    maxBytes: options.maxIndexBytes,
    onBuilt: options.onIndexBuilt,
    onEvicted: (index) => views.forget(index),
  });
  const facetAnswers = createFacetCache(10_000);
  const details = { hits: 0, misses: 0 };
  const cold = createColdReads(store, clock, indexes, listingBodies);
  // The feed reads its listings' rows itself, and its answers are cached whole.
  const feed = createFeed(store, clock, (row) => row.body);

  /** The tenant's version when this process knows it at once; undefined when it cannot be sure (then nothing is cached). */
  const settledVersion = (tenant: Tenant): number | undefined => store.changes.knownVersion(tenant);

  /** A visible listing's body: synchronous when its index is current and its body cached. */
  function detailOf(tenant: Tenant, id: string): Body | undefined | Promise<Body | undefined> {
    if (!indexes.built(tenant)) return cold.detail(tenant, id);
    const index = indexes.current(tenant);
    return index instanceof Promise ? index.then((ready) => detailIn(ready, tenant, id)) : detailIn(index, tenant, id);
  }

  function detailIn(index: TenantIndex, tenant: Tenant, id: string): Body | undefined | Promise<Body | undefined> {
    const entry = index.get(id);
    if (entry === undefined) return undefined;
    const cached = listingBodies.cached(entry);
    if (cached !== undefined) {
      details.hits++;
      return cached;
    }
    details.misses++;
    return indexes.withIndex(tenant, async (current) => {
      const e = current.get(id);
      if (e === undefined) return undefined;
      // Gone or changed since the index was read: the tenant changed meanwhile, read again.
      return (await listingBodies.read(e)) ?? STALE;
    });
  }

  return {
    ...auth,

    listPage(tenant, page, perPage, view) {
      const version = settledVersion(tenant);
      const fromIndex = () =>
        indexes.withIndex(tenant, async (index) => {
          const entries = await views.of(index, view);
          const slice = entries.slice((page - 1) * perPage, page * perPage);
          // A page is fresh and served by its oldest listing's read (the bound is on what it shows,
          // not only on the page), and is made of fresh listings only (caches.ts).
          const items = await listingBodies.of(slice);
          if (items === undefined) return STALE;
          const readAt = items.reduce((oldest, item) => Math.min(oldest, item.readAt), clock());
          return { value: pageBody(items, page, perPage, entries.length), validUntil: index.validUntil, readAt };
        });
      const load = async () => (cold.takesPage(tenant, page, perPage, view !== undefined) ? await cold.page(tenant, page, perPage) : undefined) ?? fromIndex();
      if (version === undefined) return load().then((r) => r.value);
      return pages.getOrLoad(`${tenant.key}\n${version}\n${page}\n${perPage}\n${view?.key ?? ''}`, load);
    },

    facets(tenant, filter, key) {
      const version = settledVersion(tenant);
      const load = async () =>
        indexes.withIndex(tenant, async (index) => ({ value: toBody(await facetAnswers.of(index, filter, key)), validUntil: index.validUntil }));
      if (version === undefined) return load().then((r) => r.value);
      // In the pages' cache under a key no page has (a page's third line is its number).
      return pages.getOrLoad(`${tenant.key}\n${version}\nfacets\n${key}`, load);
    },

    detail: (tenant, id) => detailOf(tenant, id),

    changes(tenant, cursor, limit) {
      const load = async () => {
        // The index gives the version the answer is computed at, and the soonest expiry: until
        // then, and until a write, the same cursor gets the same answer.
        const index = await indexes.current(tenant);
        const text = await feed.answer(tenant, cursor, limit, index.version);
        return { value: toBody(text), validUntil: index.validUntil };
      };
      const version = settledVersion(tenant);
      if (version === undefined) return load().then((r) => r.value);
      // No cursor and a cursor are different questions, whatever the cursor's text (an empty one is refused).
      return feedAnswers.getOrLoad(`${tenant.key}\n${version}\n${limit}\n${cursor === undefined ? '' : `cursor=${cursor}`}`, load);
    },

    async warm(tenant) {
      return (await indexes.current(tenant)).size;
    },


    async settled() {
      await Promise.all([listingBodies.settled(), ...Object.values(caches).map((cache) => cache.settled())]);
    },
    stats: () => readStats(caches, indexes, details, listingBodies, views, cold),
  };
}

/** The read path's counters now, gathered from the caches and indexes that keep them. */
function readStats(
  caches: ReadCaches,
  indexes: TenantIndexes,
  details: { hits: number; misses: number },
  listingBodies: { readonly rowReads: number },
  views: { readonly computed: number; readonly held: number },
  cold: { readonly reads: number },
): ReadStats {
  const count = (cache: { hits: number; misses: number }) => ({ hits: cache.hits, misses: cache.misses });
  const { keys, origins, pages } = caches;
  return {
    pages: count(pages),
    details: count(details),
    listingRowReads: listingBodies.rowReads,
    keys: count(keys),
    origins: count(origins),
    indexBuilds: indexes.builds,
    indexReplays: indexes.replays,
    viewsComputed: views.computed,
    viewsHeld: views.held,
    refreshedAhead: refreshedAhead(caches),
    tenants: indexes.tenants,
    listings: indexes.listings(),
    indexBytes: indexes.bytes(),
    indexEvictions: indexes.evictions,
    coldReads: cold.reads,
  };
}
