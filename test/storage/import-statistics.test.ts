import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { sql } from '#kysely';
import { importListings } from '../../src/import/import.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { listingLine } from '../support/server.js';
import { until } from '../support/until.js';

/**
 * Found by the webhook fleet benchmark (issue 43 item 4): on PostgreSQL, right after a big import
 * into an almost empty table, the planner's statistics still say "a row or two", and the change
 * history's "last change of each listing" ran as a self-join row by row: 2.2 s for 5,000 changes,
 * without end for 100,000, with the feed and every webhook of the tenant waiting on it. A big
 * import renews the statistics itself; a small one leaves them to autovacuum.
 */
const skip = TEST_STORE === 'postgres' ? false : 'the PostgreSQL run only: PostgreSQL\'s planner statistics';

describe('a big import renews PostgreSQL\'s statistics (issue 43)', { skip }, () => {
  let database: TestDatabase;
  let store: Store;
  const account = crypto.randomUUID();

  /** Each test's own world (issue 42): a store on a new database it migrates itself (statistics counted from nothing), and an account. */
  async function world(t: TestContext): Promise<void> {
    database = await createTestDatabase('postgres');
    atEnd(t, () => database.drop());
    store = openStore(database.url, { poolSize: 2, statementTimeoutMs: 0, listenForChanges: false });
    atEnd(t, () => store.close());
    await store.migrate();
    await store.start();
    await store.accounts.create({ id: account, name: 'Bulk Ltd', kind: 'organisation', created_at: new Date().toISOString() });
  }

  /** ANALYZEs run on each table (autovacuum's not counted): pg_stat counters, which a backend sends some time after its transaction. */
  const analysed = async () => {
    const { rows } = await sql<{ relname: string; n: string }>`select relname, analyze_count as n from pg_stat_user_tables where relname in ('listings', 'listing_changes') order by relname`.execute(store.db);
    return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
  };
  /** The planner's row counts, which ANALYZE writes as it runs: seen as soon as the import has returned. */
  const planned = async () => {
    const { rows } = await sql<{ relname: string; n: string }>`select relname, reltuples as n from pg_class where relname in ('listings', 'listing_changes') and relkind = 'r' order by relname`.execute(store.db);
    return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
  };
  const importOf = (count: number) => importListings(store, Readable.from(Array.from({ length: count }, () => JSON.stringify(listingLine(account))).join('\n')), new Date());

  it('a small import leaves them; one of 1,000 listings renews those of the listings and their history, and the feed\'s query is fast at once', async (t) => {
    await world(t);
    const start = await analysed();
    const startPlanned = await planned();
    await importOf(10);
    assert.deepEqual(await planned(), startPlanned, 'ten listings: autovacuum\'s business');
    await importOf(5000);
    const renewed = await planned();
    assert.ok(renewed.listings === 5010 && renewed.listing_changes! >= 5010, JSON.stringify({ startPlanned, renewed }));
    // The counters, once sent, show one ANALYZE of each table: the big import's, none of the small one's.
    let after = start;
    await until(async () => (after = await analysed()).listings! > start.listings! && after.listing_changes! > start.listing_changes!, {
      what: `the big import's ANALYZE in pg_stat_user_tables (from ${JSON.stringify(start)})`,
      timeoutMs: 15_000,
      everyMs: 50,
    });
    assert.deepEqual(after, { listing_changes: start.listing_changes! + 1, listings: start.listings! + 1 }, JSON.stringify({ start, after }));
    const started = performance.now();
    const changes = await store.feed.lastChanges(account, 'sg', 0, 1001);
    assert.equal(changes.length, 1001);
    assert.ok(performance.now() - started < 1000, `the last changes of 1,001 listings read in ${Math.round(performance.now() - started)} ms`);
  });
});
