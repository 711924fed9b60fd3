import type { Kysely } from '#kysely';

/**
 * `webhook_endpoints` and `webhook_attempts` as migrations 011 and 014 left them (their columns in
 * that order, their indexes): made in the webhook delivery state's own SQLite file
 * (webhooks-file/001_delivery_state.ts), and in the main file again when 016 is undone.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function createWebhookTables(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .ifNotExists()
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
    .addColumn('replay_from', 'varchar(400)')
    .addColumn('replay_until', 'varchar(400)')
    .addColumn('message_replay', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('only_change', 'varchar(16)')
    .addColumn('only_usage_types', 'varchar(1000)')
    .execute();
  await db.schema.createIndex('webhook_endpoints_account').ifNotExists().on('webhook_endpoints').columns(['account_id', 'country']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .ifNotExists()
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
    .addColumn('replay', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('webhook_attempts_endpoint').ifNotExists().on('webhook_attempts').columns(['endpoint_id', 'at']).execute();
}

/** The two tables. */
export const WEBHOOK_TABLES = ['webhook_endpoints', 'webhook_attempts'] as const;
