import type { Kysely } from '#kysely';
import { createWebhookTables } from '../webhook-tables.js';

/**
 * The webhook delivery state's own SQLite file (issue 43; storage/database.ts webhooksSqliteFile):
 * the endpoints with their leases, kept messages and positions, and the attempt log. Main
 * migration 016 moves an existing database's rows here.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await createWebhookTables(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
}
