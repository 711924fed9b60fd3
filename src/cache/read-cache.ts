import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';

/**
 * A cache namespace's one freshness rule (Unkey's `pkg/cache`: `fresh` and `stale` per namespace),
 * counted from when its data was read from the database: until `freshMs` an entry answers from
 * memory; from `freshMs` to `staleMs` it still answers, and the first read in that spell has it
 * read again in the background (one read however many ask); from `staleMs` on it is never served.
 * An entry whose data shows an earlier end (`validUntil`: a listing that expires, D10) ends there,
 * fresh to the end.
 */
export interface Freshness {
  freshMs: number;
  /** The safety bound: nothing is served longer than this after it was read (READ_CACHE_TTL_MS). */
  staleMs: number;
}

/** A namespace's rule: fresh for the first `freshShare` of `staleMs`. */
export function freshness(staleMs: number, freshShare: number): Freshness {
  return { freshMs: staleMs * freshShare, staleMs };
}

/**
 * `LISTINGS_REFRESH_AHEAD=off` (read once): a stale entry is not read again in the background, only
 * once it is no longer served; the switch of the design record's A/B (bench/ab.ts).
 */
const REFRESH_AHEAD = process.env.LISTINGS_REFRESH_AHEAD !== 'off';

export interface ReadCacheOptions<V> {
  clock: Clock;
  freshness: Freshness;
  /** Bound on the number of entries. lru-cache sets aside room for this many up front (about 24 bytes each). */
  maxEntries?: number;
  /** Bound on the summed `sizeOf` of the entries (e.g. body bytes); nothing is set aside for it. */
  maxSize?: number;
  sizeOf?: (value: V) => number;
}

/** What a loader returns: the value, and (optionally) until when it is valid, in clock ms. */
export interface Loaded<V> {
  value: V;
  validUntil?: number;
  /**
   * When the oldest data in the value was read from the database, in clock ms, if earlier than
   * now (a page assembled from listings cached a while ago): its freshness counts from then.
   */
  readAt?: number;
}

/** Expired entries dropped each time one is stored (see `dropExpired`). */
const EXPIRED_PER_STORE = 2;

interface Entry<V> {
  value: V;
  /** Until when it is served: stale time or `validUntil`, whichever comes first. */
  expiresAt: number;
  /** From when a read has it read again in the background; Infinity once that read has begun. */
  freshUntil: number;
}

/**
 * The one cache pattern of the read path (as Unkey's `withCache`): `getOrLoad(key, load)` answers
 * from memory, or loads once however many requests ask for the same key at the same time, under
 * its namespace's `Freshness`. Keys carry the version their data was read at (a tenant's version,
 * the auth version: see storage/changes.ts), so a write makes older entries unreachable rather
 * than having to find them, and a write to one tenant leaves every other tenant's entries alone.
 * Least recently used entries go first when a bound is reached.
 *
 * The stale spell is why a hot entry never expires under load: without it, each of the bench's
 * 1,000 hot details missed once every 5 s, together, each miss an asynchronous database read, and
 * the requests behind them waited (docs/design/read-caches.md).
 */
export class ReadCache<V> {
  private readonly lru: LRUCache<string, Entry<V>>;
  private readonly inflight = new Map<string, Promise<V>>();
  /** Answers from memory, and loads (or joins to a load under way); for metrics and tests. */
  hits = 0;
  misses = 0;
  /** Reads started by a stale entry (`getOrLoad`, or a `peek` given `onStale`). */
  refreshes = 0;

  constructor(private readonly options: ReadCacheOptions<V>) {
    const sizeOf = options.sizeOf;
    if (options.maxEntries === undefined && (options.maxSize === undefined || sizeOf === undefined)) throw new Error('a ReadCache needs a bound: maxEntries, or maxSize with sizeOf');
    this.lru = new LRUCache<string, Entry<V>>({
      max: options.maxEntries,
      maxSize: sizeOf === undefined ? undefined : options.maxSize,
      sizeCalculation: sizeOf === undefined || options.maxSize === undefined ? undefined : (entry: Entry<V>) => Math.max(1, sizeOf(entry.value)),
    } as LRUCache.Options<string, Entry<V>, unknown>);
  }

  /** Until when data read at `readAt` is fresh: the namespace's rule, for what is kept outside the cache. */
  freshUntil(readAt: number): number {
    return readAt + this.options.freshness.freshMs;
  }

