import type BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely, type RawBuilder } from '#kysely';
import { BODY_TAIL, listingBodyOf } from '../listings/body.js';
import { LISTING_FIELD_NAMES } from '../listings/fields.js';
import type { ChangeRecorder } from './changes.js';
import { isPostgres, type Dialect } from './database.js';
import { countsAfterSwap, keepCounts, tenantCount, type TenantCount } from './listing-counts.js';
import { inD9Order, visibleListings } from './visibility.js';
import type { Database, ImportStagingTable, ListingsTable } from './schema.js';
import { ConcurrentWriteError, type Write } from './write.js';

/** A listing as an import gives it (no change sequence yet; `created_at` null when not given). */
export type StagedListing = ImportStagingTable;

/**
 * The columns an import writes, besides `id` and the times: the owner and country (D1), then every
 * field of the listing object's declaration (listings/fields.ts) but `id` and `created_at`, so a
 * field added there is imported, staged, compared and swapped with no edit here.
 */
export const LISTING_DATA_COLUMNS: ReadonlyArray<keyof ListingsTable & keyof StagedListing> = [
  'owner_account_id',
  'country',
  ...LISTING_FIELD_NAMES.filter((name) => name !== 'id' && name !== 'created_at'),
  // Derived from the fields when staged (import.ts), like the body's head.
  'search_words',
];

/** What the per-tenant index of the read path keeps of a listing (readmodel/tenant-index.ts). */
export const INDEX_COLUMNS = [
  'id', 'change_seq', 'is_featured', 'created_at', 'expiry_date', 'price', 'size_sqft', 'usage_types', 'is_takeover',
  'currency', 'price_basis', 'location', 'search_words',
] as const;
export type IndexRow = Pick<ListingsTable, (typeof INDEX_COLUMNS)[number]>;
export type IndexRowWithPlace = IndexRow & Pick<ListingsTable, 'owner_account_id' | 'country' | 'status'>;

/**
 * What the read path reads of a listing it shows: its JSON (`body`, written with it), the key of
 * that JSON (id, change), and where it is now, for the change feed. Not the other columns: a
 * column costs its decoding whether it is used or not.
 */
export const SERVED_COLUMNS = ['id', 'change_seq', 'owner_account_id', 'country', 'status', 'expiry_date', 'updated_at', 'body'] as const;
export type ServedListingRow = Pick<ListingsTable, (typeof SERVED_COLUMNS)[number]>;

export type { TenantCount } from './listing-counts.js';

/** A position in the D9 order: featured first, then newest first, then id. */
export interface OrderPosition {
  isFeatured: number;
  createdAt: string;
  id: string;
}

/** The outcome of an import once swapped in. */
export interface ImportCounts {
  inserted: number;
  /** Lines whose id existed already (OPERATIONS): changed or not. */
  updated: number;
  /** Of those, the ones identical to what was stored: no change recorded, nothing for clients to fetch. */
  unchanged: number;
}

/** A connection holding an import's temporary table, until the import is swapped in or abandoned. */
export interface ImportSession {
  /** Adds validated listings to the staging table. */
  stage(rows: readonly StagedListing[]): Promise<void>;
  /** For each of these ids already staged, the line that staged it. */
  stagedLines(ids: readonly string[]): Promise<Map<string, number>>;
  /** The kind of each of these accounts that exists. */
  accountKinds(ids: readonly string[]): Promise<Map<string, 'organisation' | 'individual'>>;
  /** Writes everything staged in one short transaction, with its changes recorded. */
  swapIn(now: string): Promise<ImportCounts>;
}

const CHUNK = 500;
/** An import changing at least this many listings renews PostgreSQL's statistics of them and their history (see `swapIn`). */
const ANALYZE_AFTER_CHANGES = 1000;

