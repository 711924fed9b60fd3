import type { Kysely } from '#kysely';

/**
 * Usage per key (issue 12), written in batches by every instance (src/usage) and read only by the
 * dashboard, never by the API:
 *
 * - `api_usage`: requests per key, time bucket and outcome (`200`, `304` or an error code). Two
 *   spans: 300 s buckets (kept 48 hours) and 3600 s buckets (kept 90 days), UTC-aligned, each
 *   bucket named by its start as ISO text. Instances add to a row with an upsert, so counts from
 *   every instance sum.
 * - `api_failed_requests`: the last 200 failed requests of each account (older ones are deleted in
 *   the same batch that adds newer ones), with the key's id, never anything of the key itself.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('api_usage')
    .addColumn('key_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('span', 'integer', (c) => c.notNull())
    .addColumn('bucket_start', 'varchar(32)', (c) => c.notNull())
    .addColumn('outcome', 'varchar(32)', (c) => c.notNull())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('api_usage_pk', ['key_id', 'span', 'bucket_start', 'outcome'])
    .execute();
  await db.schema.createIndex('api_usage_account').on('api_usage').columns(['account_id', 'span', 'bucket_start']).execute();
  await db.schema.createIndex('api_usage_prune').on('api_usage').columns(['span', 'bucket_start']).execute();

  await db.schema
    .createTable('api_failed_requests')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('key_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('at', 'varchar(32)', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('code', 'varchar(32)', (c) => c.notNull())
    .addColumn('method', 'varchar(16)', (c) => c.notNull())
    .addColumn('path', 'varchar(320)', (c) => c.notNull())
    .addColumn('origin', 'varchar(220)')
    .addColumn('request_id', 'varchar(140)', (c) => c.notNull())
    .addColumn('message', 'varchar(320)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_failed_requests_account').on('api_failed_requests').columns(['account_id', 'at', 'id']).execute();
  await db.schema.createIndex('api_failed_requests_request').on('api_failed_requests').columns(['account_id', 'request_id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('api_failed_requests').execute();
  await db.schema.dropTable('api_usage').execute();
}
