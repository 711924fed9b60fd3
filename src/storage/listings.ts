import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Database, ListingsTable } from './schema.js';

export type ListingRow = ListingsTable;

/** Which listings a key sees (D1) at a moment (D10). */
export interface Visibility {
  ownerAccountId: string;
  country: string;
  /** ISO 8601 UTC with milliseconds: listings whose expiry is at or before it are hidden (D10). */
  now: string;
}

/** D10: active, and not expired at `now`. Applied to every read the API makes. */
function visible<O>(query: SelectQueryBuilder<Database, 'listings', O>, v: Visibility) {
  return query
    .where('owner_account_id', '=', v.ownerAccountId)
    .where('country', '=', v.country)
    .where('status', '=', 'active')
    .where((eb) => eb.or([eb('expiry_date', 'is', null), eb('expiry_date', '>', v.now)]));
}

export function createListingsRepository(db: Kysely<Database>, changed: () => Promise<void>) {
  /** The read queries, unexecuted, so that tests can check their plans use the indexes. */
  const queries = {
    /** One page in the D9 order: featured first, newest first, then id as the tie-break. */
    page: (v: Visibility, limit: number, offset: number) =>
      visible(db.selectFrom('listings').selectAll(), v)
        .orderBy('is_featured', 'desc')
        .orderBy('created_at', 'desc')
        .orderBy('id', 'asc')
        .limit(limit)
        .offset(offset),
    summary: (v: Visibility) =>
      visible(db.selectFrom('listings').select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min('expiry_date').as('next_expiry')]), v),
    detail: (id: string, v: Visibility) => visible(db.selectFrom('listings').selectAll(), v).where('id', '=', id),
  };
  return {
    queries,
    async page(v: Visibility, limit: number, offset: number): Promise<ListingRow[]> {
      return queries.page(v, limit, offset).execute();
    },
    /**
     * How many listings the key sees, and the soonest expiry among them: until then, what it sees
     * cannot change by time alone (D10), which bounds how long a page may be cached.
     */
    async summary(v: Visibility): Promise<{ total: number; nextExpiry: string | null }> {
      const row = await queries.summary(v).executeTakeFirstOrThrow();
      return { total: Number(row.n), nextExpiry: row.next_expiry ?? null };
    },
    /** A listing the key can see, or undefined (D11: not found, not active, not owned all look alike). */
    async findVisible(id: string, v: Visibility): Promise<ListingRow | undefined> {
      return queries.detail(id, v).executeTakeFirst();
    },
    /**
     * Inserts or updates every row in one transaction: all or nothing. `keepCreatedAt` rows keep
     * the stored `created_at` when they update (the import line did not give one).
     */
    async upsertAll(rows: ReadonlyArray<{ row: ListingRow; keepCreatedAt: boolean }>): Promise<{ inserted: number; updated: number }> {
      const result = await db.transaction().execute(async (tx) => {
        const existing = new Set<string>();
        const ids = rows.map((r) => r.row.id);
        for (let i = 0; i < ids.length; i += 500) {
          const found = await tx.selectFrom('listings').select('id').where('id', 'in', ids.slice(i, i + 500)).execute();
          for (const f of found) existing.add(f.id);
        }
        for (const { row, keepCreatedAt } of rows) {
          const { id: _id, created_at, ...changes } = row;
          await tx
            .insertInto('listings')
            .values(row)
            .onConflict((oc) => oc.column('id').doUpdateSet(keepCreatedAt ? changes : { ...changes, created_at }))
            .execute();
        }
        return { inserted: rows.length - existing.size, updated: existing.size };
      });
      await changed();
      return result;
    },
  };
}

export type ListingsRepository = ReturnType<typeof createListingsRepository>;