/**
 * The lengths an `id in (...)` list of the read path takes. Each length is a SQL text of its own,
 * which the SQLite statement cache (storage/database.ts) keeps prepared: reads batched per turn of
 * the event loop (core/turn-batch.ts) came in every length from 1 to 500, and 500 prepared
 * statements held 26 MB (the scale bench's caches-off RSS rose from 235 to 259 MB with them).
 * At most 128: SQLite's driver is synchronous, and a read of 128 listings by id holds the event
 * loop about 0.6 ms where 500 held it about 2 (the turn budget, storage/database.ts, lets the
 * next read wait for a later turn, but a statement once begun runs to its end).
 */
const ID_LIST_LENGTHS = [1, 2, 4, 8, 16, 32, 64, 128];
const ID_LIST_MAX = ID_LIST_LENGTHS.at(-1)!;

/** `ids` in lists of at most ID_LIST_MAX, each padded to the next of ID_LIST_LENGTHS with its last id again (`in` ignores repeats). */
export function idLists(ids: readonly string[]): string[][] {
  const lists: string[][] = [];
  for (let i = 0; i < ids.length; i += ID_LIST_MAX) {
    const list = ids.slice(i, i + ID_LIST_MAX);
    const length = ID_LIST_LENGTHS.find((n) => n >= list.length)!;
    while (list.length < length) list.push(list.at(-1)!);
    lists.push(list);
  }
  return lists;
}

/**
 * SQLite `cache_size` while importing: negative is KiB, so 32 MB. 64 MB made a 100,000-line
 * import a little faster but a 1,000,000-line one no faster, and raised its peak RSS by the same
 * 32 MB (268 -> 300 MB into a database of 100,000).
 */
const IMPORT_CACHE_SIZE = -32_768;

/** The columns of the staging table, in its order. */
const STAGED_COLUMNS: ReadonlyArray<keyof StagedListing> = ['id', 'line', ...LISTING_DATA_COLUMNS, 'created_at', 'body_head'];

/**
 * `sqlite`: the connection under `db` when it is SQLite, for the one statement where Kysely's
 * generality costs most: staging runs a prepared one-row insert per line (a few microseconds
 * each) where a multi-row insert would build and prepare a query of thousands of parameters.
 */
export function createListingsRepository(db: Kysely<Database>, write: Write, sqlite?: BetterSqlite3.Database) {
  return { ...listingReads(db), ...listingImports(db, write, sqlite) };
}

export type ListingsRepository = ReturnType<typeof createListingsRepository>;

