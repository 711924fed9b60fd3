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
}

/** Expired entries dropped each time one is stored (see `dropExpired`). */
const EXPIRED_PER_STORE = 2;

interface Entry<V> {
  value: V;
  expiresAt: number;
}

/**
 * The one cache pattern of the read path (as Unkey's `withCache`): `getOrLoad(key, load)` answers
 * from memory, or loads once however many requests ask for the same key at the same time. Keys
 * carry the version their data was read at (a tenant's version, the auth version: see
 * storage/changes.ts), so a write makes older entries unreachable rather than having to find
 * them, and a write to one tenant leaves every other tenant's entries alone. Entries may expire
 * earlier than the safety TTL (`validUntil`: a page changes when the first listing on it expires,
 * D10). Least recently used entries go first when a bound is reached.
 */
export class ReadCache<V> {
  private readonly lru: LRUCache<string, Entry<V>>;
  private readonly inflight = new Map<string, Promise<V>>();
  /** Answers from memory, and loads (or joins to a load under way); for metrics and tests. */
  hits = 0;
  misses = 0;

  constructor(private readonly options: ReadCacheOptions<V>) {
    const sizeOf = options.sizeOf;
    if (options.maxEntries === undefined && (options.maxSize === undefined || sizeOf === undefined)) throw new Error('a ReadCache needs a bound: maxEntries, or maxSize with sizeOf');
    this.lru = new LRUCache<string, Entry<V>>({
      max: options.maxEntries,
      maxSize: sizeOf === undefined ? undefined : options.maxSize,
      sizeCalculation: sizeOf === undefined || options.maxSize === undefined ? undefined : (entry: Entry<V>) => Math.max(1, sizeOf(entry.value)),
    } as LRUCache.Options<string, Entry<V>, unknown>);
  }

  /** The cached value, if present and not expired: the synchronous fast path. */
  peek(key: string): V | undefined {
    const entry = this.lru.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.options.clock()) {
      this.lru.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** The cached value, or the one `load` gives (loaded once for all concurrent callers). */
  getOrLoad(key: string, load: () => Promise<Loaded<V>>): V | Promise<V> {
    const hit = this.peek(key);
    if (hit !== undefined) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const pending = this.inflight.get(key);
    if (pending !== undefined) return pending;
    const loading = load().then(
      ({ value, validUntil }) => {
        this.inflight.delete(key);
        this.remember(key, value, validUntil);
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

  /** Stores a value obtained elsewhere. */
  remember(key: string, value: V, validUntil = Infinity): void {
    const now = this.options.clock();
    this.dropExpired(now);
    const expiresAt = Math.min(validUntil, now + this.options.ttlMs);
    if (expiresAt > now) this.lru.set(key, { value, expiresAt });
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
}
