import type { Kysely } from '#kysely';
import type { Write } from './write.js';
import type { Database, DashboardFormsTable } from './schema.js';

export type FormUse = DashboardFormsTable;

/**
 * Single-use dashboard forms (migration 003): the first submission of a form claims its nonce with
 * one insert, which the database's primary key makes atomic across instances and processes; every
 * later submission of the same form finds the claim. The API never reads this table, so writes do
 * not move the store's change version.
 */
export function createFormsRepository(db: Kysely<Database>, write: Write) {
  return {
    /** Claims a form's nonce; false when it was claimed already (the form was used). */
    async claim(use: Omit<FormUse, 'key_id'>): Promise<boolean> {
      const result = await write((tx) => tx.insertInto('dashboard_forms')
        .values({ ...use, key_id: null })
        .onConflict((oc) => oc.column('nonce').doNothing())
        .executeTakeFirst());
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
    /** Notes the key the form created, for the page shown when it is submitted again. */
    async recordKey(nonce: string, keyId: string): Promise<void> {
      await write((tx) => tx.updateTable('dashboard_forms').set({ key_id: keyId }).where('nonce', '=', nonce).execute());
    },
    async get(nonce: string): Promise<FormUse | undefined> {
      return db.selectFrom('dashboard_forms').selectAll().where('nonce', '=', nonce).executeTakeFirst();
    },
    /** Gives a claim back when the form's action failed, so that the member can send it again. */
    async release(nonce: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_forms').where('nonce', '=', nonce).where('key_id', 'is', null).execute());
    },
    /** Forgets claims older than `at`; their forms have expired by then. */
    async deleteUsedBefore(at: string): Promise<void> {
      await write((tx) => tx.deleteFrom('dashboard_forms').where('used_at', '<', at).execute());
    },
  };
}

export type FormsRepository = ReturnType<typeof createFormsRepository>;
