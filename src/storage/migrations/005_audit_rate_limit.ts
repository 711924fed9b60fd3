import type { Kysely } from '#kysely';

/**
 * The audit log records rate-limit changes (`key.limit_changed`, made with `listings-api key
 * set-limit`): the new per-minute limit needs a column of its own. Null for every other action.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dashboard_audit').addColumn('rate_limit_per_minute', 'integer').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dashboard_audit').dropColumn('rate_limit_per_minute').execute();
}
