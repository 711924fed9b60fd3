import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { yieldToEventLoop } from '../core/event-loop.js';
import type { Tenant } from '../core/tenant.js';
import { usageMask } from '../listings/taxonomy.js';
import { TenantSearch } from './tenant-search.js';
import { compareD9, isVisibleRow, type IndexRow, type IndexRowWithPlace, type OrderPosition, type Store } from '../storage/index.js';

/**
 * What one key sees (D1): the active listings of one (account, country), in memory, in the D9
 * order (featured first, newest first, id as the tie-break), with what filters and sorts need. A
 * page is a slice of it, a total its length, a detail a map look-up: a read costs the page, not
 * the tenant. It is built once per process, in chunks that each hold the event loop a few
 * milliseconds, then kept exact by replaying the tenant's change log (storage/changes.ts): a write
 * costs the listings it changed. Expiry (D10) needs no write: entries whose expiry has passed are
 * dropped as the clock passes the soonest of them.
 */
export interface IndexEntry {
  id: string;
  /** The write that last changed the listing: with the id, the key of its serialised form. */
  changeSeq: number;
  featured: number;
  createdAt: string;
  /** Clock ms at which it stops being visible; Infinity when it has no expiry. */
  expiresAt: number;
  price: number | null;
  size: number | null;
  usage: number;
  takeover: number;
  /** Its place in the index's TenantSearch: location, price group and words (D26-D28). */
  slot: number;
}

/**
 * Rows read per query while building. SQLite's driver is synchronous, so each query holds the
 * event loop while it runs: from the covering index (migration 008), 500 rows took about 1 ms on a
 * fast 2-core machine and 4 ms on a slow one, 250 rows about 2 ms on the slow one (a 100,000
 * tenant there: 400 queries, 0.7-0.9 s in all, the same total as with 500).
 */
export const BUILD_CHUNK = 250;
/** Past this many changes since the index's version, building it again is cheaper than replaying. */
export const REPLAY_LIMIT = 5000;
/**
 * Up to this many changed listings, a replay copies the entries and moves each changed one by
 * binary search (a copy and a few memmoves: about a millisecond at 100,000 entries); past it, one
 * merge pass over the whole tenant.
 */
export const SPLICE_LIMIT = 64;
/** Changed listings a replay reads per query (a seek each: about 2 ms). */
export const REPLAY_READ_CHUNK = 100;
/** Entries a merge passes over per turn of the event loop (about 2 ms). */
export const MERGE_SLICE = 10_000;

/** The entry of a row, its location, price group and words given a slot in `search`. */
export function toEntry(row: IndexRow, search: TenantSearch): IndexEntry {
  return {
    id: row.id,
    changeSeq: Number(row.change_seq),
    featured: Number(row.is_featured),
    createdAt: row.created_at,
    expiresAt: row.expiry_date === null ? Infinity : Date.parse(row.expiry_date),
    price: row.price,
    size: row.size_sqft,
    usage: usageMask(JSON.parse(row.usage_types) as string[]),
    takeover: Number(row.is_takeover),
    slot: search.add(row.location, row.currency, row.price_basis, row.search_words),
  };
}

/** The next index generation (TenantIndex.generation): one sequence for every index. */
let nextGeneration = 1;

export class TenantIndex {
  /** The tenant version this reflects (at least); -1 before it was built. */
  version = -1;
  /**
   * Moves whenever `entries` is replaced (a write replayed, an expiry passed): views are kept per
   * generation. Unique among every index of the process, not only this one's: a tenant's index
   * evicted and built again must not find the views of the one it replaces.
   */
  generation = 0;
  /** Visible listings in D9 order. Replaced, never mutated, so a reader holding it keeps a consistent view. */
  entries: readonly IndexEntry[] = [];
  /**
   * What D26-D28 read of the entries, by their slots. Replaced with `entries` by a build; a
   * replay adds to it. Read together with `entries`, in one synchronous block.
   */
  search = new TenantSearch();
  private byId = new Map<string, IndexEntry>();
  /** Entries read so far by a build under way (beside the current ones, which readers keep using). */
  private building = 0;
  /** The soonest expiry among the entries. */
  private nextExpiry = Infinity;
  private updating: Promise<void> | undefined;

  constructor(
    readonly ownerAccountId: string,
    readonly country: string,
    private readonly store: Store,
    private readonly clock: Clock,
    /**
     * Told of each build (with what it took, in ms) and each replay once installed (the read
     * path's counters, and the bound's sizes), and of each chunk a build has read ('progress').
     */
    private readonly onUpdate: (kind: 'build' | 'replay' | 'progress', ms?: number) => void = () => {},
  ) {}