/** What the read path reads: a tenant's listings in the D9 order, its changes, listings by id. */
function listingReads(db: Kysely<Database>) {
  /** A tenant's active listings (not expired at `now`, D10), as the index needs them. */
  const tenantRows = (ownerAccountId: string, country: string, now: string) =>
    visibleListings(db.selectFrom('listings').select(INDEX_COLUMNS), { ownerAccountId, country }, now);

  return {
    /**
     * The next `limit` active listings of a tenant in the D9 order after `after` (keyset paging,
     * so each chunk costs what it returns). A position after (f, c, i) is, in order: the same
     * featured flag and creation time with a greater id; the same flag and an earlier time; a
     * lower flag. Three queries that each seek in `listings_visible_order`, where one query with
     * an OR of the three would make the planner walk the tenant from the start every time.
     */
    async orderedChunk(ownerAccountId: string, country: string, now: string, after: OrderPosition | undefined, limit: number): Promise<IndexRow[]> {
      const ordered = (q: ReturnType<typeof tenantRows>) => inD9Order(q);
      if (after === undefined) return ordered(tenantRows(ownerAccountId, country, now)).limit(limit).execute();
      const rows: IndexRow[] = [];
      const steps = [
        (q: ReturnType<typeof tenantRows>) => q.where('is_featured', '=', after.isFeatured).where('created_at', '=', after.createdAt).where('id', '>', after.id),
        (q: ReturnType<typeof tenantRows>) => q.where('is_featured', '=', after.isFeatured).where('created_at', '<', after.createdAt),
        (q: ReturnType<typeof tenantRows>) => q.where('is_featured', '<', after.isFeatured),
      ];
      for (const step of steps) {
        if (rows.length >= limit) break;
        rows.push(...(await ordered(step(tenantRows(ownerAccountId, country, now))).limit(limit - rows.length).execute()));
      }
      return rows;
    },

    /**
     * The listings a tenant's changes after `since` touched (each once, in order of their last
     * change), up to `limit` changes, with the last sequence read; `pruned` when the tenant's
     * history no longer reaches back to `since`.
     */
    async changedSince(ownerAccountId: string, country: string, since: number, limit: number): Promise<{ ids: string[]; lastSeq: number; complete: boolean } | 'pruned'> {
      const version = await db
        .selectFrom('tenant_versions')
        .select('pruned_seq')
        .where('owner_account_id', '=', ownerAccountId)
        .where('country', '=', country)
        .executeTakeFirst();
      if (version !== undefined && Number(version.pruned_seq) > since) return 'pruned';
      const rows = await db
        .selectFrom('listing_changes')
        .select(['listing_id', 'seq'])
        .where('owner_account_id', '=', ownerAccountId)
        .where('country', '=', country)
        .where('seq', '>', since)
        .orderBy('seq')
        .limit(limit)
        .execute();
      return { ids: [...new Set(rows.map((r) => r.listing_id))], lastSeq: rows.length === 0 ? since : Number(rows.at(-1)!.seq), complete: rows.length < limit };
    },

    /** What the index keeps of these listings, with where each is now (owner, country, status). */
    async indexRows(ids: readonly string[]): Promise<IndexRowWithPlace[]> {
      const rows: IndexRowWithPlace[] = [];
      for (const list of idLists(ids)) {
        rows.push(...(await db.selectFrom('listings').select([...INDEX_COLUMNS, 'owner_account_id', 'country', 'status']).where('id', 'in', list).execute()));
      }
      return rows;
    },

    /**
     * Issue 44: listings `offset` to `offset + limit` of a tenant in the D9 order, as the read path
     * sends them, and how many it has, read in one snapshot straight from `listings_visible_order`:
     * a page for a tenant whose index is not built yet, with the snapshot's tenant version and the
     * soonest expiry among its listings (D10: until then the count stays true at that version).
     * The page seeks `offset + limit` entries into the index. The count is a count `known` for the
     * version the snapshot finds, before its soonest expiry; else the tenant's kept count
     * (listing-counts.ts: a seek and the listings expired since, a bounded number); else, when
     * `walk`, a walk of the tenant's entries (an index-only scan on PostgreSQL, about a second at a
     * million listings), or no page at all (undefined). One snapshot (repeatable read; on SQLite,
     * one read transaction), so the total is the total of the listings shown, whatever an import
     * commits meanwhile.
     */
    async pageInOrder(
      tenant: { ownerAccountId: string; country: string },
      now: string,
      page: { offset: number; limit: number; walk: boolean },
      known?: TenantCount,
    ): Promise<{ count: TenantCount; rows: ServedListingRow[] } | undefined> {
      const begin = isPostgres(db) ? db.transaction().setIsolationLevel('repeatable read') : db.transaction();
      return begin.execute(async (trx) => {
        const row = await trx.selectFrom('tenant_versions').select('version')
          .where('owner_account_id', '=', tenant.ownerAccountId).where('country', '=', tenant.country).executeTakeFirst();
        const version = Number(row?.version ?? 0);
        const fresh = known !== undefined && known.version === version && (known.soonestExpiry === null || known.soonestExpiry > now);
        const count = fresh ? known : await tenantCount(trx, tenant, version, now, page.walk);
        if (count === undefined) return undefined;
        const rows = await inD9Order(visibleListings(trx.selectFrom('listings').select(SERVED_COLUMNS), tenant, now)).offset(page.offset).limit(page.limit).execute();
        return { count, rows: await withBodies(trx, rows) };
      });
    },

    /** What the read path sends of these listings (SERVED_COLUMNS), by id, in no particular order. */
    async rows(ids: readonly string[]): Promise<ServedListingRow[]> {
      const rows: ServedListingRow[] = [];
      for (const list of idLists(ids)) {
        rows.push(...(await db.selectFrom('listings').select(SERVED_COLUMNS).where('id', 'in', list).execute()));
      }
      return withBodies(db, rows);
    },
  };
}

