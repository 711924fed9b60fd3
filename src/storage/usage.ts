import { sql, type Kysely } from '#kysely';
import { timeOrderedId } from './audit.js';
import { isPostgres } from './database.js';
import type { ApiFailedRequestsTable, ApiUsageTable, Database } from './schema.js';
import type { Write } from './write.js';

export type UsageRow = ApiUsageTable;
export type FailedRequest = ApiFailedRequestsTable;

/** How many failed requests are kept per account (issue 12): older ones go in the batch that adds newer ones. */
export const FAILED_REQUESTS_KEPT = 200;

/** Part of a flush of an instance's usage buffer (src/usage): counts to add, failures to keep. */
export interface UsageBatch {
  counts: readonly UsageRow[];
  /** `sec_fetch` may be left out (null: not recorded), as by a release before migration 013. */
  failures: ReadonlyArray<Omit<FailedRequest, 'id' | 'sec_fetch'> & { sec_fetch?: string | null }>;
}

/** Requests of one bucket (or one day) and outcome. */
export interface BucketCount {
  bucket_start: string;
  outcome: string;
  n: number;
}

/**
 * Failed requests alike (issue 33 item 7): of one key, status, code, reason and origin, with how
 * many there are, the first and last seen, how many of them a browser sent (Fetch Metadata) and how
 * many it surely did not, and the id of the newest.
 */
export interface FailureGroup {
  key_id: string;
  status: number;
  code: string;
  reason: string | null;
  origin: string | null;
  n: number;
  first_at: string;
  last_at: string;
  last_id: string;
  from_browser: number;
  not_browser: number;
}

export interface FailureFilter {
  keyId?: string;
  code?: string;
}

/** Old buckets deleted per transaction of a prune: a few ms of SQLite's synchronous driver each. */
export const USAGE_PRUNE_BATCH = 250;

/** Rows per INSERT statement (well under SQLite's limit of bound parameters). */
const CHUNK = 400;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Usage per key and the failed-request ring (migration 007). Written only in batches, never per
 * request; read only by the dashboard. The API never reads these tables, so their writes record no
 * change (that would only empty its caches).
 */
