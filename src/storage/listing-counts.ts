import { sql, type Kysely } from '#kysely';
import { tenantKey, type TenantKey } from '../core/tenant.js';
import type { Database } from './schema.js';
import { isVisibleSql, VISIBLE_STATUS, visibleListings } from './visibility.js';

/**
 * Each tenant's count of visible listings, kept by every import's swap in `tenant_listing_counts`
 * (migration 017), so that a total costs a seek and the listings expired since, not a walk of the
 * tenant (about a second at a million listings on PostgreSQL): what a page read before the
 * tenant's index is built needs (readmodel/cold-reads.ts, issue 44 item 2).
 *
 * A row says: at `counted_at`, `live` of the tenant's listings were active and not expired (D10).
 * It holds while the tenant's version is the row's `version`; a write that did not keep it (a
 * release before this one) moved the version on, and readers count the tenant instead.
 */

/** A tenant's visible listings counted at a version, true until the soonest expiry among them. */
export interface TenantCount {
  version: number;
  total: number;
  /** ISO time, or null when none of them expires. */
  soonestExpiry: string | null;
}

interface TenantPlace {
  readonly ownerAccountId: string;
  readonly country: string;
}

/** A tenant's count as a swap leaves it, before the swap's own change of its version is known. */
export interface CountAfterSwap {
  owner_account_id: string;
  country: string;
  /** The tenant's version before the swap (0: it never had a listing). */
  version: number;
  live: number;
}

/**
 * Run in a swap's write transaction after the change log's lock is taken and before a listing is
 * written: the visible count at `now`, once the swap is in, of every tenant its lines touch (the
 * tenant a listing is in now and the one it leaves). The count before the swap is the kept one less
 * what expired since it was counted (or plus what had not yet expired at `now`, when it was counted
 * later), else the tenant counted whole (no row, or a row of another version), else 0 for a tenant
 * that never had a listing; then each staged line adds its visibility and takes its old row's.
 */
export async function countsAfterSwap(tx: Kysely<Database>, now: string): Promise<CountAfterSwap[]> {
  const active = (alias: string) => sql`${sql.ref(`${alias}.owner_account_id`)} = t.owner_account_id and ${sql.ref(`${alias}.country`)} = t.country
    and ${sql.ref(`${alias}.status`)} = ${VISIBLE_STATUS}`;
  const expiredBetween = (after: unknown, until: unknown) =>
    sql`(select count(*) from listings e where ${active('e')} and e.expiry_date > ${after} and e.expiry_date <= ${until})`;
  const { rows } = await sql<{ owner_account_id: string; country: string; version: number | string | null; live: number | string }>`
    with contributions as (
      select s.owner_account_id, s.country, case when ${isVisibleSql('s', now)} then 1 else 0 end as delta from import_staging s
      union all
      select l.owner_account_id, l.country, case when ${isVisibleSql('l', now)} then -1 else 0 end from import_staging s join listings l on l.id = s.id
    ),
    t as (select owner_account_id, country, sum(delta) as delta from contributions group by owner_account_id, country)
    select t.owner_account_id, t.country, v.version, t.delta + case
      when k.version = coalesce(v.version, 0) then k.live - ${expiredBetween(sql`k.counted_at`, now)} + ${expiredBetween(now, sql`k.counted_at`)}
      when v.version is null then 0
      else (select count(*) from listings e where ${active('e')} and (e.expiry_date is null or e.expiry_date > ${now}))
    end as live
    from t
    left join tenant_versions v on v.owner_account_id = t.owner_account_id and v.country = t.country
    left join tenant_listing_counts k on k.owner_account_id = t.owner_account_id and k.country = t.country`.execute(tx);
  return rows.map((row) => ({ owner_account_id: row.owner_account_id, country: row.country, version: Number(row.version ?? 0), live: Number(row.live) }));
}