/** Imports of listings, each staged on a connection of its own and swapped in at once. */
function listingImports(db: Kysely<Database>, write: Write, sqlite?: BetterSqlite3.Database) {
  return {
    /**
     * An import: `fn` stages validated listings in a temporary table of one connection (no lock
     * on the listings, which readers and other writers keep using), then swaps them in with one
     * short write transaction: all or nothing for readers. Returns what `fn` returns.
     */
    async importing<T>(fn: (session: ImportSession) => Promise<T>): Promise<T> {
      return db.connection().execute(async (conn) => {
        await createImportStaging(conn);
        // SQLite: `importing` holds the connection (Kysely runs one query at a time on it), so
        // statements run on it directly cannot interleave with anyone else's. The swap writes
        // every index of the listings at random places: with SQLite's default 2 MB page cache
        // it keeps evicting and re-reading pages (half the CPU of a 100,000-line import is
        // system time); 32 MB, for this connection and only while importing, halves that.
        const cacheSize = sqlite?.pragma('cache_size', { simple: true });
        sqlite?.pragma(`cache_size = ${IMPORT_CACHE_SIZE}`);
        const stageOnSqlite = sqlite === undefined ? undefined : sqliteStaging(sqlite);
        try {
          return await fn(importSession(conn, write, stageOnSqlite));
        } finally {
          await conn.schema.dropTable('import_staging').ifExists().execute().catch(() => undefined);
          if (typeof cacheSize === 'number') sqlite?.pragma(`cache_size = ${cacheSize}`);
        }
      });
    },
  };
}

/** Stages a batch on SQLite: a prepared one-row insert per row, in one transaction. */
function sqliteStaging(sqlite: BetterSqlite3.Database): (rows: readonly StagedListing[]) => void {
  // Positional parameters: binding 27 by name costs a lookup each.
  const insert = sqlite.prepare(`insert into import_staging (${STAGED_COLUMNS.join(', ')}) values (${STAGED_COLUMNS.map(() => '?').join(', ')})`);
  return sqlite.transaction((rows: readonly StagedListing[]) => {
    for (const row of rows) insert.run(STAGED_COLUMNS.map((column) => row[column]));
  });
}

/**
 * What an import's `fn` works with: the staging table on `conn` (the connection `importing`
 * holds), staged through `stageOnSqlite` on SQLite.
 */
