import { LRUCache } from 'lru-cache';
import { yieldToEventLoop } from '../core/event-loop.js';
import { USAGE_NAMES } from '../listings/taxonomy.js';
import type { IndexEntry, TenantIndex } from './tenant-index.js';
import { PRICE_GROUPS } from './tenant-search.js';
import { filterTests, type ListingFilter } from './views.js';

/**
 * D27: the counts a page of filter chips shows, for the listings a filter selects. Each usage
 * type's count leaves out the `usage_type` filter, the featured and takeover counts their own flag
 * (disjunctive counts: a chip shows what choosing it would give); everything else applies every
 * filter. One pass over the tenant's entries, in slices that each hold the event loop a few
 * milliseconds, kept per index generation like the views (exact for it, not a TTL cache).
 */
export interface Facets {
  total: number;
  usage_types: Array<{ name: string; count: number }>;
  featured: { true: number; false: number };
  takeover: { true: number; false: number };
  price: Array<{ currency: string; price_basis: string | null; min: number; max: number; count: number }>;
  size_sqft: { min: number | null; max: number | null; count: number };
}

/** Entries counted between two yields to the event loop. */
const SLICE = 8192;

/** Min, max and count of the values seen. */
class Range {
  min = Infinity;
  max = -Infinity;
  count = 0;
  add(value: number): void {
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
    this.count++;
  }
}

/** The counts of `filter` (none: every listing) over the index's entries. */
export async function facetsOf(index: TenantIndex, filter: ListingFilter | undefined): Promise<Facets> {
  // The entries and what D26-D28 read of them, taken together (tenant-search.ts).
  const { entries, search } = index;
  const test = filterTests(filter ?? NO_FILTER, search);
  const usageCounts = new Array<number>(USAGE_NAMES.length).fill(0);
  const featured = [0, 0];
  const takeover = [0, 0];
  const prices = new Map<number, Range>();
  const sizes = new Range();
  let total = 0;
  const count = (e: IndexEntry) => {
    if (!test.others(e)) return;
    const usage = test.usageOk(e);
    const isFeatured = test.featuredOk(e);
    const isTakeover = test.takeoverOk(e);
    if (isFeatured && isTakeover) for (let bits = e.usage, bit = 0; bits !== 0; bits >>>= 1, bit++) if (bits & 1) usageCounts[bit]!++;
    if (usage && isTakeover) featured[e.featured]!++;
    if (usage && isFeatured) takeover[e.takeover]!++;
    if (!(usage && isFeatured && isTakeover)) return;
    total++;
    if (e.size !== null) sizes.add(e.size);
    if (e.price !== null) {
      const group = search.priceGroups[e.slot]!;
      let range = prices.get(group);
      if (range === undefined) prices.set(group, (range = new Range()));
      range.add(e.price);
    }
  };
  for (let i = 0; i < entries.length; i += SLICE) {
    if (i > 0) await yieldToEventLoop();
    const end = Math.min(entries.length, i + SLICE);
    for (let j = i; j < end; j++) count(entries[j]!);
  }
  return {
    total,
    usage_types: USAGE_NAMES.map((name, bit) => ({ name, count: usageCounts[bit]! })),
    featured: { true: featured[1]!, false: featured[0]! },
    takeover: { true: takeover[1]!, false: takeover[0]! },
    price: [...prices].map(([group, range]) => ({ ...PRICE_GROUPS[group]!, range }))
      .sort((a, b) => compareText(a.currency, b.currency) || compareText(a.priceBasis ?? '\uffff', b.priceBasis ?? '\uffff'))
      .map(({ currency, priceBasis, range }) => ({ currency, price_basis: priceBasis, min: range.min, max: range.max, count: range.count })),
    size_sqft: sizes.count === 0 ? { min: null, max: null, count: 0 } : { min: sizes.min, max: sizes.max, count: sizes.count },
  };
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const NO_FILTER: ListingFilter = {
  usage: 0, minSize: undefined, maxSize: undefined, minPrice: undefined, maxPrice: undefined,
  featured: undefined, takeover: undefined, words: undefined, near: undefined, bbox: undefined,
};

/**
 * Facet answers (their JSON) per index generation and filter, computed once however many
 * requests ask meanwhile (lru-cache's `fetch`), like the views. Bounded by count: an answer is
 * under a kilobyte.
 */
export function createFacetCache(maxAnswers: number) {
  const answers = new LRUCache<string, string, { index: TenantIndex; filter: ListingFilter | undefined }>({
    max: maxAnswers,
    ignoreFetchAbort: true,
    fetchMethod: async (_key, _stale, { context: { index, filter } }) => JSON.stringify(await facetsOf(index, filter)),
  });
  return {
    /** The JSON of the counts of `filter` (`key`: its canonical text) over the index. */
    async of(index: TenantIndex, filter: ListingFilter | undefined, key: string): Promise<string> {
      const cacheKey = `${index.generation}\n${key}`;
      const text = answers.get(cacheKey) ?? (await answers.fetch(cacheKey, { context: { index, filter } }));
      // Only an aborted fetch gives nothing, and ignoreFetchAbort means none is.
      if (text === undefined) throw new Error('the facets were not computed');
      return text;
    },
  };
}
