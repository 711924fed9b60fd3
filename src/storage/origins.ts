import type { Kysely } from '#kysely';
import type { AllowedOriginsTable, Database } from './schema.js';
import type { Write } from './write.js';

export type AllowedOrigin = AllowedOriginsTable;

/** Registered browser origins (D17). Every change records an auth change (D4). */
export function createOriginsRepository(db: Kysely<Database>, write: Write) {
  return {
    /** Adds an origin (already normalised); returns false when it was registered already. */
    async add(origin: AllowedOrigin): Promise<boolean> {
      return write(async (tx, changes) => {
        const result = await tx
          .insertInto('allowed_origins')
          .values(origin)
          .onConflict((oc) => oc.columns(['account_id', 'country', 'origin']).doNothing())
          .executeTakeFirst();
        if ((result.numInsertedOrUpdatedRows ?? 0n) === 0n) return false;
        await changes.recordAuth();
        return true;
      });
    },
    /** Returns false when there was nothing to remove. */
    async remove(accountId: string, country: string, origin: string): Promise<boolean> {
      return write(async (tx, changes) => {
        const result = await tx
          .deleteFrom('allowed_origins')
          .where('account_id', '=', accountId)
          .where('country', '=', country)
          .where('origin', '=', origin)
          .executeTakeFirst();
        if (result.numDeletedRows === 0n) return false;
        await changes.recordAuth();
        return true;
      });
    },
    async listForAccount(accountId: string): Promise<AllowedOrigin[]> {
      return db.selectFrom('allowed_origins').selectAll().where('account_id', '=', accountId).orderBy('country').orderBy('origin').execute();
    },
    /** D17: is this exact (normalised) origin registered for the owner in this country? */
    async isAllowed(accountId: string, country: string, origin: string): Promise<boolean> {
      const row = await db
        .selectFrom('allowed_origins')
        .select('origin')
        .where('account_id', '=', accountId)
        .where('country', '=', country)
        .where('origin', '=', origin)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type OriginsRepository = ReturnType<typeof createOriginsRepository>;