function importSession(conn: Kysely<Database>, write: Write, stageOnSqlite: ((rows: readonly StagedListing[]) => void) | undefined): ImportSession {
  return {
    async stage(rows) {
      // One transaction per batch: on SQLite a temporary table's writes lock only the
      // connection's own temporary database, never the listings.
      if (rows.length === 0) return;
      if (stageOnSqlite !== undefined) return stageOnSqlite(rows);
      await sql`begin`.execute(conn);
      try {
        for (let i = 0; i < rows.length; i += CHUNK) await conn.insertInto('import_staging').values(rows.slice(i, i + CHUNK)).execute();
        await sql`commit`.execute(conn);
      } catch (error) {
        await sql`rollback`.execute(conn).catch(() => undefined);
        throw error;
      }
    },
    async stagedLines(ids) {
      const lines = new Map<string, number>();
      for (let i = 0; i < ids.length; i += CHUNK) {
        const rows = await conn.selectFrom('import_staging').select(['id', 'line']).where('id', 'in', ids.slice(i, i + CHUNK)).execute();
        for (const row of rows) lines.set(row.id, Number(row.line));
      }
      return lines;
    },
    async accountKinds(ids) {
      const kinds = new Map<string, 'organisation' | 'individual'>();
      for (let i = 0; i < ids.length; i += CHUNK) {
        const rows = await conn.selectFrom('accounts').select(['id', 'kind']).where('id', 'in', ids.slice(i, i + CHUNK)).execute();
        for (const row of rows) kinds.set(row.id, row.kind);
      }
      return kinds;
    },
    async swapIn(now) {
      // The planner's statistics of what was staged (neither engine keeps them for a
      // temporary table by itself): without them SQLite drives the swap's joins from the
      // listings table, reading all of it even for a one-line import.
      await sql`analyze import_staging`.execute(conn);
      const counts = await write.on(conn, (tx, changes) => swapIn(tx, isPostgres(tx) ? 'postgres' : 'sqlite', now, changes));
      // PostgreSQL plans on statistics that autovacuum renews a minute or more later: until then,
      // after a big import into an almost empty table, it takes the change history for a row or
      // two and joins it with itself row by row (the change feed's and the webhooks' "last change
      // of each listing" took 2.2 s for 5,000 changes, and never ended for 100,000; 14 ms once
      // analysed). So a big import renews them itself, after its commit (reads and writes go on).
      if (isPostgres(conn) && counts.inserted + counts.updated - counts.unchanged >= ANALYZE_AFTER_CHANGES) await sql`analyze listing_changes, listings`.execute(conn);
      return counts;
    },
  };
}

/**
 * `rows` with every body there: a listing written by a release before migration 009 (an import
 * run from an old release during a rolling deploy) has none, and gets it computed from its
 * columns here, so that it is never answered as an empty string. The next import of that listing
 * by this release stores it (its body differs, see `differs`).
 */
export async function withBodies<R extends ServedListingRow>(db: Kysely<Database>, rows: R[]): Promise<R[]> {
  const missing = rows.filter((row) => row.body === '');
  if (missing.length === 0) return rows;
  const full = new Map<string, ListingsTable>();
  for (const list of idLists(missing.map((row) => row.id))) {
    for (const row of await db.selectFrom('listings').selectAll().where('id', 'in', list).execute()) full.set(row.id, row);
  }
  for (const row of missing) {
    const columns = full.get(row.id);
    if (columns !== undefined) row.body = listingBodyOf(columns);
  }
  return rows;
}

/**
 * The temporary table an import stages its lines in, on the connection that will swap them in.
 * It takes its columns from the listings table itself (a new field is a migration of listings,
 * not a second declaration here): no rows, the same types on both engines, a line number, the
 * listing's JSON up to its created_at (listings/body.ts), and a unique id, which the duplicate
 * check and the swap seek by. Values arrive validated; the swap's insert into listings enforces
 * NOT NULL again.
 */
export async function createImportStaging(conn: Kysely<Database>): Promise<void> {
  await conn.schema.dropTable('import_staging').ifExists().execute();
  const staged = sql.join(['id', ...LISTING_DATA_COLUMNS, 'created_at'].map((c) => sql.ref(c)), sql`, `);
  await sql`create temporary table import_staging as select ${staged}, 0 as line, cast('' as text) as body_head from listings where 1 = 0`.execute(conn);
  await sql`create unique index import_staging_id on import_staging (id)`.execute(conn);
}

/**
 * The JSON a staged line's listing ends up with: its staged head, the created_at it ends up with
 * (the line's, else `otherwise`: the stored one, or the import's time for a new listing), and the
 * tail (listings/body.ts).
 */
function stagedBody(otherwise: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`s.body_head || coalesce(s.created_at, ${otherwise}) || ${BODY_TAIL}`;
}

