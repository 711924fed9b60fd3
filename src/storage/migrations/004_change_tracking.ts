import { sql, type Kysely } from '#kysely';
import { isPostgres } from '../database.js';

/**
 * Change tracking per tenant, i.e. per (owning account, country) set of listings, which is what one
 * key sees (D1):
 *
 * - `listing_changes`: one row per listing write per tenant it touched (a listing moved to another
 *   owner or country touches both), numbered by a sequence that only grows. Writers append under
 *   one lock (SQLite's write lock; an advisory lock on PostgreSQL), so sequence order is commit
 *   order and a reader that has seen sequence n has seen every change before it. It is the source
 *   of the change feed (D22) and of every instance's catch-up. Pruned by age.
 * - `tenant_versions`: per tenant, the sequence of its last change (its version: the same on every
 *   instance), and the highest sequence pruned from its history.
 * - `store_versions`: counters of other kinds of change; `auth` moves on every key or origin write
 *   (D4), so that caches of keys and origins are dropped by those writes only.
 * - `listings.change_seq`: the sequence of the write that last changed the listing, so that a
 *   serialised listing can be cached by (id, change_seq) and reused until it changes.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = isPostgres(db);
  await db.schema
    .createTable('listing_changes')
    .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) => (postgres ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('owner_account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('listing_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('at', 'varchar(30)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('listing_changes_tenant_seq').on('listing_changes').columns(['owner_account_id', 'country', 'seq']).execute();
  await db.schema.createIndex('listing_changes_at').on('listing_changes').column('at').execute();

  await db.schema
    .createTable('tenant_versions')
    .addColumn('owner_account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('pruned_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('tenant_versions_pk', ['owner_account_id', 'country'])
    .execute();
  await db.schema.createIndex('tenant_versions_version').on('tenant_versions').column('version').execute();

  await db.schema
    .createTable('store_versions')
    .addColumn('name', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('store_versions').values({ name: 'auth', version: 0 }).execute();

  await db.schema.alterTable('listings').addColumn('change_seq', 'bigint', (c) => c.notNull().defaultTo(0)).execute();

  // The listings that exist already get a history of one change each, so that every instance and
  // the change feed start from the same place.
  const now = new Date().toISOString();
  await sql`insert into listing_changes (owner_account_id, country, listing_id, at)
    select owner_account_id, country, id, ${now} from listings order by created_at, id`.execute(db);
  await sql`update listings set change_seq = (select max(c.seq) from listing_changes c where c.listing_id = listings.id)`.execute(db);
  await sql`insert into tenant_versions (owner_account_id, country, version, pruned_seq)
    select owner_account_id, country, max(seq), 0 from listing_changes group by owner_account_id, country`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').dropColumn('change_seq').execute();
  for (const table of ['store_versions', 'tenant_versions', 'listing_changes']) await db.schema.dropTable(table).execute();
}