  get size(): number {
    return this.entries.length;
  }

  /** The entries this index holds in memory: its own, and those a build under way has read so far. */
  get heldEntries(): number {
    return this.entries.length + this.building;
  }

  /** The soonest moment what this index shows changes by time alone (D10). */
  get validUntil(): number {
    return this.nextExpiry;
  }

  /** The visible entry of an id, or undefined. */
  get(id: string): IndexEntry | undefined {
    const entry = this.byId.get(id);
    return entry !== undefined && entry.expiresAt > this.clock() ? entry : undefined;
  }

  /**
   * Brings the index up to `target` (the tenant's current version) and to the present moment.
   * Synchronous when nothing changed (the common case): undefined; otherwise a promise shared by
   * every reader of this tenant meanwhile.
   */
  refresh(target: number): Promise<void> | undefined {
    if (this.updating !== undefined) return this.updating;
    if (this.version >= target) {
      if (this.clock() >= this.nextExpiry) this.dropExpired();
      return undefined;
    }
    // A search structure worn by many changes is made anew by a build (TenantSearch.worn).
    this.updating = (this.version < 0 || this.search.worn ? this.build(target) : this.replay(target)).finally(() => {
      this.updating = undefined;
    });
    return this.updating;
  }

  /** Reads the tenant's visible listings, in order, chunk by chunk, yielding between chunks. */
  private async build(target: number): Promise<void> {
    const started = performance.now();
    const now = new Date(this.clock()).toISOString();
    const entries: IndexEntry[] = [];
    const byId = new Map<string, IndexEntry>();
    const search = new TenantSearch();
    let after: OrderPosition | undefined;
    try {
      for (;;) {
        const rows = await this.store.listings.orderedChunk(this.ownerAccountId, this.country, now, after, BUILD_CHUNK);
        for (const row of rows) {
          // A listing that moved while the build ran may come twice; the change log puts it right.
          if (byId.has(row.id)) continue;
          const entry = toEntry(row, search);
          entries.push(entry);
          byId.set(entry.id, entry);
        }
        if (rows.length < BUILD_CHUNK) break;
        const last = rows.at(-1)!;
        after = { isFeatured: Number(last.is_featured), createdAt: last.created_at, id: last.id };
        // The bound sees a build grow chunk by chunk, not only once it is whole: a tenant of
        // 300,000 listings is about 120 MB, and counted only at the end it came on top of a full
        // bound (a process whose heap was twice READ_MODEL_MAX_MB ran out of memory).
        this.building = entries.length;
        this.onUpdate('progress');
        await yieldToEventLoop();
      }
    } finally {
      this.building = 0;
    }
    search.finishBuild();
    this.search = search;
    this.install(entries, byId, target);
    this.onUpdate('build', performance.now() - started);
  }

  /**
   * Applies the changes after this index's version: the listings they touched are read again and
   * put where they now belong (or dropped). Many changes, or a history pruned past this version:
   * built again instead.
   */
  private async replay(target: number): Promise<void> {
    const changes = await this.store.listings.changedSince(this.ownerAccountId, this.country, this.version, REPLAY_LIMIT);
    if (changes === 'pruned' || !changes.complete) return this.build(target);
    // The changed listings, on SQLite REPLAY_READ_CHUNK at a time with a turn of the event loop
    // between reads: each is a seek by id, and 1,000 of them read at once held the loop about
    // 30 ms. PostgreSQL's driver does not hold the loop while a query runs: one read there.
    const chunk = this.store.dialect === 'sqlite' ? REPLAY_READ_CHUNK : changes.ids.length;
    const rows: IndexRowWithPlace[] = [];
    for (let i = 0; i < changes.ids.length; i += chunk) {
      if (i > 0) await yieldToEventLoop();
      rows.push(...(await this.store.listings.indexRows(changes.ids.slice(i, i + chunk))));
    }
    const nowIso = new Date(this.clock()).toISOString();
    const touched = new Set(changes.ids);
    const fresh: IndexEntry[] = [];
    for (const row of rows) {
      if (isVisibleRow(row, this, nowIso)) fresh.push(toEntry(row, this.search));
    }
    fresh.sort(compareD9);
    // The map is updated in place (what changed, not the whole tenant) in the same synchronous
    // block as install(), so no reader sees half of it; the array is a new one, as readers may
    // hold the current one.
    const byId = this.byId;
    const entries = changes.ids.length <= SPLICE_LIMIT ? spliced(this.entries, touched, fresh, byId) : await merged(this.entries, touched, fresh);
    for (const id of touched) if (byId.delete(id)) this.search.retire();
    for (const entry of fresh) byId.set(entry.id, entry);
    // A bound, not a scan: entries that left may have held the soonest expiry, in which case
    // dropExpired() finds nothing to drop at that moment and computes the exact one.
    this.install(entries, byId, Math.max(target, changes.lastSeq), Math.min(this.nextExpiry, soonestExpiry(fresh)));
    this.onUpdate('replay');
  }

