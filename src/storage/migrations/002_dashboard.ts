import type { Kysely } from '#kysely';

/**
 * The developer dashboard (Settings > Developer): members who sign in, their sessions, the audit
 * log of key and origin changes, and failed sign-ins for throttling. Portable SQL like 001
 * (varchar/text/integer, ISO 8601 text timestamps), so it serves SQLite and PostgreSQL alike.
 * Sessions and throttling live in the database so that they hold across instances.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_users')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull().references('accounts.id'))
    .addColumn('email', 'varchar(254)', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'varchar(30)')
    .execute();
  await db.schema.createIndex('dashboard_users_account').on('dashboard_users').columns(['account_id', 'email']).execute();

  await db.schema
    .createTable('dashboard_sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(36)', (c) => c.notNull().references('dashboard_users.id').onDelete('cascade'))
    .addColumn('created_at', 'varchar(30)', (c) => c.notNull())
    .addColumn('last_seen_at', 'varchar(30)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(30)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_sessions_user').on('dashboard_sessions').column('user_id').execute();
  await db.schema.createIndex('dashboard_sessions_expiry').on('dashboard_sessions').column('expires_at').execute();

  await db.schema
    .createTable('dashboard_audit')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull().references('accounts.id'))
    .addColumn('at', 'varchar(30)', (c) => c.notNull())
    .addColumn('actor_user_id', 'varchar(36)')
    .addColumn('actor_email', 'varchar(254)', (c) => c.notNull())
    .addColumn('action', 'varchar(32)', (c) => c.notNull())
    .addColumn('key_id', 'varchar(36)')
    .addColumn('key_display', 'varchar(64)')
    .addColumn('key_label', 'text')
    .addColumn('previous_label', 'text')
    .addColumn('country', 'varchar(2)')
    .addColumn('origin', 'text')
    .execute();
  await db.schema.createIndex('dashboard_audit_account_at').on('dashboard_audit').columns(['account_id', 'at']).execute();

  await db.schema
    .createTable('dashboard_login_failures')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('email', 'varchar(254)', (c) => c.notNull())
    .addColumn('ip', 'varchar(64)', (c) => c.notNull())
    .addColumn('at', 'varchar(30)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_login_failures_email').on('dashboard_login_failures').columns(['email', 'at']).execute();
  await db.schema.createIndex('dashboard_login_failures_ip').on('dashboard_login_failures').columns(['ip', 'at']).execute();
  await db.schema.createIndex('dashboard_login_failures_at').on('dashboard_login_failures').column('at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['dashboard_login_failures', 'dashboard_audit', 'dashboard_sessions', 'dashboard_users']) {
    await db.schema.dropTable(table).execute();
  }
}
