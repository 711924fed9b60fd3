import { sql, type RawBuilder, type SelectQueryBuilder } from '#kysely';
import type { Database } from './schema.js';

/**
 * What one key sees (D1, D10) and in what order (D9), declared once in both forms: the SQL of the
 * queries that read listings and the JavaScript of the code that judges rows or entries it holds.
 *
 * Visible: a listing of the key's tenant (owning account and country) whose status is `active`
 * and that has not expired (no expiry date, or one after now; it drops out at that instant).
 * Dates are stored in one ISO form (`Date#toISOString`), so comparing them as text compares times.
 */
export const VISIBLE_STATUS = 'active';

interface TenantPlace {
  readonly ownerAccountId: string;
  readonly country: string;
}

/** The tenant's listings with the visible status; with `now` (ISO), only those not expired then. */
export function visibleListings<O>(query: SelectQueryBuilder<Database, 'listings', O>, tenant: TenantPlace, now?: string) {
  const active = query.where('owner_account_id', '=', tenant.ownerAccountId).where('country', '=', tenant.country).where('status', '=', VISIBLE_STATUS);
  return now === undefined ? active : active.where((eb) => eb.or([eb('expiry_date', 'is', null), eb('expiry_date', '>', now)]));
}

interface PlacedRow {
  readonly owner_account_id: string;
  readonly country: string;
  readonly status: string;
  readonly expiry_date: string | null;
}

/** The same rule as SQL over a row of the listings' columns under `alias` (the tenant aside). */
export function isVisibleSql(alias: string, now: string): RawBuilder<unknown> {
  const expiry = sql.ref(`${alias}.expiry_date`);
  return sql`(${sql.ref(`${alias}.status`)} = ${VISIBLE_STATUS} and (${expiry} is null or ${expiry} > ${now}))`;
}

/** The same rule for a row already read. */
export function isVisibleRow(row: PlacedRow, tenant: TenantPlace, now: string): boolean {
  return isActiveInTenant(row, tenant) && !expiredAt(row.expiry_date, now);
}

/** The rule but expiry: the tenant's, with the visible status (the change feed tells expiries apart). */
export function isActiveInTenant(row: Omit<PlacedRow, 'expiry_date'>, tenant: TenantPlace): boolean {
  return row.owner_account_id === tenant.ownerAccountId && row.country === tenant.country && row.status === VISIBLE_STATUS;
}

/** Whether a listing with this expiry date is expired at `now` (both ISO). */
export const expiredAt = (expiryDate: string | null, now: string): boolean => expiryDate !== null && expiryDate <= now;

/** D9 in SQL: featured first, then newest first, then by id. */
export function inD9Order<O>(query: SelectQueryBuilder<Database, 'listings', O>) {
  return query.orderBy('is_featured', 'desc').orderBy('created_at', 'desc').orderBy('id', 'asc');
}

/** D9 as a comparison of what the in-memory index holds of a listing. */
export function compareD9(a: { featured: number; createdAt: string; id: string }, b: { featured: number; createdAt: string; id: string }): number {
  if (a.featured !== b.featured) return b.featured - a.featured;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