  private install(entries: IndexEntry[], byId: Map<string, IndexEntry>, version: number, nextExpiry = soonestExpiry(entries)): void {
    this.generation = nextGeneration++;
    this.entries = entries;
    this.byId = byId;
    this.version = version;
    this.nextExpiry = nextExpiry;
    if (this.clock() >= this.nextExpiry) this.dropExpired();
  }

  /** D10, exact to the millisecond: what has expired by now leaves the index. */
  private dropExpired(): void {
    const now = this.clock();
    const kept: IndexEntry[] = [];
    for (const entry of this.entries) {
      if (entry.expiresAt > now) kept.push(entry);
      else if (this.byId.delete(entry.id)) this.search.retire();
    }
    this.generation = nextGeneration++;
    this.entries = kept;
    this.nextExpiry = soonestExpiry(kept);
  }
}

/** Where `entry` is, or would go, in `entries` (D9 order): the first position not before it. */
function positionOf(entries: readonly IndexEntry[], entry: IndexEntry): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareD9(entries[mid]!, entry) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A few changes: a copy of `entries` without the touched ones' old entries, with the fresh ones placed. */
function spliced(
  entries: readonly IndexEntry[],
  touched: ReadonlySet<string>,
  fresh: readonly IndexEntry[],
  byId: ReadonlyMap<string, IndexEntry>,
): IndexEntry[] {
  const result = entries.slice();
  for (const id of touched) {
    const old = byId.get(id);
    if (old === undefined) continue;
    const at = positionOf(result, old);
    if (result[at] === old) result.splice(at, 1);
  }
  for (const entry of fresh) result.splice(positionOf(result, entry), 0, entry);
  return result;
}

/**
 * Many changes: one pass; the untouched entries keep their order, the fresh ones go where D9 puts
 * them. MERGE_SLICE entries per turn of the event loop: the pass over 100,000 took 10-17 ms.
 * Readers keep using the current entries meanwhile (this builds a new array). Exported for its test.
 */
export async function merged(entries: readonly IndexEntry[], touched: ReadonlySet<string>, fresh: readonly IndexEntry[]): Promise<IndexEntry[]> {
  const result: IndexEntry[] = [];
  let i = 0;
  for (let at = 0; at < entries.length; at++) {
    if (at > 0 && at % MERGE_SLICE === 0) await yieldToEventLoop();
    const entry = entries[at]!;
    if (touched.has(entry.id)) continue;
    while (i < fresh.length && compareD9(fresh[i]!, entry) < 0) result.push(fresh[i++]!);
    result.push(entry);
  }
  while (i < fresh.length) result.push(fresh[i++]!);
  return result;
}

function soonestExpiry(entries: readonly IndexEntry[]): number {
  let soonest = Infinity;
  for (const entry of entries) if (entry.expiresAt < soonest) soonest = entry.expiresAt;
  return soonest;
}

/** What a read on an index answers when the tenant changed under it: it is read again, at the new version. */
export const STALE = Symbol('stale');

/**
 * What an index is taken to hold in memory per listing, for READ_MODEL_MAX_MB: the memory per
 * listing measured with every index built (BENCH_MODE=memory at 1,000,000 listings: 329 bytes of
 * V8 heap, 373 of RSS with the search structure's typed arrays, which live outside the heap),
 * rounded up. An estimate, not a measure: the bound is on the sum of these.
 */
export const INDEX_BYTES_PER_LISTING = 400;
/** And per index, whatever its size: the index object, its map and its entry in the bound. */
export const INDEX_BYTES_EACH = 1024;

/** An index's estimated bytes (above). */
export const indexBytes = (index: TenantIndex): number => INDEX_BYTES_EACH + index.heldEntries * INDEX_BYTES_PER_LISTING;

