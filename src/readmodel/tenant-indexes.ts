import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import type { Tenant } from '../core/tenant.js';
import type { Store } from '../storage/index.js';
import { TenantIndex } from './tenant-index.js';

/** What a read on an index answers when the tenant changed under it: it is read again, at the new version. */
export const STALE = Symbol('stale');

/**
 * Every tenant's index (tenant-index.ts), each brought up to the tenant's version when it is read,
 * bounded together by the listings they hold: least recently read tenants go first.
 */
export function createTenantIndexes(store: Store, clock: Clock, maxIndexedListings: number) {
  const indexes = new LRUCache<string, TenantIndex>({ maxSize: maxIndexedListings, sizeCalculation: (index) => Math.max(1, index.size) });
  let builds = 0;
  let replays = 0;
  const countIndexWork = (kind: 'build' | 'replay') => (kind === 'build' ? builds++ : replays++);

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
      index = new TenantIndex(tenant.ownerAccountId, tenant.country, store, clock, countIndexWork);
      indexes.set(key, index);
    }
    const refreshing = index.refresh(version);
    if (refreshing === undefined) return index;
    const ready = index;
    return refreshing.then(() => {
      // Sizes are known once built: let the bound see it.
      indexes.set(key, ready);
      return ready;
    });
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
    /** Listings held in memory now, over every tenant. */
    listings(): number {
      let listings = 0;
      for (const index of indexes.values()) listings += index.size;
      return listings;
    },
  };
}

export type TenantIndexes = ReturnType<typeof createTenantIndexes>;
