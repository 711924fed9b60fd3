import type { Kysely } from '#kysely';

/**
 * Issue 43 item 3, on `webhook_endpoints`:
 *
 * - `replay_from`: a replay asked for (a change-feed cursor, D22), applied by the sender at the
 *   endpoint's next message boundary; `replay_until`: the position the endpoint had then, up to
 *   which its messages are replays; `message_replay`: the kept message is one.
 * - `only_change` (`upserted` or `removed`, null: both) and `only_usage_types` (a JSON array of
 *   usage type names, null: all): what the endpoint is told.
 *
 * And `webhook_attempts.replay`: the attempt sent a replayed message.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('replay_from', 'varchar(400)').execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('replay_until', 'varchar(400)').execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('message_replay', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('only_change', 'varchar(16)').execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('only_usage_types', 'varchar(1000)').execute();
  await db.schema.alterTable('webhook_attempts').addColumn('replay', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['replay_from', 'replay_until', 'message_replay', 'only_change', 'only_usage_types']) {
    await db.schema.alterTable('webhook_endpoints').dropColumn(column).execute();
  }
  await db.schema.alterTable('webhook_attempts').dropColumn('replay').execute();
}
