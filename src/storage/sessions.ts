import type { Kysely } from 'kysely';
import type { Database, DashboardLoginFailuresTable, DashboardSessionsTable, DashboardUsersTable } from './schema.js';

export type DashboardSession = DashboardSessionsTable;
export type SignInFailure = DashboardLoginFailuresTable;

/**
 * Dashboard sessions, keyed by the SHA-256 of the session id (the id itself lives only in the
 * member's cookie). Kept in the database so that a session works on every instance. Not read by
 * the API, so writes do not move the store's change version.
 */
export function createSessionsRepository(db: Kysely<Database>) {
  return {
    async create(session: DashboardSession): Promise<void> {
      await db.insertInto('dashboard_sessions').values(session).execute();
    },
    /** The session and its member, in one query. */
    async findWithUser(idHash: string): Promise<{ session: DashboardSession; user: DashboardUsersTable } | undefined> {
      const row = await db
        .selectFrom('dashboard_sessions as s')
        .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
        .select([
          's.id_hash', 's.user_id', 's.created_at as s_created_at', 's.last_seen_at', 's.expires_at',
          'u.id', 'u.account_id', 'u.email', 'u.password_hash', 'u.created_at', 'u.last_sign_in_at',
        ])
        .where('s.id_hash', '=', idHash)
        .executeTakeFirst();
      if (row === undefined) return undefined;
      return {
        session: { id_hash: row.id_hash, user_id: row.user_id, created_at: row.s_created_at, last_seen_at: row.last_seen_at, expires_at: row.expires_at },
        user: { id: row.id, account_id: row.account_id, email: row.email, password_hash: row.password_hash, created_at: row.created_at, last_sign_in_at: row.last_sign_in_at },
      };
    },
    async touch(idHash: string, lastSeenAt: string, expiresAt: string): Promise<void> {
      await db.updateTable('dashboard_sessions').set({ last_seen_at: lastSeenAt, expires_at: expiresAt }).where('id_hash', '=', idHash).execute();
    },
    async delete(idHash: string): Promise<void> {
      await db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).execute();
    },
    /** Signs a member out everywhere (e.g. after a password change). */
    async deleteForUser(userId: string): Promise<void> {
      await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute();
    },
    async deleteExpired(now: string): Promise<void> {
      await db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute();
    },
  };
}

/** Failed sign-ins, per email and per client address, for throttling across instances. */
export function createSignInFailuresRepository(db: Kysely<Database>) {
  return {
    async record(failure: SignInFailure): Promise<void> {
      await db.insertInto('dashboard_login_failures').values(failure).execute();
    },
    /** Times (ascending) of the failures since `since` for this email, or for this address. */
    async since(by: { email: string } | { ip: string }, since: string): Promise<string[]> {
      let query = db.selectFrom('dashboard_login_failures').select('at').where('at', '>', since);
      query = 'email' in by ? query.where('email', '=', by.email) : query.where('ip', '=', by.ip);
      const rows = await query.orderBy('at').limit(1000).execute();
      return rows.map((r) => r.at);
    },
    async clearEmail(email: string): Promise<void> {
      await db.deleteFrom('dashboard_login_failures').where('email', '=', email).execute();
    },
    async deleteBefore(at: string): Promise<void> {
      await db.deleteFrom('dashboard_login_failures').where('at', '<', at).execute();
    },
  };
}

export type SessionsRepository = ReturnType<typeof createSessionsRepository>;
export type SignInFailuresRepository = ReturnType<typeof createSignInFailuresRepository>;
