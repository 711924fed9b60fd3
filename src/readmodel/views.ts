import { yieldToEventLoop } from '../core/event-loop.js';
import { LRUCache } from 'lru-cache';
import type { IndexEntry, TenantIndex } from './tenant-index.js';
import type { TenantSearch } from './tenant-search.js';

/**
 * Filtered and sorted views of a tenant's index (D23). A view is computed once per version of the
 * index and kept, so every page of it is a slice; computing it walks the tenant once, in slices
 * that each hold the event loop a few milliseconds (a sort of 100,000 listings in one go would
 * hold it for tens), so other requests keep being answered meanwhile.
 */

/** What a key's list is filtered by (D23, D26, D28); absent bounds, flags, words and places do not filter. */
export interface ListingFilter {
  /** Bits of the taxonomy names asked for (listings/taxonomy.ts usageMask); 0: any usage. */
  usage: number;
  minSize: number | undefined;
  maxSize: number | undefined;
  minPrice: number | undefined;
  maxPrice: number | undefined;
  featured: boolean | undefined;
  takeover: boolean | undefined;
  /** D26: the words of `q` in compared form (listings/search-words.ts), each the start of a listing's word. */
  words: readonly string[] | undefined;
  /** D28: within `radiusM` metres of a point (inclusive). */
  near: Near | undefined;
  /** D28: inside a box (inclusive; `minLng` above `maxLng` crosses the antimeridian). */
  bbox: Box | undefined;
}

export interface Near {
  lat: number;
  lng: number;
  radiusM: number;
}

export interface Box {
  minLng: number;
  minLat: number;
  maxLng: number;
  maxLat: number;
}

export const SORT_KEYS = ['price', '-price', 'size_sqft', '-size_sqft', 'created_at', '-created_at', 'distance'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/** A view of a tenant's listings: a filter, a sort, or both; `key` is their canonical text. */
export interface View {
  filter: ListingFilter | undefined;
  sort: SortKey | undefined;
  key: string;
}

/** D28: the sphere great-circle distances are measured on, in metres. */
export const EARTH_RADIUS_M = 6_371_008.8;
const RADIANS = Math.PI / 180;

/** D28: the great-circle distance in metres between two points (haversine). */
export function distanceM(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const dLat = (lat2 - lat1) * RADIANS;
  const dLng = (lng2 - lng1) * RADIANS;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RADIANS) * Math.cos(lat2 * RADIANS) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * D28 `near`: whether a slot's point is within the radius. A box around the circle (exact bounds
 * of latitude and, away from the poles, of longitude, widened by a hair for rounding) turns most
 * points away with two comparisons; the distance decides the rest.
 */
function nearTest({ lat, lng, radiusM }: Near, coords: Float64Array): (slot: number) => boolean {
  const angle = radiusM / EARTH_RADIUS_M;
  const latReach = angle / RADIANS + 1e-9;
  const reachesPole = Math.abs(lat) + latReach >= 90;
  const lngReach = reachesPole ? 360 : Math.asin(Math.min(1, Math.sin(angle) / Math.cos(lat * RADIANS))) / RADIANS + 1e-9;
  return (slot) => {
    const pLat = coords[slot * 2]!;
    if (!(Math.abs(pLat - lat) <= latReach)) return false; // NaN (no location) is turned away here too
    const pLng = coords[slot * 2 + 1]!;
    const apart = Math.abs(pLng - lng);
    if (Math.min(apart, 360 - apart) > lngReach) return false;
    return distanceM(lat, lng, pLat, pLng) <= radiusM;
  };
}

/** D28 `bbox`, inclusive; across the antimeridian when minLng is above maxLng. */
function boxTest({ minLng, minLat, maxLng, maxLat }: Box, coords: Float64Array): (slot: number) => boolean {
  const crosses = minLng > maxLng;
  return (slot) => {
    const lat = coords[slot * 2]!;
    const lng = coords[slot * 2 + 1]!;
    return lat >= minLat && lat <= maxLat && (crosses ? lng >= minLng || lng <= maxLng : lng >= minLng && lng <= maxLng);
  };
}

