import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';

export interface ReadCacheOptions<V> {
  clock: Clock;
  /** Safety expiry of every entry (ms): nothing is served longer, whatever else says it may be. */
  ttlMs: number;
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
   * now (a page assembled from listings cached a while ago): the safety TTL counts from then.
   */
  readAt?: number;
}

/** Expired entries dropped each time one is stored (see `dropExpired`). */
const EXPIRED_PER_STORE = 2;

/**
 * The last part of an entry's safety TTL in which a read still answers from memory but also has it
 * read again in the background (refresh-ahead): 0.25 of 5 s is its last 1.25 s.
 */
const REFRESH_AHEAD_FRACTION = 0.25;

/** `LISTINGS_REFRESH_AHEAD=off` (read once): entries are read again only once expired; the switch of the design record's A/B (bench/ab.ts). */
const REFRESH_AHEAD = process.env.LISTINGS_REFRESH_AHEAD !== 'off';

/** When the refresh-ahead window of a value read `ttlMs` before `ttlEnd` opens. */
export function refreshAheadAt(ttlEnd: number, ttlMs: number): number {
  return ttlEnd - ttlMs * REFRESH_AHEAD_FRACTION;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
  /** From when a read asks for the entry to be read again ahead of its expiry; Infinity: never. */
  refreshAt: number;
}

/**
 * The one cache pattern of the read path (as Unkey's `withCache`): `getOrLoad(key, load)` answers
 * from memory, or loads once however many requests ask for the same key at the same time. Keys
 * carry the version their data was read at (a tenant's version, the auth version: see
 * storage/changes.ts), so a write makes older entries unreachable rather than having to find
 * them, and a write to one tenant leaves every other tenant's entries alone. Entries may expire
 * earlier than the safety TTL (`validUntil`: a page changes when the first listing on it expires,
 * D10). Least recently used entries go first when a bound is reached.
 *
 * An entry that is read near the end of its safety TTL is read again in the background while the
 * read answers from memory (refresh-ahead, as Unkey's cache revalidates between its "fresh" and
 * "stale" times), so a hot entry never expires under load. Without it, each of the bench's 1,000
 * hot details missed once every 5 s, together, each miss an asynchronous database read: the
 * requests behind them waited, and the p99 of cached details under wrk was about a third higher
 * (docs/design/read-caches.md). Nothing is served past the TTL from when it was read from the
 * database (`readAt`, for a value assembled from older cached parts): the bound is the same, only
 * the reads come before it instead of after.
 * An entry that ends at `validUntil` before its TTL is not refreshed ahead: it changes then (D10).
 */
export class ReadCache<V> {
  private readonly lru: LRUCache<string, Entry<V>>;
  private readonly inflight = new Map<string, Promise<V>>();
  /** Answers from memory, and loads (or joins to a load under way); for metrics and tests. */
  hits = 0;
  misses = 0;
  /** Reloads started ahead of an entry's expiry (`getOrLoad`, or a `peek` given `onDue`). */
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

  /**
   * The cached value, if present and not expired: the synchronous fast path. `onDue(key)` is called
   * (once per entry) when the entry is in its refresh-ahead window: the caller reads it again and
   * stores it with `remember`, and the value is still answered meanwhile. (A function given the key,
   * rather than a closure made for each read, so that a hit allocates nothing.)
   */
  peek(key: string, onDue?: (key: string) => void): V | undefined {
    const now = this.options.clock();
    const entry = this.valid(key, now);
    if (entry === undefined) return undefined;
    if (onDue !== undefined && this.due(entry, now)) onDue(key);
    return entry.value;
  }

  /**
   * The cached value, or the one `load` gives (loaded once for all concurrent callers). A hit in
   * the refresh-ahead window also starts `load` in the background; if that fails, the entry is
   * answered until it expires, and the next read then loads it (and meets the error itself).
   */
  getOrLoad(key: string, load: () => Promise<Loaded<V>>): V | Promise<V> {
    const now = this.options.clock();
    const entry = this.valid(key, now);
    if (entry !== undefined) {
      this.hits++;
      if (this.due(entry, now)) this.load(key, load).catch(() => undefined);
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

  /** True, once, when the entry has entered its refresh-ahead window. */
  private due(entry: Entry<V>, now: number): boolean {
    if (entry.refreshAt > now) return false;
    entry.refreshAt = Infinity;
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
   * Stores a value obtained elsewhere (or read again ahead of its expiry), for a TTL from when it
   * was read (`readAt`, default now) and no later than `validUntil`.
   */
  remember(key: string, value: V, validUntil = Infinity, readAt?: number): void {
    const now = this.options.clock();
    this.dropExpired(now);
    const ttlEnd = Math.min(readAt ?? now, now) + this.options.ttlMs;
    if (Math.min(validUntil, ttlEnd) <= now) return;
    // Refreshed ahead only when the TTL ends it: an entry that ends earlier, at validUntil, changes then.
    const refreshAt = validUntil < ttlEnd || !REFRESH_AHEAD ? Infinity : refreshAheadAt(ttlEnd, this.options.ttlMs);
    this.lru.set(key, { value, expiresAt: Math.min(validUntil, ttlEnd), refreshAt });
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
