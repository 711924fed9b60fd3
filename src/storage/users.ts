import type { Kysely } from '#kysely';
import type { Write } from './write.js';
import type { Database, DashboardUsersTable } from './schema.js';

export type DashboardUser = DashboardUsersTable;

/**
 * Dashboard members. The API never reads these tables, so writes here do not move the store's
 * change version (that would only empty the API's caches for nothing).
 */
export function createUsersRepository(db: Kysely<Database>, write: Write) {
  return {
    async create(user: DashboardUser): Promise<void> {
      await write((tx) => tx.insertInto('dashboard_users').values(user).execute());
    },
    async get(id: string): Promise<DashboardUser | undefined> {
      return db.selectFrom('dashboard_users').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** By email, already normalised (trimmed, lowercase). */
    async findByEmail(email: string): Promise<DashboardUser | undefined> {
      return db.selectFrom('dashboard_users').selectAll().where('email', '=', email).executeTakeFirst();
    },
    async listForAccount(accountId: string): Promise<DashboardUser[]> {
      return db.selectFrom('dashboard_users').selectAll().where('account_id', '=', accountId).orderBy('email').execute();
    },
    async setPasswordHash(id: string, passwordHash: string): Promise<boolean> {
      const result = await write((tx) => tx.updateTable('dashboard_users').set({ password_hash: passwordHash }).where('id', '=', id).executeTakeFirst());
      return result.numUpdatedRows > 0n;
    },
    async recordSignIn(id: string, at: string): Promise<void> {
      await write((tx) => tx.updateTable('dashboard_users').set({ last_sign_in_at: at }).where('id', '=', id).execute());
    },
  };
}

export type UsersRepository = ReturnType<typeof createUsersRepository>;
