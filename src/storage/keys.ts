import type { Kysely } from '#kysely';
import type { ApiKeysTable, Database } from './schema.js';
import { serialiseOn, type Write } from './write.js';

export type ApiKeyRecord = ApiKeysTable;

/** Keys per transaction of a last-used flush: about 3 ms of SQLite's synchronous driver each. */
export const LAST_USED_PER_WRITE = 100;

/** API keys. Every change of one records an auth change (D4: every instance drops its cached keys). */
export function createKeysRepository(db: Kysely<Database>, write: Write) {
  return {
    /**
     * Adds a key; with `maxActive`, only while its account has fewer active (not revoked) keys in
     * its country, else nothing is written and the answer is false (issue 40 item 9). The count
     * and the insert are one transaction that no other create for the same account and country
     * runs beside (SQLite: the write lock, BEGIN IMMEDIATE; PostgreSQL: an advisory lock on the
     * pair, which read committed needs, since two transactions would each count the keys
     * committed before either inserted), so concurrent creates on any number of instances never
     * pass the cap together.
     */
    async create(key: ApiKeyRecord, maxActive?: number): Promise<boolean> {
      return write(async (tx, changes) => {
        if (maxActive !== undefined) {
          await serialiseOn(tx, `api keys ${key.account_id} ${key.country}`);
          const { n } = await tx
            .selectFrom('api_keys')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('account_id', '=', key.account_id)
            .where('country', '=', key.country)
            .where('revoked_at', 'is', null)
            .executeTakeFirstOrThrow();
          if (Number(n) >= maxActive) return false;
        }
        await tx.insertInto('api_keys').values(key).execute();
        await changes.recordAuth();
        return true;
      });
    },
    async get(id: string): Promise<ApiKeyRecord | undefined> {
      return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** The hot-path lookup: by the SHA-256 of the presented key (unique index). */
    async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
      return db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    },
    /**
     * A page of keys in id order (keyset: ids after `afterId`), with what the warm-up reads of
     * each (readmodel/warm-up.ts): whose tenant, when last used, whether revoked. A primary-key
     * range of `limit` rows: the warm-up reads every key a page at a time, so no read holds
     * SQLite's synchronous driver long however many keys there are.
     */
    async pageById(afterId: string, limit: number): Promise<Array<Pick<ApiKeyRecord, 'id' | 'account_id' | 'country' | 'last_used_at' | 'revoked_at'>>> {
      return db.selectFrom('api_keys').select(['id', 'account_id', 'country', 'last_used_at', 'revoked_at']).where('id', '>', afterId).orderBy('id').limit(limit).execute();
    },
    async listForAccount(accountId: string): Promise<ApiKeyRecord[]> {
      return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
    },
    /** Revokes once; a second revoke keeps the first time. Returns false for an unknown id. */
    async revoke(id: string, at: string): Promise<boolean> {
      return write(async (tx, changes) => {
        const result = await tx.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
        if (result.numUpdatedRows > 0n) await changes.recordAuth();
        return (await tx.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
      });
    },
    /**
     * Changes a key's label (dashboard). Scoped to the owning account as well as the id, so a key
     * of another account is never touched; returns false when no such key of that account exists.
     */
    async relabel(id: string, accountId: string, label: string): Promise<boolean> {
      return write(async (tx, changes) => {
        const result = await tx.updateTable('api_keys').set({ label }).where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
        await changes.recordAuth();
        return true;
      });
    },
    async setRateLimit(id: string, perMinute: number | null): Promise<boolean> {
      return write(async (tx, changes) => {
        const result = await tx.updateTable('api_keys').set({ rate_limit_per_minute: perMinute }).where('id', '=', id).executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
        await changes.recordAuth();
        return true;
      });
    },
    /**
     * Writes buffered last-used times (see usage/index.ts), LAST_USED_PER_WRITE keys per
     * transaction: a server that saw a thousand keys since the last flush holds the event loop a
     * few milliseconds at a time, not 30 ms at once (SQLite's driver is synchronous). Each write
     * is idempotent, so a flush that fails half-way is simply written again. Not an auth change:
     * the API never reads these times, so its caches stay.
     */
    async recordLastUsed(times: ReadonlyMap<string, string>): Promise<void> {
      const entries = [...times];
      for (let i = 0; i < entries.length; i += LAST_USED_PER_WRITE) {
        await write(async (tx) => {
          for (const [id, at] of entries.slice(i, i + LAST_USED_PER_WRITE)) {
            await tx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
          }
        });
      }
    },
  };
}

export type KeysRepository = ReturnType<typeof createKeysRepository>;
