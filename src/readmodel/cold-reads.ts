import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import type { Tenant } from '../core/tenant.js';
import { isVisibleRow, type Store, type TenantCount } from '../storage/index.js';
import { pageBody, type Body, type createListingBodies } from './bodies.js';
import type { TenantIndexes } from './tenant-index.js';

/**
 * Issue 44 item 2: the reads of a tenant whose index is not built yet (never read by this process,
 * or evicted by READ_MODEL_MAX_MB) answered from the database instead of after the whole index is
 * built (a tenant of 1,000,000 listings took about 35 s on PostgreSQL), the index then built in
 * the background for the reads after them:
 *
 * - a detail: its row by id, if the tenant sees it now (D10, D11);
 * - a plain page (no filter or sort) up to COLD_PAGE_DEPTH deep: the page from the order index and
 *   the tenant's count in one snapshot (storage `pageInOrder`: the count every import keeps, else,
 *   on PostgreSQL, the tenant walked). The last count of each tenant is kept here at its version
 *   and taken again by the other pages asked while the index builds. SQLite never walks a tenant
 *   (its driver would hold the event loop for every other tenant meanwhile): without a kept count
 *   the page waits for the index, as every page did before.
 *
 * Filtered and sorted pages (D23, D26-D28), facets and deeper pages wait for the index.
 */
export const COLD_PAGE_DEPTH = 1000;

export function createColdReads(store: Store, clock: Clock, indexes: TenantIndexes, listingBodies: ReturnType<typeof createListingBodies>) {
  const walk = store.dialect === 'postgres';
  const counts = new LRUCache<string, TenantCount>({ max: 10_000 });
  let reads = 0;

  /** The index is built in the background; a failure is left for the next read, which builds again. */
  function buildInBackground(tenant: Tenant): void {
    const building = indexes.current(tenant);
    if (building instanceof Promise) building.catch(() => undefined);
  }

  return {
    /** Reads answered here so far (a metric). */
    get reads() {
      return reads;
    },

    /** Whether a page is read here: a plain one, not too deep, of a tenant whose index is not built. */
    takesPage(tenant: Tenant, page: number, perPage: number, filteredOrSorted: boolean): boolean {
      return !filteredOrSorted && page * perPage <= COLD_PAGE_DEPTH && !indexes.built(tenant);
    },

    /**
     * A page, true until the soonest expiry among the tenant's listings (D10): what the page cache
     * keeps it for. Undefined when the store cannot tell the total cheaply (SQLite, no kept count):
     * the caller waits for the index.
     */
    async page(tenant: Tenant, page: number, perPage: number): Promise<{ value: Body; validUntil: number } | undefined> {
      const now = new Date(clock()).toISOString();
      const read = await store.listings.pageInOrder(tenant, now, { offset: (page - 1) * perPage, limit: perPage, walk }, counts.get(tenant.key));
      // Started once the page is read, not before: the build's first queries would compete with it.
      buildInBackground(tenant);
      if (read === undefined) return undefined;
      const { count, rows } = read;
      counts.set(tenant.key, count);
      reads++;
      const value = pageBody(rows.map((row) => listingBodies.fromRow(row)), page, perPage, count.total);
      return { value, validUntil: count.soonestExpiry === null ? Infinity : Date.parse(count.soonestExpiry) };
    },

    /** A listing of a tenant whose index is not built, if the tenant sees it now. */
    async detail(tenant: Tenant, id: string): Promise<Body | undefined> {
      const row = await listingBodies.row(id);
      buildInBackground(tenant);
      reads++;
      return row !== undefined && isVisibleRow(row, tenant, new Date(clock()).toISOString()) ? listingBodies.fromRow(row) : undefined;
    },
  };
}
