import { sql, type Kysely } from '#kysely';

/**
 * The first schema. Portable SQL only (see schema.ts), so the one migration serves SQLite and
 * PostgreSQL alike. `db` is `Kysely<any>` on purpose: a migration describes the schema as it was
 * then, not as the current types say.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull().check(sql`kind in ('organisation', 'individual')`))
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('listings')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('owner_account_id', 'varchar(36)', (c) => c.notNull().references('accounts.id'))
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('org_id', 'varchar(36)')
    .addColumn('building_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('size_sqft', 'double precision')
    .addColumn('usage_types', 'text', (c) => c.notNull())
    .addColumn('price', 'double precision')
    .addColumn('currency', 'varchar(3)', (c) => c.notNull())
    .addColumn('is_takeover', 'integer', (c) => c.notNull())
    .addColumn('is_featured', 'integer', (c) => c.notNull())
    .addColumn('status', 'varchar(32)', (c) => c.notNull())
    .addColumn('expiry_date', 'varchar(30)')
    .addColumn('available_from', 'varchar(30)')
    .addColumn('min_lease_tenure', 'text')
    .addColumn('view_count', 'integer', (c) => c.notNull())
    .addColumn('inquiry_count', 'integer', (c) => c.notNull())
    .addColumn('building_name', 'text')
    .addColumn('street_address', 'text')
    .addColumn('images', 'text', (c) => c.notNull())
    .addColumn('cover_image_index', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(30)', (c) => c.notNull())
    .execute();

  // Serves the list query end to end: equality on (owner, country, status), then the D9 order,
  // with expiry_date in the index so the D10 filter and the count never touch the table.
  await db.schema
    .createIndex('listings_visible_order')
    .on('listings')
    .columns(['owner_account_id', 'country', 'status', 'is_featured desc', 'created_at desc', 'id', 'expiry_date'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull().references('accounts.id'))
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('prefix', 'varchar(32)', (c) => c.notNull())
    .addColumn('last4', 'varchar(4)', (c) => c.notNull())
    .addColumn('rate_limit_per_minute', 'integer')
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .addColumn('last_used_at', 'varchar(30)')
    .addColumn('revoked_at', 'varchar(30)')
    .execute();
  await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('allowed_origins')
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull().references('accounts.id'))
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .addPrimaryKeyConstraint('allowed_origins_pk', ['account_id', 'country', 'origin'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['allowed_origins', 'api_keys', 'listings', 'accounts']) {
    await db.schema.dropTable(table).execute();
  }
}
