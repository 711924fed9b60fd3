import type { Kysely } from 'kysely';
import type { AllowedOriginsTable, Database } from './schema.js';

export type AllowedOrigin = AllowedOriginsTable;

export function createOriginsRepository(db: Kysely<Database>, changed: () => Promise<void>) {
  return {
    /** Adds an origin (already normalised); returns false when it was registered already. */
    async add(origin: AllowedOrigin): Promise<boolean> {
      const result = await db
        .insertInto('allowed_origins')
        .values(origin)
        .onConflict((oc) => oc.columns(['account_id', 'country', 'origin']).doNothing())
        .executeTakeFirst();
      await changed();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
    /** Returns false when there was nothing to remove. */
    async remove(accountId: string, country: string, origin: string): Promise<boolean> {
      const result = await db
        .deleteFrom('allowed_origins')
        .where('account_id', '=', accountId)
        .where('country', '=', country)
        .where('origin', '=', origin)
        .executeTakeFirst();
      await changed();
      return result.numDeletedRows > 0n;
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