/**
 * A filter's tests of an entry, read against `search` (the one taken with the entries): `others`
 * is every test but the usage, featured and takeover ones, which D27's counts each leave out in
 * turn; `all` is all of them (D23: every given bound and flag holds; a listing whose field is
 * null matches no bound on it, and one without a location no place).
 */
export function filterTests(filter: ListingFilter, search: TenantSearch) {
  const { usage, minSize, maxSize, minPrice, maxPrice, featured, takeover, words, near, bbox } = filter;
  const marks = words === undefined ? undefined : search.markWords(words);
  const wordCount = words?.length ?? 0;
  const place = near !== undefined ? nearTest(near, search.coords) : bbox !== undefined ? boxTest(bbox, search.coords) : undefined;
  const others = (e: IndexEntry) =>
    (minSize === undefined || (e.size !== null && e.size >= minSize)) &&
    (maxSize === undefined || (e.size !== null && e.size <= maxSize)) &&
    (minPrice === undefined || (e.price !== null && e.price >= minPrice)) &&
    (maxPrice === undefined || (e.price !== null && e.price <= maxPrice)) &&
    (marks === undefined || marks[e.slot] === wordCount) &&
    (place === undefined || place(e.slot));
  const usageOk = (e: IndexEntry) => usage === 0 || (e.usage & usage) !== 0;
  const featuredOk = (e: IndexEntry) => featured === undefined || e.featured === (featured ? 1 : 0);
  const takeoverOk = (e: IndexEntry) => takeover === undefined || e.takeover === (takeover ? 1 : 0);
  return { others, usageOk, featuredOk, takeoverOk, all: (e: IndexEntry) => others(e) && usageOk(e) && featuredOk(e) && takeoverOk(e) };
}

const byId = (a: IndexEntry, b: IndexEntry) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Nulls last in both directions, then id ascending (D23); featured listings are not put first. */
function byNumber(field: 'price' | 'size', descending: boolean) {
  return (a: IndexEntry, b: IndexEntry): number => {
    const x = a[field];
    const y = b[field];
    if (x === null || y === null) return x === y ? byId(a, b) : x === null ? 1 : -1;
    if (x !== y) return descending ? y - x : x - y;
    return byId(a, b);
  };
}

function byCreated(descending: boolean) {
  return (a: IndexEntry, b: IndexEntry): number => {
    if (a.createdAt !== b.createdAt) return (a.createdAt < b.createdAt ? -1 : 1) * (descending ? -1 : 1);
    return byId(a, b);
  };
}

export const SORTS: Readonly<Record<Exclude<SortKey, 'distance'>, (a: IndexEntry, b: IndexEntry) => number>> = {
  price: byNumber('price', false),
  '-price': byNumber('price', true),
  size_sqft: byNumber('size', false),
  '-size_sqft': byNumber('size', true),
  created_at: byCreated(false),
  '-created_at': byCreated(true),
};

/** Elements handled between two yields to the event loop. */
const SLICE = 8192;

/** `items.filter(keep)`, in slices. */
export async function filterInSlices<T>(items: readonly T[], keep: (item: T) => boolean): Promise<T[]> {
  const kept: T[] = [];
  for (let i = 0; i < items.length; i += SLICE) {
    if (i > 0) await yieldToEventLoop();
    const end = Math.min(items.length, i + SLICE);
    for (let j = i; j < end; j++) if (keep(items[j]!)) kept.push(items[j]!);
  }
  return kept;
}

/**
 * A stable sort in slices: runs of SLICE elements sorted one at a time, then merged pairwise, each
 * merge yielding every SLICE elements. The same result as `[...items].sort(compare)`, for a total
 * order; O(n log n) work, a few milliseconds at a time.
 */
