import { randomBytes } from 'node:crypto';
import type { Kysely } from '#kysely';
import type { Write } from './write.js';
import type { Database, DashboardAuditTable } from './schema.js';

export type AuditEntry = DashboardAuditTable;

/** The actor of changes made with the command line (`listings-api key ...`, `origin ...`): no member. */
export const CLI_ACTOR = 'operator (CLI)';

/** The dashboard's audit log: who changed which key or origin, and when. Never a full key (D20). */
export function createAuditRepository(db: Kysely<Database>, write: Write) {
  return {
    /**
     * Records an entry under a time-ordered id, so that entries of the same millisecond keep their
     * order. `rate_limit_per_minute` only concerns `key.limit_changed` and may be left out.
     */
    async record(entry: Omit<AuditEntry, 'id' | 'rate_limit_per_minute' | 'webhook_url'> & { rate_limit_per_minute?: number | null; webhook_url?: string | null }): Promise<void> {
      await write((tx) => tx.insertInto('dashboard_audit').values({ id: timeOrderedId(Date.parse(entry.at)), rate_limit_per_minute: null, webhook_url: null, ...entry }).execute());
    },
    /**
     * Newest first; with `before` (an entry's time and id), the entries older than it: keyset
     * paging on the (account, at) index, as cheap on the hundredth page as on the first.
     */
    async listForAccount(accountId: string, limit: number, before?: Pick<AuditEntry, 'at' | 'id'>): Promise<AuditEntry[]> {
      let query = db.selectFrom('dashboard_audit').selectAll().where('account_id', '=', accountId);
      if (before !== undefined) {
        query = query
          .where('at', '<=', before.at)
          .where((eb) => eb.or([eb('at', '<', before.at), eb('id', '<', before.id)]));
      }
      return query.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    },
    /** One entry of the account, by id (the activity page's cursor). */
    async get(accountId: string, id: string): Promise<AuditEntry | undefined> {
      return db.selectFrom('dashboard_audit').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    },
    /** Those of `keyIds` that a member created in the dashboard (a `key.created` entry with a member as actor). */
    async keysCreatedByMembers(accountId: string, keyIds: readonly string[]): Promise<Set<string>> {
      if (keyIds.length === 0) return new Set();
      const rows = await db
        .selectFrom('dashboard_audit')
        .select('key_id')
        .where('account_id', '=', accountId)
        .where('action', '=', 'key.created')
        .where('actor_user_id', 'is not', null)
        .where('key_id', 'in', [...keyIds])
        .execute();
      return new Set(rows.map((r) => r.key_id!));
    },
    /** Whether a member ever removed this origin of the account in the dashboard. */
    async originRemovedByMember(accountId: string, country: string, origin: string): Promise<boolean> {
      const row = await db
        .selectFrom('dashboard_audit')
        .select('id')
        .where('account_id', '=', accountId)
        .where('action', '=', 'origin.removed')
        .where('actor_user_id', 'is not', null)
        .where('country', '=', country)
        .where('origin', '=', origin)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;

let lastMs = -1;
let sequence = 0;

/**
 * A UUIDv7 (RFC 9562): 48 bits of milliseconds, then a 12-bit counter that keeps ids of one
 * millisecond in creation order within this process, then random bits. Its text sorts by time.
 */
export function timeOrderedId(ms: number): string {
  if (ms === lastMs) sequence = (sequence + 1) & 0xfff;
  else {
    lastMs = ms;
    sequence = 0;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