  /**
   * The cached value, if still served: the synchronous fast path. `onStale(key)` is called (once
   * per entry) when the entry is stale: the caller reads it again and stores it with `remember`,
   * and the value is still answered meanwhile. (A function given the key, rather than a closure
   * made for each read, so that a hit allocates nothing.)
   */
  peek(key: string, onStale?: (key: string) => void): V | undefined {
    const now = this.options.clock();
    const entry = this.valid(key, now);
    if (entry === undefined) return undefined;
    if (onStale !== undefined && this.stale(entry, now)) onStale(key);
    return entry.value;
  }

  /**
   * The cached value, or the one `load` gives (loaded once for all concurrent callers). A stale hit
   * also starts `load` in the background; if that fails, the entry is answered until it expires,
   * and the next read then loads it (and meets the error itself).
   */
  getOrLoad(key: string, load: () => Promise<Loaded<V>>): V | Promise<V> {
    const now = this.options.clock();
    const entry = this.valid(key, now);
    if (entry !== undefined) {
      this.hits++;
      if (this.stale(entry, now)) this.load(key, load).catch(() => undefined);
      return entry.value;
    }
    this.misses++;
    return this.load(key, load);
  }

  /** The entry, if present and not expired (an expired one is dropped). */
  private valid(key: string, now: number): Entry<V> | undefined {
    const entry = this.lru.get(key);
    if (entry === undefined || entry.expiresAt > now) return entry;
    this.lru.delete(key);
    return undefined;
  }

  /** True, once, when the entry is stale (no longer fresh, still served). */
  private stale(entry: Entry<V>, now: number): boolean {
    if (entry.freshUntil > now || !REFRESH_AHEAD) return false;
    entry.freshUntil = Infinity;
    this.refreshes++;
    return true;
  }

  /** `load`, once for all concurrent callers (a refresh and a miss of the same key too), then stored. */
  private load(key: string, load: () => Promise<Loaded<V>>): Promise<V> {
    const pending = this.inflight.get(key);
    if (pending !== undefined) return pending;
    const loading = load().then(
      ({ value, validUntil, readAt }) => {
        this.inflight.delete(key);
        this.remember(key, value, validUntil, readAt);
        return value;
      },
      (error: unknown) => {
        this.inflight.delete(key);
        throw error;
      },
    );
    this.inflight.set(key, loading);
    return loading;
  }

  /**
   * Stores a value obtained elsewhere (or read again), fresh and served by the namespace's rule
   * from when it was read (`readAt`, default now), and never past `validUntil`.
   */
  remember(key: string, value: V, validUntil = Infinity, readAt?: number): void {
    const now = this.options.clock();
    this.dropExpired(now);
    const read = Math.min(readAt ?? now, now);
    const staleUntil = read + this.options.freshness.staleMs;
    const expiresAt = Math.min(validUntil, staleUntil);
    if (expiresAt <= now) return;
    // An entry that its data ends first (D10) has no stale spell: read again then, it would change then.
    this.lru.set(key, { value, expiresAt, freshUntil: validUntil < staleUntil ? expiresAt : this.freshUntil(read) });
  }

  /**
   * Drops up to EXPIRED_PER_STORE expired entries from the least recently read end. An entry is
   * checked when it is read, so one that is never read again (a tenant's page under its old
   * version, a first page read once) would otherwise hold its memory until the bound pushes it
   * out: up to the whole bound, for nothing. It stops at the first valid entry, so an expired
   * one read more recently than a valid one waits until it is the oldest; everything not read
   * for a TTL is among the oldest, and two dropped for each one stored drain those at least as
   * fast as entries come, for a look at the oldest entries.
   */
  private dropExpired(now: number): void {
    let expired: string[] | undefined;
    for (const [key, entry] of this.lru.rentries() as Iterable<[string, Entry<V>]>) {
      if (entry.expiresAt > now || (expired?.length ?? 0) === EXPIRED_PER_STORE) break;
      (expired ??= []).push(key);
    }
    if (expired !== undefined) for (const key of expired) this.lru.delete(key);
  }

  get size(): number {
    return this.lru.size;
  }

  /**
   * Resolves once every load under way now has ended (stored, or failed): refreshes ahead run in
   * the background, and a test that moves its clock waits for them here instead of polling.
   */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inflight.values()]);
  }
}
