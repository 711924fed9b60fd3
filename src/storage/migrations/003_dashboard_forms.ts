import type { Kysely } from '#kysely';

/**
 * Single-use dashboard forms: a row per create-key form that was submitted, so that submitting the
 * same form again (a reload of the page that shows the new key, a double click) mints no second key,
 * on whichever instance or process it lands. Portable SQL like 001 and 002 (varchar, ISO 8601 text
 * timestamps), for SQLite and PostgreSQL alike. Holds no secret: the nonce only names a form, and
 * the key is referred to by id (D20).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dashboard_forms')
    .addColumn('nonce', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('account_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(36)', (c) => c.notNull().references('dashboard_users.id').onDelete('cascade'))
    .addColumn('key_id', 'varchar(36)')
    .addColumn('used_at', 'varchar(30)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_forms_used_at').on('dashboard_forms').column('used_at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dashboard_forms').execute();
}