export interface TenantIndexOptions {
  /** READ_MODEL_MAX_MB in bytes: the bound on the estimated bytes of every index together. */
  maxBytes: number;
  /** Told of each index built from the database and how long it took (the rebuild-time histogram). */
  onBuilt?: (ms: number) => void;
  /** Told of each index evicted, so that what is kept for it alone (its views) goes with it. */
  onEvicted?: (index: TenantIndex) => void;
}

/**
 * Every tenant's index (above), each brought up to the tenant's version when it is read, bounded
 * together by their estimated bytes (issue 44): when they pass the bound, whole indexes go, least
 * recently read first, and an evicted tenant's next read builds its index again. A reader keeps
 * the index it holds however it is evicted meanwhile (it is only dropped from this map; its
 * entries are never mutated), so an eviction never changes an answer under way. An index larger
 * than the whole bound is kept alone rather than refused, so that its tenant is built once, not
 * on every read.
 */
export function createTenantIndexes(store: Store, clock: Clock, options: TenantIndexOptions) {
  let evictions = 0;
  const indexes = new LRUCache<string, TenantIndex>({
    maxSize: options.maxBytes,
    sizeCalculation: (index) => Math.min(options.maxBytes, indexBytes(index)),
    dispose: (index, _key, reason) => {
      if (reason !== 'evict') return;
      evictions++;
      options.onEvicted?.(index);
    },
  });
  let builds = 0;
  let replays = 0;
  /**
   * A build or a replay of the tenant's index was installed, or a build read another chunk. Its
   * size changed, and the bound must see it: lru-cache sizes an entry only when it is set to
   * another value, so it is taken out and set again (put back if it was evicted while it was
   * built; left out if another index of the tenant took its place).
   */
  const updated = (key: string, index: TenantIndex, kind: 'build' | 'replay' | 'progress', ms?: number) => {
    const held = indexes.peek(key);
    if (held === index) indexes.delete(key);
    if (held === index || held === undefined) indexes.set(key, index);
    if (kind === 'progress') return;
    if (kind === 'replay') return void replays++;
    builds++;
    options.onBuilt?.(ms!);
  };

  /** The tenant's index, current as of now: synchronous unless it has to catch up (or be built). */
  function current(tenant: Tenant): TenantIndex | Promise<TenantIndex> {
    const version = store.changes.currentVersion(tenant);
    return typeof version === 'number' ? at(tenant, version) : version.then((read) => at(tenant, read));
  }

  /** The tenant's index brought up to `version` (at least). */
  function at(tenant: Tenant, version: number): TenantIndex | Promise<TenantIndex> {
    const key = tenant.key;
    let index = indexes.get(key);
    if (index === undefined) {
      const created: TenantIndex = new TenantIndex(tenant.ownerAccountId, tenant.country, store, clock, (kind, ms) => updated(key, created, kind, ms));
      indexes.set(key, created);
      index = created;
    }
    const refreshing = index.refresh(version);
    if (refreshing === undefined) return index;
    const ready = index;
    return refreshing.then(() => ready);
  }

  /** Runs `read` on a current index; again at the new version when the tenant changed under it. */
  async function withIndex<T>(tenant: Tenant, read: (index: TenantIndex) => Promise<T | typeof STALE>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const index = await current(tenant);
      const result = await read(index);
      if (result !== STALE) return result;
      if (attempt >= 5) throw new Error('the listings kept changing under a read; giving up after 5 attempts');
      // Catch up with what changed before reading again (the change is committed, so it is in the log).
      await index.refresh(index.version + 1);
    }
  }

  return {
    current,
    withIndex,
    /** Whether the tenant's index has been built and is held (it may still have changes to replay); recency unchanged. */
    built(tenant: Tenant): boolean {
      return (indexes.peek(tenant.key)?.version ?? -1) >= 0;
    },
    /** Indexes built from scratch. */
    get builds() {
      return builds;
    },
    /** Indexes brought up to date from the change log. */
    get replays() {
      return replays;
    },
    /** Tenants held in memory now. */
    get tenants() {
      return indexes.size;
    },
    /** Indexes dropped to stay within the bound. */
    get evictions() {
      return evictions;
    },
    /** The estimated bytes of the indexes held now (what the bound is on; one index larger than the bound counts whole). */
    bytes(): number {
      let bytes = 0;
      for (const index of indexes.values()) bytes += indexBytes(index);
      return bytes;
    },
    /** Listings held in memory now, over every tenant. */
    listings(): number {
      let listings = 0;
      for (const index of indexes.values()) listings += index.size;
      return listings;
    },
  };
}

export type TenantIndexes = ReturnType<typeof createTenantIndexes>;
