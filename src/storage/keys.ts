import type { Kysely } from 'kysely';
import type { ApiKeysTable, Database } from './schema.js';

export type ApiKeyRecord = ApiKeysTable;

export function createKeysRepository(db: Kysely<Database>, changed: () => Promise<void>) {
  return {
    async create(key: ApiKeyRecord): Promise<void> {
      await db.insertInto('api_keys').values(key).execute();
      await changed();
    },
    async get(id: string): Promise<ApiKeyRecord | undefined> {
      return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** The hot-path lookup: by the SHA-256 of the presented key (unique index). */
    async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
      return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    },
    async listForAccount(accountId: string): Promise<ApiKeyRecord[]> {
      return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    },
    /** Revokes once; a second revoke keeps the first time. Returns false for an unknown id. */
    async revoke(id: string, at: string): Promise<boolean> {
      await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
      await changed();
      return (await this.get(id)) !== undefined;
    },
    /**
     * Changes a key's label (dashboard). Scoped to the owning account as well as the id, so a key
     * of another account is never touched; returns false when no such key of that account exists.
     */
    async relabel(id: string, accountId: string, label: string): Promise<boolean> {
      const result = await db.updateTable('api_keys').set({ label }).where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
      await changed();
      return result.numUpdatedRows > 0n;
    },
    async setRateLimit(id: string, perMinute: number | null): Promise<boolean> {
      const result = await db.updateTable('api_keys').set({ rate_limit_per_minute: perMinute }).where('id', '=', id).executeTakeFirst();
      await changed();
      return result.numUpdatedRows > 0n;
    },
    /** Writes buffered last-used times in one transaction (see auth/last-used.ts). */
    async recordLastUsed(times: ReadonlyMap<string, string>): Promise<void> {
      if (times.size === 0) return;
      await db.transaction().execute(async (tx) => {
        for (const [id, at] of times) {
          await tx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
        }
      });
    },
  };
}

export type KeysRepository = ReturnType<typeof createKeysRepository>;
