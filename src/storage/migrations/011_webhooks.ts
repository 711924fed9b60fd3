import type { Kysely } from '#kysely';

/**
 * Webhook endpoints and their delivery log (D24, issue 32):
 *
 * - `webhook_endpoints`: one per registered URL of an (account, country). `position` is the
 *   endpoint's durable place in the change history (a change-feed cursor, D22): what was delivered.
 *   The message being delivered, if any, is kept whole (`message_*`) before its first attempt, so
 *   that every retry, by any instance, sends the same id and body. `lease_owner`/`lease_until`: the
 *   instance sending to it now (one at a time). `previous_secret` signs too until
 *   `previous_secret_until` (24 hours after a rotation).
 * - `webhook_attempts`: each attempt (kept 7 days), for the dashboard and the CLI.
 * - `dashboard_audit.webhook_url`: the endpoint a `webhook.*` entry is about.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('country', 'varchar(2)', (c) => c.notNull())
    .addColumn('url', 'varchar(2000)', (c) => c.notNull())
    .addColumn('secret', 'varchar(64)', (c) => c.notNull())
    .addColumn('previous_secret', 'varchar(64)')
    .addColumn('previous_secret_until', 'varchar(32)')
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('position', 'varchar(400)', (c) => c.notNull())
    .addColumn('failing_since', 'varchar(32)')
    .addColumn('next_attempt_at', 'varchar(32)')
    .addColumn('message_id', 'varchar(40)')
    .addColumn('message_at', 'varchar(32)')
    .addColumn('message_type', 'varchar(32)')
    .addColumn('message_body', 'text')
    .addColumn('message_ids', 'integer')
    .addColumn('message_end', 'varchar(400)')
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_until', 'varchar(32)')
    .execute();
  await db.schema.createIndex('webhook_endpoints_account').on('webhook_endpoints').columns(['account_id', 'country']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('at', 'varchar(32)', (c) => c.notNull())
    .addColumn('message_id', 'varchar(40)', (c) => c.notNull())
    .addColumn('message_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('ids', 'integer', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('error', 'varchar(300)')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_endpoint').on('webhook_attempts').columns(['endpoint_id', 'at']).execute();
  await db.schema.alterTable('dashboard_audit').addColumn('webhook_url', 'varchar(2000)').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dashboard_audit').dropColumn('webhook_url').execute();
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
}
