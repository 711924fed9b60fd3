import type { Kysely } from '#kysely';
import type { Write } from './write.js';
import type { AccountKind, AccountsTable, Database } from './schema.js';

export type Account = AccountsTable;

export function createAccountsRepository(db: Kysely<Database>, write: Write) {
  return {
    async create(account: Account): Promise<void> {
      await write((tx) => tx.insertInto('accounts').values(account).execute());
    },
    async get(id: string): Promise<Account | undefined> {
      return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** Every account, oldest first (`listings-api account list`). */
    async list(): Promise<Account[]> {
      return db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').execute();
    },
    /** The kinds of the given accounts, for deriving `org_id` (D1) on import. */
    async kinds(ids: readonly string[]): Promise<Map<string, AccountKind>> {
      const kinds = new Map<string, AccountKind>();
      // Chunked so that a large import stays under SQLite's bound-parameter limit.
      for (let i = 0; i < ids.length; i += 500) {
        const rows = await db.selectFrom('accounts').select(['id', 'kind']).where('id', 'in', ids.slice(i, i + 500)).execute();
        for (const row of rows) kinds.set(row.id, row.kind);
      }
      return kinds;
    },
  };
}

export type AccountsRepository = ReturnType<typeof createAccountsRepository>;
