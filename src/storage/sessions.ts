import { sql, type Kysely } from '#kysely';
import { isPostgres } from './database.js';
import type { Write } from './write.js';
import type { Database, DashboardLoginFailuresTable, DashboardSessionsTable, DashboardUsersTable } from './schema.js';

export type DashboardSession = DashboardSessionsTable;
export type SignInFailure = DashboardLoginFailuresTable;

/**
 * Dashboard sessions, keyed by the SHA-256 of the session id (the id itself lives only in the
 * member's cookie). Kept in the database so that a session works on every instance. Not read by
 * the API, so writes do not move the store's change version.
 */
export function createSessionsRepository(db: Kysely<Database>, write: Write) {
  return {
    async create(session: DashboardSession): Promise<void> {
      await write((tx) => tx.insertInto('dashboard_sessions').values(session).execute());
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
        user: {
          id: row.id,
          account_id: row.account_id,
          email: row.email,
          password_hash: row.password_hash,
          created_at: row.created_at,
          last_sign_in_at: row.last_sign_in_at,
        },
      };
    },
    async touch(idHash: string, lastSeenAt: string, expiresAt: string): Promise<void> {
      await write((tx) => tx.updateTable('dashboard_sessions').set({ last_seen_at: lastSeenAt, expires_at: expiresAt }).where('id_hash', '=', idHash).execute());
    },
    async delete(idHash: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).execute());
    },
    /** Signs a member out everywhere (e.g. after a password change). */
    async deleteForUser(userId: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute());
    },
    async deleteExpired(now: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute());
    },
  };
}

/** Failed sign-ins, per email and per client (dashboard/throttle.ts), for throttling across instances. */
export function createSignInFailuresRepository(db: Kysely<Database>, write: Write) {
  const times = async (q: Kysely<Database>, by: { email: string; ip?: string } | { ip: string }, since: string): Promise<string[]> => {
    let query = q.selectFrom('dashboard_login_failures').select('at').where('at', '>', since);
    if ('email' in by) query = query.where('email', '=', by.email);
    if (by.ip !== undefined) query = query.where('ip', '=', by.ip);
    const rows = await query.orderBy('at').limit(1000).execute();
    return rows.map((r) => r.at);
  };
  /** The email's failures since `since` from clients other than `ip`. */
  const othersFailures = async (q: Kysely<Database>, email: string, ip: string, since: string): Promise<number> => {
    const { n } = await q.selectFrom('dashboard_login_failures').select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('email', '=', email).where('ip', '<>', ip).where('at', '>', since).executeTakeFirstOrThrow();
    return Number(n);
  };
  return {
    /**
     * Reserves one sign-in attempt atomically, before the password is checked: within one write
     * transaction (serialised per email and per client: SQLite's write lock, advisory locks on
     * PostgreSQL) the failures of the window are read (this client's for this email, and this
     * client's for any email), `decide` says how long the attempt must wait (0: it may go ahead),
     * and an attempt that may go ahead is recorded as a failure at once. So any number of
     * parallel attempts, on any number of instances, reach the password check at most as often
     * as the limits allow. The row is taken back when the password is right. A reserved attempt
     * also learns how many failures other clients made at the email (the account side's delay).
     *
     * An attempt that must wait already by the failures committed so far is refused before any
     * lock is taken: a burst of attempts (150 at once for one email) would otherwise queue one
     * transaction each behind the email's lock, holding pool connections, and those waiting longest
     * for a connection would fail with 500 instead of 429. The check under the locks decides.
     */
    async reserve(
      attempt: SignInFailure,
      since: string,
      decide: (byEmailAndClient: readonly string[], byClient: readonly string[]) => number,
    ): Promise<{ reserved: true; othersFailures: number } | { reserved: false; waitMs: number }> {
      const pair = { email: attempt.email, ip: attempt.ip };
      const early = decide(await times(db, pair, since), await times(db, { ip: attempt.ip }, since));
      if (early > 0) return { reserved: false, waitMs: early };
      return write(async (tx) => {
        if (isPostgres(tx)) {
          // Email before client, always: two attempts never wait on each other's locks in a cycle.
          await sql`select pg_advisory_xact_lock(hashtextextended(${`sign-in email ${attempt.email}`}, 0))`.execute(tx);
          await sql`select pg_advisory_xact_lock(hashtextextended(${`sign-in address ${attempt.ip}`}, 0))`.execute(tx);
        }
        const waitMs = decide(await times(tx, pair, since), await times(tx, { ip: attempt.ip }, since));
        if (waitMs > 0) return { reserved: false as const, waitMs };
        const others = await othersFailures(tx, attempt.email, attempt.ip, since);
        await tx.insertInto('dashboard_login_failures').values(attempt).execute();
        return { reserved: true as const, othersFailures: others };
      });
    },
    /** Takes back a reservation (the password was right, or the attempt was not made). */
    async release(id: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_login_failures').where('id', '=', id).execute());
    },
    /** Times (ascending) of the failures since `since` for this email (from this client, if given), or for this client. */
    async since(by: { email: string; ip?: string } | { ip: string }, since: string): Promise<string[]> {
      return times(db, by, since);
    },
    /** Forgets this client's failures for this email (its member signed in from it). */
    async clearEmailFrom(email: string, ip: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_login_failures').where('email', '=', email).where('ip', '=', ip).execute());
    },
    async deleteBefore(at: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_login_failures').where('at', '<', at).execute());
    },
  };
}

export type SessionsRepository = ReturnType<typeof createSessionsRepository>;
export type SignInFailuresRepository = ReturnType<typeof createSignInFailuresRepository>;
