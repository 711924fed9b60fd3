import { randomBytes } from 'node:crypto';
import type { Kysely } from '#kysely';

/**
 * The change feed (D22) and the filters and sorts (D23) read a tenant's listings in other orders
 * than D9's; each gets an index that serves it a page at a time:
 *
 * - `listing_changes_superseded`: is there a later change of this listing in this tenant? (the
 *   feed sends only a listing's last change);
 * - `listings_tenant_expiry`: which listings of a tenant expired between two moments (an expiry
 *   is a removal, with no write, D10);
 * - `listings_tenant_updated`: a tenant's visible listings in the order their state took effect
 *   (the first answer of a feed without a cursor);
 * - `store_secrets`: the deployment's secret for signing feed cursors (tamper-evident, D22), made
 *   once here so that every instance of the deployment signs and checks with the same one.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('listing_changes_superseded').on('listing_changes').columns(['owner_account_id', 'country', 'listing_id', 'seq']).execute();
  await db.schema.createIndex('listings_tenant_expiry').on('listings').columns(['owner_account_id', 'country', 'status', 'expiry_date', 'id']).execute();
  await db.schema.createIndex('listings_tenant_updated').on('listings').columns(['owner_account_id', 'country', 'status', 'updated_at', 'id']).execute();
  await db.schema
    .createTable('store_secrets')
    .addColumn('name', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('value', 'varchar(128)', (c) => c.notNull())
    .execute();
  await db.insertInto('store_secrets').values({ name: 'feed_cursor', value: randomBytes(32).toString('base64url') }).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('store_secrets').execute();
  for (const index of ['listings_tenant_updated', 'listings_tenant_expiry', 'listing_changes_superseded']) await db.schema.dropIndex(index).execute();
}