/**
 * A staged line that changes something: a data column (`IS DISTINCT FROM`), its created_at if
 * given, or the stored JSON, which an import from a release before migration 009 left empty or
 * stale (so importing the same file again with this release repairs it).
 */
function differs(): RawBuilder<unknown> {
  const data = LISTING_DATA_COLUMNS.map((c) => sql`l.${sql.ref(c)} is distinct from s.${sql.ref(c)}`);
  const created = sql`(s.created_at is not null and s.created_at is distinct from l.created_at)`;
  const body = sql`l.body is distinct from (${stagedBody(sql`l.created_at`)})`;
  return sql`(${sql.join([...data, created, body], sql` or `)})`;
}

/**
 * The statements of a swap, after the change log's `before` sequence and with the change time
 * `at`, in the order `swapIn` runs them; the insert in the form the count calls for (exported for
 * the test that checks their plans).
 *
 * Each written listing is stamped with its change (`change_seq`). SQLite finds it by one seek per
 * listing in listing_changes_superseded. PostgreSQL is told it by the insert of the changes
 * (`returning`), kept in a temporary table of the transaction (`import_changes`) that the update
 * and the insert join by id. Not by that seek: its plan is made on a table whose statistics know
 * nothing of the rows just inserted (none at all in a new database), and the planner may then seek
 * by the tenant alone (listing_changes_tenant_seq, which fits the same conditions) and filter
 * every change of the import for each listing, a cost that grows with the square of the import
 * (issue 29, item 4: a first import of 10,000 listings ran past the statement timeout).
 */
export function swapStatements(dialect: Dialect, now: string, at: string, before: number) {
  const counts = sql<{ total: number | string; existing: number | string; changed: number | string }>`
    select count(*) as total, count(l.id) as existing,
      coalesce(sum(case when l.id is not null and ${differs()} then 1 else 0 end), 0) as changed
    from import_staging s left join listings l on l.id = s.id`;

  // The change log first, while the old rows are still there to compare with: a listing that
  // moves to another owner or country leaves its old tenant (D22: a removal there) ...
  const moves = sql`insert into listing_changes (owner_account_id, country, listing_id, at)
    select l.owner_account_id, l.country, l.id, ${at} from import_staging s join listings l on l.id = s.id
    where l.owner_account_id <> s.owner_account_id or l.country <> s.country
    order by s.line`;
  // ... and every new or changed listing is a change of the tenant it is in now. Identical lines are not.
  const changedRows = sql`insert into listing_changes (owner_account_id, country, listing_id, at)
    select s.owner_account_id, s.country, s.id, ${at} from import_staging s left join listings l on l.id = s.id
    where l.id is null or ${differs()}
    order by s.line`;
  const postgres = dialect === 'postgres';
  // PostgreSQL: with each change's sequence kept by listing (see above). Its table is the
  // transaction's own: a swap done again after a concurrent write starts from an empty one.
  const changesTable = sql`create temporary table import_changes (id text primary key, seq bigint not null) on commit drop`;
  const changed = postgres
    ? sql`with c as (${changedRows} returning listing_id, seq) insert into import_changes (id, seq) select listing_id, seq from c`
    : changedRows;

  // updated_at is when the listing's current state took effect: the time of its change, and
  // change_seq is that change, so that each row is written once and not rewritten afterwards to
  // stamp it. SQLite: by one seek in listing_changes_superseded (a listing's change for the
  // tenant it is in now is unique among those of this write). PostgreSQL: from import_changes,
  // whose rows are exactly the new and changed lines.
  const changeSeq = postgres
    ? sql`c.seq`
    : sql`(select c.seq from listing_changes c
    where c.owner_account_id = s.owner_account_id and c.country = s.country and c.listing_id = s.id and c.seq > ${before})`;
  const staged = postgres ? sql`import_staging s join import_changes c on c.id = s.id` : sql`import_staging s`;
  const assignments = sql.join(LISTING_DATA_COLUMNS.map((c) => sql`${sql.ref(c)} = s.${sql.ref(c)}`), sql`, `);
  const update = sql`update listings as l set ${assignments}, created_at = coalesce(s.created_at, l.created_at), updated_at = ${at}, change_seq = ${changeSeq},
      body = ${stagedBody(sql`l.created_at`)}
    from ${staged} where l.id = s.id${postgres ? sql`` : sql` and ${differs()}`}`;
  const columns = sql.join(LISTING_DATA_COLUMNS.map((c) => sql.ref(c)), sql`, `);
  const values = sql.join(LISTING_DATA_COLUMNS.map((c) => sql`s.${sql.ref(c)}`), sql`, `);
  // The new listings. When some staged ids exist, those are left out by a seek each. When none
  // does (a first import), by nothing: `not exists (select ... from listings)` is a select that
  // reads the table it inserts into, whose rows SQLite first copies whole to a temporary table
  // (every staged row written and read back once more: 238 MB for 100,000 new lines, whose import
  // took 6.0-6.5 s with it and 4.9-5.0 s without). Either way an id inserted meanwhile is skipped
  // by the key's conflict, and `swapIn` checks the count. `where true` lets SQLite's parser tell
  // the upsert clause apart.
  // In id order: the id index (and the one by update time, whose rows of one import share a time)
  // is then written front to back instead of at random: 6.1 s -> 4.4 s for 100,000 new listings
  // into a database of 100,000 (SQLite, 32 MB of cache).
  const insert = (someExist: boolean) => sql`insert into listings (id, ${columns}, created_at, updated_at, change_seq, body)
    select s.id, ${values}, coalesce(s.created_at, ${now}), ${at}, ${changeSeq}, ${stagedBody(sql`${now}`)} from ${staged}
    where ${someExist ? sql`not exists (select 1 from listings l where l.id = s.id)` : sql`true`}
    order by s.id
    on conflict (id) do nothing`;
  return { counts, moves, changesTable, changed, update, insert };
}