export async function sortInSlices<T>(items: readonly T[], compare: (a: T, b: T) => number): Promise<T[]> {
  let runs: T[][] = [];
  for (let i = 0; i < items.length; i += SLICE) {
    if (i > 0) await yieldToEventLoop();
    runs.push(items.slice(i, i + SLICE).sort(compare));
  }
  while (runs.length > 1) {
    const merged: T[][] = [];
    for (let r = 0; r < runs.length; r += 2) merged.push(r + 1 < runs.length ? await merge(runs[r]!, runs[r + 1]!, compare) : runs[r]!);
    runs = merged;
  }
  return runs[0] ?? [];
}

async function merge<T>(a: T[], b: T[], compare: (x: T, y: T) => number): Promise<T[]> {
  const out = new Array<T>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    out[k++] = compare(b[j]!, a[i]!) < 0 ? b[j++]! : a[i++]!;
    if (k % SLICE === 0) await yieldToEventLoop();
  }
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}

/** D28 `sort=distance`: nearest first, then by id. */
async function byDistance(entries: readonly IndexEntry[], { lat, lng }: Near, coords: Float64Array): Promise<IndexEntry[]> {
  const measured = entries.map((entry) => ({ entry, metres: distanceM(lat, lng, coords[entry.slot * 2]!, coords[entry.slot * 2 + 1]!) }));
  const sorted = await sortInSlices(measured, (a, b) => a.metres - b.metres || byId(a.entry, b.entry));
  return sorted.map((m) => m.entry);
}

/**
 * The views of every tenant's indexes, computed once per view and index generation (exact for
 * it: not a TTL cache) and bounded by the entries they hold. lru-cache's `fetch` computes each
 * once however many requests ask for it meanwhile.
 */
export function createViewCache(maxEntries: number) {
  let computed = 0;
  const views = new LRUCache<string, readonly IndexEntry[], { index: TenantIndex; view: View }>({
    maxSize: maxEntries,
    sizeCalculation: (entries) => Math.max(1, entries.length),
    // A view pushed out while it is computed is still given to the requests waiting for it.
    ignoreFetchAbort: true,
    fetchMethod: async (_key, _stale, { context: { index, view } }) => {
      computed++;
      // The entries and what D26-D28 read of them, taken together (tenant-search.ts).
      const { entries: all, search } = index;
      let entries = all;
      if (view.filter !== undefined) entries = await filterInSlices(entries, filterTests(view.filter, search).all);
      if (view.sort === 'distance') entries = await byDistance(entries, view.filter!.near!, search.coords);
      else if (view.sort !== undefined) entries = await sortInSlices(entries, SORTS[view.sort]);
      return entries;
    },
  });
  return {
    get computed() {
      return computed;
    },
    /** Views held now. */
    get held() {
      return views.size;
    },
    /**
     * Drops every view of the tenant's index (it was evicted): they hold its entries, which
     * would otherwise stay in memory beside the index built next. A scan of the views, once per
     * eviction, which is followed by a build of the whole tenant anyway.
     */
    forget(index: TenantIndex): void {
      const prefix = `${index.ownerAccountId}\n${index.country}\n`;
      for (const key of [...views.keys()].filter((k) => k.startsWith(prefix))) views.delete(key);
    },
    /** The entries of a view of the index (its own entries without a view): synchronous once computed. */
    of(index: TenantIndex, view: View | undefined): readonly IndexEntry[] | Promise<readonly IndexEntry[]> {
      if (view === undefined || view.key === '') return index.entries;
      const key = `${index.ownerAccountId}\n${index.country}\n${index.generation}\n${view.key}`;
      return views.get(key) ?? views.fetch(key, { context: { index, view } }).then((entries) => {
        // Only an aborted fetch gives nothing, and ignoreFetchAbort means none is.
        if (entries === undefined) throw new Error(`the view ${view.key} was not computed`);
        return entries;
      });
    },
  };
}
