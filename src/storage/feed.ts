import type { Kysely } from '#kysely';
import { SERVED_COLUMNS, withBodies, type ServedListingRow } from './listings.js';
import { visibleListings } from './visibility.js';
import type { Database } from './schema.js';
import type { Write } from './write.js';

/** Changes forgotten per transaction of a prune. */
export const PRUNE_BATCH = 200;

/**
 * The queries of the change feed (D22; readmodel/feed.ts puts them together). Each reads one page
 * of one tenant through an index made for it (migrations 004 and 006), so an answer costs its
 * page, whatever the tenant's size or history.
 */
export interface LastChange {
  seq: number;
  listing_id: string;
  at: string;
}

export interface Expiry {
  id: string;
  expiry_date: string;
  updated_at: string;
}

export function createFeedRepository(db: Kysely<Database>, write: Write) {
  /** Active listings of a tenant. */
  const active = (ownerAccountId: string, country: string) => visibleListings(db.selectFrom('listings'), { ownerAccountId, country });

  return {
    /** The deployment's key for signing cursors (made by migration 006). */
    async cursorSecret(): Promise<string> {
      return (await db.selectFrom('store_secrets').select('value').where('name', '=', 'feed_cursor').executeTakeFirstOrThrow()).value;
    },

    /** The highest sequence pruned from a tenant's history (0: its history is whole). */
    async prunedSeq(ownerAccountId: string, country: string): Promise<number> {
      const row = await db.selectFrom('tenant_versions').select('pruned_seq').where('owner_account_id', '=', ownerAccountId).where('country', '=', country).executeTakeFirst();
      return Number(row?.pruned_seq ?? 0);
    },

    /** The sequence of the tenant's last change kept that was made before `at`; undefined when none is kept. */
    async lastSeqBefore(ownerAccountId: string, country: string, at: string): Promise<number | undefined> {
      const row = await db.selectFrom('listing_changes').select('seq').where('owner_account_id', '=', ownerAccountId).where('country', '=', country)
        .where('at', '<', at).orderBy('seq', 'desc').limit(1).executeTakeFirst();
      return row === undefined ? undefined : Number(row.seq);
    },

    /**
     * A tenant's changes after `afterSeq` in order, each the last change of its listing in this
     * tenant (an earlier one says nothing the later one does not), at most `limit`.
     */
    async lastChanges(ownerAccountId: string, country: string, afterSeq: number, limit: number): Promise<LastChange[]> {
      const rows = await db
        .selectFrom('listing_changes as c')
        .select(['c.seq', 'c.listing_id', 'c.at'])
        .where('c.owner_account_id', '=', ownerAccountId)
        .where('c.country', '=', country)
        .where('c.seq', '>', afterSeq)
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('listing_changes as later').select('later.seq')
            .whereRef('later.owner_account_id', '=', 'c.owner_account_id')
            .whereRef('later.country', '=', 'c.country')
            .whereRef('later.listing_id', '=', 'c.listing_id')
            .whereRef('later.seq', '>', 'c.seq'))))
        .orderBy('c.seq')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ seq: Number(r.seq), listing_id: r.listing_id, at: r.at }));
    },

    /**
     * Active listings of a tenant whose expiry is after the position (expiry, id) and at or
     * before `until`, in that order, at most `limit` (D10: each stopped being visible then).
     */
    async expiries(ownerAccountId: string, country: string, after: { expiry: string; id: string }, until: string, limit: number): Promise<Expiry[]> {
      const base = () => active(ownerAccountId, country).select(['id', 'expiry_date', 'updated_at']).where('expiry_date', '<=', until).orderBy('expiry_date').orderBy('id');
      const rows = await base().where('expiry_date', '=', after.expiry).where('id', '>', after.id).limit(limit).execute();
      if (rows.length < limit) rows.push(...(await base().where('expiry_date', '>', after.expiry).limit(limit - rows.length).execute()));
      return rows as Expiry[];
    },

    /** The soonest expiry after `now` of the tenant's active listings: when its feed next changes by time alone (D10). */
    async nextExpiry(ownerAccountId: string, country: string, now: string): Promise<string | undefined> {
      const row = await active(ownerAccountId, country).select('expiry_date').where('expiry_date', '>', now).orderBy('expiry_date').limit(1).executeTakeFirst();
      return row?.expiry_date ?? undefined;
    },

    /**
     * The tenant's visible listings (D10 at `now`) in the order their state took effect (updated
     * time, then id), after a position, at most `limit`: the first answer of a feed.
     */
    async snapshot(
      ownerAccountId: string,
      country: string,
      now: string,
      after: { updatedAt: string; id: string } | undefined,
      limit: number,
    ): Promise<ServedListingRow[]> {
      const base = () =>
        visibleListings(db.selectFrom('listings').select(SERVED_COLUMNS), { ownerAccountId, country }, now)
          .orderBy('updated_at')
          .orderBy('id');
      if (after === undefined) return withBodies(db, await base().limit(limit).execute());
      const rows = await base().where('updated_at', '=', after.updatedAt).where('id', '>', after.id).limit(limit).execute();
      if (rows.length < limit) rows.push(...(await base().where('updated_at', '>', after.updatedAt).limit(limit - rows.length).execute()));
      return withBodies(db, rows);
    },

    /**
     * Forgets changes older than `before` (D22 keeps at least 30 days), a batch at a time so that
     * no transaction holds the database (and, on SQLite, the event loop) long, noting per tenant
     * the highest sequence forgotten (a cursor from before it can no longer be served). Returns
     * how many were forgotten. 200 changes are about 3 ms on SQLite; each index of listing_changes
     * loses one entry per change at a random place, so larger batches cost more per change, not less.
     */
    async prune(before: string, batch = PRUNE_BATCH): Promise<number> {
      let total = 0;
      for (;;) {
        const removed = await write(async (tx) => {
          const rows = await tx.selectFrom('listing_changes').select(['seq', 'owner_account_id', 'country']).where('at', '<', before).orderBy('seq').limit(batch).execute();
          if (rows.length === 0) return 0;
          const highest = new Map<string, { owner: string; country: string; seq: number }>();
          for (const row of rows) highest.set(`${row.owner_account_id}\n${row.country}`, { owner: row.owner_account_id, country: row.country, seq: Number(row.seq) });
          for (const { owner, country, seq } of highest.values()) {
            await tx.updateTable('tenant_versions').set({ pruned_seq: seq }).where('owner_account_id', '=', owner).where('country', '=', country).where('pruned_seq', '<', seq).execute();
          }
          // By the sequences read: a range with `at < before` lets the planner choose the index by
          // time, which holds every old change, and each batch then walked all of them.
          await tx.deleteFrom('listing_changes').where('seq', 'in', rows.map((row) => Number(row.seq))).execute();
          return rows.length;
        });
        total += removed;
        if (removed < batch) return total;
      }
    },
  };
}

export type FeedRepository = ReturnType<typeof createFeedRepository>;