/** The swap of an import, inside its write transaction (see `importing`). */
async function swapIn(tx: Kysely<Database>, dialect: Dialect, now: string, changes: ChangeRecorder): Promise<ImportCounts> {
  const { before, at } = await changes.beginListingChanges(now);
  const statements = swapStatements(dialect, now, at, before);
  const { total, existing, changed } = (await statements.counts.execute(tx)).rows[0]!;
  // Each touched tenant's visible count once this swap is in, read before a row is written (its old rows count).
  const tenantCounts = await countsAfterSwap(tx, now);
  const inserted = Number(total) - Number(existing);
  const someExist = Number(existing) > 0;
  // A move or an update needs a staged id that exists: when none does (a first import), each would
  // only pass over every staged line to find that out. The insert, likewise, needs a new one.
  if (someExist) await statements.moves.execute(tx);
  if (dialect === 'postgres') await statements.changesTable.execute(tx);
  await statements.changed.execute(tx);
  // The update and the insert join what was just written there: planned on its statistics (and
  // the staged lines'), not on a guess.
  if (dialect === 'postgres') await sql`analyze import_changes`.execute(tx);
  if (someExist) await statements.update.execute(tx);
  if (inserted > 0) {
    const { numAffectedRows } = await statements.insert(someExist).execute(tx);
    // SQLite's write lock keeps everyone else out from the count to here. PostgreSQL's does not:
    // an import of some of the same new ids that committed meanwhile has them skipped by the
    // conflict clause. Then this swap is done again, in which they are updates.
    if (Number(numAffectedRows) !== inserted) throw new ConcurrentWriteError(`listings inserted by another write while this import was applied (${inserted} new, ${Number(numAffectedRows)} inserted)`);
  }
  await changes.finishListingChanges(before);
  await keepCounts(tx, tenantCounts, changes.committed.tenants, now);
  return { inserted, updated: Number(existing), unchanged: Number(existing) - Number(changed) };
}
