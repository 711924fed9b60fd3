import { sql, type Kysely, type Migration } from '#kysely';
import { createWebhookTables, WEBHOOK_TABLES } from './webhook-tables.js';

/**
 * SQLite: the webhook delivery state moves to a file of its own beside the main one (issue 43;
 * storage/database.ts webhooksSqliteFile), with its own write lock, so that a delivery (its lease,
 * its message kept before it is sent, D24) never waits for a write to the main file: an import's
 * swap holds that one for seconds. PostgreSQL keeps one database (row locks): nothing to do there.
 *
 * The rows move exactly once without a transaction across the two files (SQLite in WAL mode does
 * not make one atomic): under the main file's write lock, the webhooks file's tables are replaced
 * by a copy of the main file's, committed there; then the main file's are dropped and that is
 * committed. A crash before the drop's commit leaves the main file as it was, and the next run
 * replaces the copy again; one after it finds nothing left to move. Undone, the rows are copied
 * back into tables made again in the main file (whose record is removed only after that commits);
 * the webhooks file is left as it is, and a later `up` replaces what it holds.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function webhooksOwnFile(webhooks: Kysely<any> | undefined): Migration {
  return {
    async up(db) {
      if (webhooks === undefined || !(await hasWebhookTables(db))) return;
      await underWriteLock(db, async () => {
        await webhooks.transaction().execute(async (tx) => copyRows(db, tx));
        for (const table of WEBHOOK_TABLES) await db.schema.dropTable(table).execute();
      });
    },
    async down(db) {
      if (webhooks === undefined) return;
      await underWriteLock(db, async () => {
        await createWebhookTables(db);
        await copyRows(webhooks, db);
      });
    },
  };
}

/** Rows copied a page at a time, by id. */
const PAGE = 200;

/** Makes `to`'s webhook tables hold what `from`'s hold. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function copyRows(from: Kysely<any>, to: Kysely<any>): Promise<void> {
  for (const table of WEBHOOK_TABLES) {
    await to.deleteFrom(table).execute();
    for (let after = ''; ;) {
      const rows = await from.selectFrom(table).selectAll().where('id', '>', after).orderBy('id').limit(PAGE).execute();
      if (rows.length === 0) break;
      await to.insertInto(table).values(rows).execute();
      after = rows[rows.length - 1]!.id as string;
    }
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function hasWebhookTables(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name = 'webhook_endpoints'`.execute(db);
  return rows.length > 0;
}

/** `db` is the migration's connection (Kysely runs SQLite migrations outside any transaction). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function underWriteLock(db: Kysely<any>, fn: () => Promise<void>): Promise<void> {
  await sql`begin immediate`.execute(db);
  try {
    await fn();
    await sql`commit`.execute(db);
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => undefined);
    throw error;
  }
}
