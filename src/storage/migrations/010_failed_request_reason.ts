import type { Kysely } from '#kysely';
import { redactKeys } from './frozen/redact-keys-010.js';

/**
 * Failed requests keep why they failed and where from (issue 29 items 7 and 11):
 *
 * - `api_failed_requests.reason`: the refusing step's reason (`wrong_country`, `revoked_key`,
 *   `origin_not_registered`...), so that the dashboard's advice is about what happened then and
 *   not about the key's state now. Null for the rows already there: the dashboard gives them a
 *   neutral advice.
 * - `api_failed_requests.client_ip`: the client's address as the API saw it (redacted like the
 *   path). Null for the rows already there.
 *
 * The rows already there were redacted by an earlier, narrower redaction, which let keys through
 * (`sg%255Flive%255F<secret>`, `sg_live_+<secret>`, `sg＿live＿<secret>`): their path, origin,
 * message and request id are redacted again here, with this migration's own copy of the redaction
 * (frozen/redact-keys-010.ts), in chunks in id order, each changed row one UPDATE.
 */
const CHUNK = 500;
/** The columns' sizes (migration 007): a redacted text can be longer than the one it replaces. */
const COLUMNS = { path: 320, origin: 220, message: 320, request_id: 140 } as const;

interface Row {
  id: string;
  path: string;
  origin: string | null;
  message: string;
  request_id: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite's ALTER TABLE adds one at a time.
  await db.schema.alterTable('api_failed_requests').addColumn('reason', 'varchar(32)').execute();
  await db.schema.alterTable('api_failed_requests').addColumn('client_ip', 'varchar(64)').execute();

  let after = '';
  for (;;) {
    const rows = (await db
      .selectFrom('api_failed_requests')
      .select(['id', 'path', 'origin', 'message', 'request_id'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(CHUNK)
      .execute()) as Row[];
    if (rows.length === 0) break;
    for (const row of rows) {
      const redacted = {
        path: redactKeys(row.path).slice(0, COLUMNS.path),
        origin: row.origin === null ? null : redactKeys(row.origin).slice(0, COLUMNS.origin),
        message: redactKeys(row.message).slice(0, COLUMNS.message),
        request_id: redactKeys(row.request_id).slice(0, COLUMNS.request_id),
      };
      const changed = redacted.path !== row.path || redacted.origin !== row.origin || redacted.message !== row.message || redacted.request_id !== row.request_id;
      if (changed) await db.updateTable('api_failed_requests').set(redacted).where('id', '=', row.id).execute();
    }
    after = rows.at(-1)!.id;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  // What was redacted stays redacted.
  await db.schema.alterTable('api_failed_requests').dropColumn('client_ip').execute();
  await db.schema.alterTable('api_failed_requests').dropColumn('reason').execute();
}
