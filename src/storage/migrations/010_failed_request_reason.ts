import type { Kysely } from '#kysely';

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
 * (`sg%255Flive%255F<secret>`, `sg_live_+<secret>`, `sg＿live＿<secret>`). Rather than a frozen
 * copy of today's redaction, a text of such a row that could hold one (see `mayHideKey`) is
 * replaced whole by HIDDEN: these rows are a short diagnostic history (the last 200 per account),
 * and losing a few of their texts is better than keeping a secret. In chunks in id order, each
 * changed row one UPDATE.
 */
const CHUNK = 500;
const HIDDEN = '[hidden: recorded before keys in every encoding were redacted]';

/**
 * A text the old redaction may have let a key through in: anything an escape, a decoder or
 * Unicode could turn into a key (`%`, `&`, `\`, any character past ASCII), or `live` outside a key
 * it already redacted (`sg_live_+<secret>` and the like). Generous on purpose. Frozen: this
 * migration's own rule, never the live redaction's (src/core/redact-keys.ts).
 */
function mayHideKey(text: string): boolean {
  return /[%&\\\u0080-\uffff]/.test(text) || /live/i.test(text.replace(/[a-z]{2}_live_\[redacted\]/gi, ''));
}
const hide = (text: string) => (mayHideKey(text) ? HIDDEN : text);

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
        path: hide(row.path),
        origin: row.origin === null ? null : hide(row.origin),
        message: hide(row.message),
        request_id: hide(row.request_id),
      };
      const changed = redacted.path !== row.path || redacted.origin !== row.origin || redacted.message !== row.message
        || redacted.request_id !== row.request_id;
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