export function createUsageRepository(db: Kysely<Database>, write: Write) {
  return { ...usageRecording(write), ...usageReports(db), ...failedRequestReports(db) };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;

/** The writes: flushes of the instances' usage buffers, and the prune of old buckets. */
function usageRecording(write: Write) {
  return {
    /**
     * One transaction: adds the counts (an upsert that adds, so instances sum) and keeps the
     * failures. The counter (src/usage) sends a flush as several of these, each small.
     */
    async recordBatch(batch: UsageBatch): Promise<void> {
      if (batch.counts.length === 0 && batch.failures.length === 0) return;
      // In primary-key order, so that two instances' batches lock rows in the same order (PostgreSQL).
      const counts = [...batch.counts].sort((a, b) =>
        a.key_id < b.key_id ? -1
          : a.key_id > b.key_id ? 1
          : a.span - b.span
            || (a.bucket_start < b.bucket_start ? -1 : a.bucket_start > b.bucket_start ? 1 : a.outcome < b.outcome ? -1 : a.outcome > b.outcome ? 1 : 0));
      await write(async (tx) => {
        for (const chunk of chunks(counts, CHUNK)) {
          await tx
            .insertInto('api_usage')
            .values(chunk)
            .onConflict((oc) => oc.columns(['key_id', 'span', 'bucket_start', 'outcome']).doUpdateSet({ n: sql<number>`api_usage.n + excluded.n` }))
            .execute();
        }
        const failures = batch.failures.map((f) => ({ ...f, sec_fetch: f.sec_fetch ?? null, id: timeOrderedId(Date.parse(f.at)) }));
        // PostgreSQL: one instance at a time trims an account's ring, or two flushes at once each
        // keep 200 without seeing the other's new rows. (SQLite has one writer at a time anyway.)
        const accounts = [...new Set(failures.map((f) => f.account_id))].sort();
        // FOR NO KEY UPDATE: it does not wait for the key-share locks that inserts referencing the
        // account (an import's listings, a new key) hold.
        if (accounts.length > 0 && isPostgres(tx)) await tx.selectFrom('accounts').select('id').where('id', 'in', accounts).orderBy('id').forNoKeyUpdate().execute();
        for (const chunk of chunks(failures, CHUNK)) await tx.insertInto('api_failed_requests').values(chunk).execute();
        // The ring: each account that got failures keeps its newest FAILED_REQUESTS_KEPT.
        for (const accountId of accounts) {
          await tx
            .deleteFrom('api_failed_requests')
            .where('account_id', '=', accountId)
            .where('id', 'not in', (qb) =>
              qb.selectFrom('api_failed_requests').select('id').where('account_id', '=', accountId).orderBy('at', 'desc').orderBy('id', 'desc').limit(FAILED_REQUESTS_KEPT))
            .execute();
        }
      });
    },

    /**
     * Deletes the buckets of each span that start before its time (span in seconds -> ISO time),
     * USAGE_PRUNE_BATCH rows per transaction: when a five-minute bucket of a thousand keys falls
     * out of its retention, its rows go a few milliseconds at a time. Returns how many went.
     */
    async pruneBuckets(before: ReadonlyMap<number, string>): Promise<number> {
      let total = 0;
      for (const [span, time] of before) {
        for (;;) {
          const deleted = await write(async (tx) => {
            const result = await sql`delete from api_usage where (key_id, span, bucket_start, outcome) in (
              select key_id, span, bucket_start, outcome from api_usage where span = ${span} and bucket_start < ${time} limit ${USAGE_PRUNE_BATCH})`.execute(tx);
            return Number(result.numAffectedRows ?? 0);
          });
          total += deleted;
          if (deleted < USAGE_PRUNE_BATCH) break;
        }
      }
      return total;
    },
  };
}

/** The usage counts as the dashboard reads them: by key, by account, and as a series. */
function usageReports(db: Kysely<Database>) {
  return {
    /** A key's buckets of one span from `since` on, oldest first. */
    async bucketsOfKey(keyId: string, span: number, since: string): Promise<UsageRow[]> {
      return db
        .selectFrom('api_usage')
        .selectAll()
        .where('key_id', '=', keyId)
        .where('span', '=', span)
        .where('bucket_start', '>=', since)
        .orderBy('bucket_start')
        .orderBy('outcome')
        .execute();
    },

    /** Per key of the account and outcome: the requests in buckets of `span` from `since` on. */
    async totalsOfAccount(accountId: string, span: number, since: string): Promise<Array<{ key_id: string; outcome: string; n: number }>> {
      const rows = await db
        .selectFrom('api_usage')
        .select(['key_id', 'outcome', (eb) => eb.fn.sum<number | string>('n').as('n')])
        .where('account_id', '=', accountId)
        .where('span', '=', span)
        .where('bucket_start', '>=', since)
        .groupBy(['key_id', 'outcome'])
        .execute();
      // PostgreSQL's sum of integers is a bigint, which the driver gives as text.
      return rows.map((r) => ({ key_id: r.key_id, outcome: r.outcome, n: Number(r.n) }));
    },

    /**
     * Requests of the account (or of one of its keys) per bucket of `span` and outcome, from `since`
     * on; `byDay` sums each UTC day's buckets. One GROUP BY on the (account, span, bucket) index: it
     * reads a row per key, bucket and outcome, never anything per request, so 30 days of hours are
     * at most 720 rows a key and outcome however busy the keys were.
     */
    async series(accountId: string, opts: { keyId?: string; span: number; since: string; byDay?: boolean }): Promise<BucketCount[]> {
      const bucket = opts.byDay === true ? sql<string>`substr(bucket_start, 1, 10)` : sql<string>`bucket_start`;
      let query = db
        .selectFrom('api_usage')
        .select([bucket.as('bucket_start'), 'outcome', (eb) => eb.fn.sum<number | string>('n').as('n')])
        .where('account_id', '=', accountId)
        .where('span', '=', opts.span)
        .where('bucket_start', '>=', opts.since);
      if (opts.keyId !== undefined) query = query.where('key_id', '=', opts.keyId);
      const rows = await query.groupBy([bucket, 'outcome']).orderBy(bucket).orderBy('outcome').execute();
      return rows.map((r) => ({ bucket_start: r.bucket_start, outcome: r.outcome, n: Number(r.n) }));
    },
  };
}

/** The account's kept failed requests, of one key and one error code when the filter says so. */
function failedRequestsOf(db: Kysely<Database>, accountId: string, filter: FailureFilter) {
  let query = db.selectFrom('api_failed_requests').where('account_id', '=', accountId);
  if (filter.keyId !== undefined) query = query.where('key_id', '=', filter.keyId);
  if (filter.code !== undefined) query = query.where('code', '=', filter.code);
  return query;
}

/** The failed-request ring as the dashboard reads it: the requests, their groups, one by its id. */
function failedRequestReports(db: Kysely<Database>) {
  return {
    /** The account's kept failed requests, newest first, optionally of one key and one error code. */
    async failures(accountId: string, filter: FailureFilter = {}): Promise<FailedRequest[]> {
      return failedRequestsOf(db, accountId, filter).selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(FAILED_REQUESTS_KEPT).execute();
    },

    /**
     * A page of the account's failed requests grouped by key, status, code, reason and origin, the
     * most recently seen group first: one GROUP BY with LIMIT and OFFSET (an account keeps at most
     * FAILED_REQUESTS_KEPT rows, so OFFSET never skips far), and the number of groups in all.
     */
    async failureGroups(
      accountId: string,
      filter: FailureFilter,
      page: { limit: number; offset: number },
    ): Promise<{ groups: FailureGroup[]; total: number; requests: number }> {
      const base = failedRequestsOf(db, accountId, filter);
      const columns = ['key_id', 'status', 'code', 'reason', 'origin'] as const;
      const [rows, counts] = await Promise.all([
        base
          .select([
            ...columns,
            (eb) => eb.fn.countAll<number | string>().as('n'),
            (eb) => eb.fn.min('at').as('first_at'),
            (eb) => eb.fn.max('at').as('last_at'),
            (eb) => eb.fn.max('id').as('last_id'),
            sql<number | string>`sum(case when sec_fetch <> '' then 1 else 0 end)`.as('from_browser'),
            sql<number | string>`sum(case when sec_fetch = '' then 1 else 0 end)`.as('not_browser'),
          ])
          .groupBy([...columns])
          .orderBy((eb) => eb.fn.max('at'), 'desc')
          .orderBy((eb) => eb.fn.max('id'), 'desc')
          .limit(page.limit)
          .offset(page.offset)
          .execute(),
        db
          .selectFrom(base.select(columns).select((eb) => eb.fn.countAll<number | string>().as('n')).groupBy([...columns]).as('g'))
          .select([(eb) => eb.fn.countAll<number | string>().as('groups'), (eb) => eb.fn.sum<number | string>('g.n').as('requests')])
          .executeTakeFirstOrThrow(),
      ]);
      return {
        // PostgreSQL's count and sum are bigints, which the driver gives as text.
        groups: rows.map((r) => ({ ...r, n: Number(r.n), from_browser: Number(r.from_browser), not_browser: Number(r.not_browser) })),
        total: Number(counts.groups),
        requests: Number(counts.requests ?? 0),
      };
    },

    /**
     * The newest `perGroup` requests of each of these groups (newest first within each), by a
     * window function over the account's kept rows (at most FAILED_REQUESTS_KEPT).
     */
    async failuresOfGroups(accountId: string, groups: readonly FailureGroup[], perGroup: number): Promise<FailedRequest[]> {
      if (groups.length === 0) return [];
      const keyIds = [...new Set(groups.map((g) => g.key_id))];
      const codes = [...new Set(groups.map((g) => g.code))];
      const ranked = db
        .selectFrom('api_failed_requests')
        .selectAll()
        .select(sql<number>`row_number() over (partition by key_id, status, code, reason, origin order by at desc, id desc)`.as('rank'))
        .where('account_id', '=', accountId)
        .where('key_id', 'in', keyIds)
        .where('code', 'in', codes);
      const rows = await db.selectFrom(ranked.as('r')).selectAll().where('rank', '<=', perGroup).orderBy('at', 'desc').orderBy('id', 'desc').execute();
      const wanted = new Set(groups.map(groupKey));
      return rows.filter((r) => wanted.has(groupKey(r))).map(({ rank: _rank, ...row }) => row);
    },

    /** A kept failed request of the account by its request id (D19), or undefined. */
    async failureByRequestId(accountId: string, requestId: string): Promise<FailedRequest | undefined> {
      return db
        .selectFrom('api_failed_requests')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('request_id', '=', requestId)
        .orderBy('at', 'desc')
        .executeTakeFirst();
    },
  };
}

/** What a failed request is grouped by: key, status, code, reason and origin. */
export function groupKey(row: Pick<FailedRequest, 'key_id' | 'status' | 'code' | 'reason' | 'origin'>): string {
  return JSON.stringify([row.key_id, row.status, row.code, row.reason, row.origin]);
}
