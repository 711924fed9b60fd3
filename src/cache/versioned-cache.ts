import type { Clock } from '../core/clock.js';

export interface VersionedCacheOptions<V> {
  /** Entries are dropped, all at once, whenever this value moves (see Store.changeVersion). */
  version: () => number;
  clock: Clock;
  /** Safety expiry: no entry outlives this, even if a change signal was missed. */
  ttlMs: number;
  maxEntries: number;
  /** Bound on the summed `sizeOf` of the entries (e.g. body bytes). */
  maxSize?: number;
  sizeOf?: (value: V) => number;
}

/**
 * A cache of stored data that can never serve something a write has changed: every read first
 * compares the store's change version and drops everything when it moved. That is what lets the
 * API cache keys and origins and still refuse a revoked key on the very next request (D4).
 * Entries also carry their own expiry (time-bound visibility, D10) and a safety TTL; eviction is
 * oldest-first once the entry or size bound is reached.
 */
export class VersionedCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number; size: number }>();
  private seenVersion: number;
  private size = 0;

  constructor(private readonly opts: VersionedCacheOptions<V>) {
    this.seenVersion = opts.version();
  }

  get(key: string): V | undefined {
    this.checkVersion();
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.opts.clock()) {
      this.delete(key, entry.size);
      return undefined;
    }
    return entry.value;
  }

  /**
   * Stores a value read at `version` (taken before the read: if the data changed during the read,
   * the entry is already stale and is not stored). `validUntil` (ms) bounds it further.
   */
  set(key: string, value: V, readAtVersion: number, validUntil = Infinity): void {
    this.checkVersion();
    if (readAtVersion !== this.seenVersion) return;
    const size = this.opts.sizeOf?.(value) ?? 0;
    if (this.opts.maxSize !== undefined && size > this.opts.maxSize / 4) return;
    const old = this.entries.get(key);
    if (old !== undefined) this.delete(key, old.size);
    this.entries.set(key, { value, size, expiresAt: Math.min(validUntil, this.opts.clock() + this.opts.ttlMs) });
    this.size += size;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.opts.maxEntries && (this.opts.maxSize === undefined || this.size <= this.opts.maxSize)) break;
      this.delete(oldest, entry.size);
    }
  }

  /** The version to pass to `set` for a read that starts now. */
  version(): number {
    this.checkVersion();
    return this.seenVersion;
  }

  clear(): void {
    this.entries.clear();
    this.size = 0;
  }

  get entryCount(): number {
    return this.entries.size;
  }

  private checkVersion(): void {
    const current = this.opts.version();
    if (current !== this.seenVersion) {
      this.seenVersion = current;
      this.clear();
    }
  }

  private delete(key: string, size: number): void {
    this.entries.delete(key);
    this.size -= size;
  }
}