/** After the swap's changes are recorded: the counts kept as of `at` (the swap's now), at each tenant's version now (`versions`: those the swap moved). */
export async function keepCounts(tx: Kysely<Database>, counts: readonly CountAfterSwap[], versions: ReadonlyMap<TenantKey, number>, at: string): Promise<void> {
  for (let i = 0; i < counts.length; i += 500) {
    const values = counts.slice(i, i + 500).map((count) => ({
      owner_account_id: count.owner_account_id,
      country: count.country,
      version: versions.get(tenantKey(count.owner_account_id, count.country)) ?? count.version,
      counted_at: at,
      live: count.live,
    }));
    await tx
      .insertInto('tenant_listing_counts')
      .values(values)
      .onConflict((oc) => oc.columns(['owner_account_id', 'country']).doUpdateSet((eb) => ({
        version: eb.ref('excluded.version'),
        counted_at: eb.ref('excluded.counted_at'),
        live: eb.ref('excluded.live'),
      })))
      .execute();
  }
}

/**
 * Past this many listings expired since a kept count was counted, the count is not taken from it
 * (`keptTotal` answers undefined): the work of a kept total stays bounded whatever the time since
 * the tenant's last import, which SQLite, whose driver holds the event loop while a query runs,
 * needs (readmodel/cold-reads.ts).
 */
export const EXPIRED_SINCE_LIMIT = 1000;

/**
 * The tenant's visible total at `now` from its kept count, if that holds at `version` (read in
 * the same snapshot): the count less the listings that expired since it was counted (or plus
 * those not yet expired, when it was counted later than `now`), ranges of the expiry index of at
 * most EXPIRED_SINCE_LIMIT entries. Undefined when no kept count holds, or more than that many
 * expired since: the caller counts the tenant, or does without.
 */
export async function keptTotal(db: Kysely<Database>, tenant: TenantPlace, version: number, now: string): Promise<number | undefined> {
  const kept = await db.selectFrom('tenant_listing_counts').select(['version', 'counted_at', 'live'])
    .where('owner_account_id', '=', tenant.ownerAccountId).where('country', '=', tenant.country).executeTakeFirst();
  // Version 0: the tenant never had a listing (every listing is written with a change).
  if (kept === undefined) return version === 0 ? 0 : undefined;
  if (Number(kept.version) !== version) return undefined;
  const expiredBetween = async (after: string, until: string) => {
    if (after >= until) return 0;
    const entries = visibleListings(db.selectFrom('listings').select('id'), tenant)
      .where('expiry_date', '>', after).where('expiry_date', '<=', until).limit(EXPIRED_SINCE_LIMIT + 1);
    const row = await db.selectFrom(entries.as('e')).select((eb) => eb.fn.countAll<number | string | bigint>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const gone = await expiredBetween(kept.counted_at, now);
  const back = await expiredBetween(now, kept.counted_at);
  return gone > EXPIRED_SINCE_LIMIT || back > EXPIRED_SINCE_LIMIT ? undefined : Number(kept.live) - gone + back;
}

/** The soonest expiry after `now` among the tenant's active listings (a seek in the expiry index), null when none expires. */
export async function soonestExpiry(db: Kysely<Database>, tenant: TenantPlace, now: string): Promise<string | null> {
  const row = await visibleListings(db.selectFrom('listings').select((eb) => eb.fn.min('expiry_date').as('soonest')), tenant)
    .where('expiry_date', '>', now).executeTakeFirst();
  return row?.soonest ?? null;
}

/**
 * The tenant's count at `version` (read in the same snapshot) and `now`: from its kept count when
 * that holds; else, when `walk`, the tenant walked (an index-only scan on PostgreSQL, about a
 * second at a million listings), or undefined.
 */
export async function tenantCount(db: Kysely<Database>, tenant: TenantPlace, version: number, now: string, walk: boolean): Promise<TenantCount | undefined> {
  const kept = await keptTotal(db, tenant, version, now);
  if (kept !== undefined) return { version, total: kept, soonestExpiry: await soonestExpiry(db, tenant, now) };
  if (!walk) return undefined;
  const counted = await visibleListings(
    db.selectFrom('listings').select((eb) => [eb.fn.countAll<number | string | bigint>().as('total'), eb.fn.min('expiry_date').as('soonest')]),
    tenant,
    now,
  ).executeTakeFirstOrThrow();
  return { version, total: Number(counted.total), soonestExpiry: counted.soonest };
}
