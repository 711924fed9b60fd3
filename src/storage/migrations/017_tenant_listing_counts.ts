import { sql, type Kysely } from '#kysely';

/**
 * Issue 44 item 2: each tenant's count of visible listings, kept by every import's swap
 * (storage/listing-counts.ts), so that a page read from the database before the tenant's index is
 * built (readmodel/cold-reads.ts) has its total without walking the tenant (about a second at a
 * million listings on PostgreSQL).
 *
 * `live` counts the tenant's active listings that had not expired at `counted_at` (D10); the
 * count at a later moment is `live` less those that expired in between, read from the expiry index
 * (listings_tenant_expiry). A row holds at `version`, the tenant's version when it was written:
 * a write that did not keep it (a release before this one, during a rolling deploy) moves the
 * version on, and readers then count the tenant instead, until the next import's swap writes the
 * row again.
 *
 * Filled here for every tenant that has listings (one pass over the table, at migration time).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tenant_listing_counts')
    .addColumn('owner_account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('counted_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('live', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('tenant_listing_counts_pk', ['owner_account_id', 'country'])
    .execute();
  const now = new Date().toISOString();
  await sql`insert into tenant_listing_counts (owner_account_id, country, version, counted_at, live)
    select v.owner_account_id, v.country, v.version, ${now},
      (select count(*) from listings l where l.owner_account_id = v.owner_account_id and l.country = v.country
        and l.status = 'active' and (l.expiry_date is null or l.expiry_date > ${now}))
    from tenant_versions v`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('tenant_listing_counts').execute();
}
