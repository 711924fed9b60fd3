import assert from 'node:assert/strict';
import { closeSync, openSync, readSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import { sql } from '#kysely';
import { TEST_STORE } from '../support/database.js';
import { parseScrape, sampleValue } from '../support/prometheus.js';
import { httpCall, TestClock, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

/**
 * Readiness that means it (issue 30 item 4): GET /readyz answers 503 when the database cannot
 * serve the API's reads (not when `select 1` fails: the README's own 500 recipe, a table renamed
 * away, used to leave it at 200), within the second its answer is reused, and 200 again as soon
 * as it can; `listings_ready` says the same; the outage is logged once when it begins (with the
 * error's message) and once when it ends (item 5). The readiness check's clock is injected: a
 * passed check is reused for one second of it.
 */
const NOT_READY_DATABASE = "Not ready: the database cannot serve the API's reads.";

describe(`readiness on ${TEST_STORE}: /readyz says whether the database can serve the API's reads (issue 30 item 4)`, () => {
  let server: TestServer;
  let key: string;
  /** The readiness check's monotonic clock. */
  let moment: TestClock;

  /** Each test's own world (issue 42): a fresh server, with a readiness clock of its own, and a tenant's key and listings. */
  async function world(t: TestContext): Promise<void> {
    moment = new TestClock(0);
    // Usage counting off: no background write of this file's own touches the database meanwhile.
    server = await freshServer(t, { METRICS_PORT: '0', READ_CACHE_TTL_MS: '0', USAGE_COUNTING: 'off' }, { readiness: { now: moment.now } });
    const owner = await server.createAccount();
    key = (await server.createKey(owner)).key;
    await server.addListings(owner, [{}, {}]);
  }

  const readyMetric = async (): Promise<number> => {
    const res = await httpCall(server.service.metricsPort()!, '/metrics', { host: '127.0.0.1' });
    return sampleValue(parseScrape(res.body), 'listings_ready');
  };
  const linesFrom = (from: number) => server.logs.lines.slice(from);
  const withStack = (lines: Array<Record<string, unknown>>) => lines.filter((l) => JSON.stringify(l).includes('"stack"'));
  /** The next /readyz after the cached answer has expired. */
  const readyzLater = () => {
    moment.advance(1001);
    return server.get('/readyz');
  };

  it('the listings table renamed away: 503 once the cached answer expires, metric 0, ONE warning with the error; renamed back: 200 at once and one line saying so', async (t) => {
    await world(t);
    const from = server.logs.lines.length;
    assert.equal((await server.get('/readyz')).status, 200);
    assert.equal(await readyMetric(), 1);
    const db = server.service.store.db;
    await db.schema.alterTable('listings').renameTo('listings_away').execute();
    try {
      // A passed check is reused for a second (load balancers poll every few seconds).
      assert.equal((await server.get('/readyz')).status, 200, 'the answer of a second ago');
      const res = await readyzLater();
      assert.equal(res.status, 503, res.body);
      assert.deepEqual(res.json, { error: 'internal_error', message: NOT_READY_DATABASE }, 'says why in general terms only: it is public');
      assert.equal((await server.get('/v1/listings', { key })).status, 500);
      assert.equal(await readyMetric(), 0);
      moment.advance(4000);
      for (let i = 0; i < 3; i++) assert.equal((await server.get('/readyz')).status, 503);
      assert.equal((await server.get('/v1/listings', { key })).status, 500);
    } finally {
      await db.schema.alterTable('listings_away').renameTo('listings').execute();
    }
    // A failed check is not reused: the next question checks again.
    assert.equal((await server.get('/readyz')).status, 200);
    assert.equal(await readyMetric(), 1);
    assert.equal((await server.get('/v1/listings', { key })).status, 200);

    const lines = linesFrom(from);
    const warnings = lines.filter((l) => Number(l.level) >= 40);
    assert.equal(warnings.length, 1, `one warning for the outage, nothing per request or per poll: ${JSON.stringify(warnings)}`);
    assert.match(String(warnings[0]!.msg), /^database unavailable/);
    assert.match(String(warnings[0]!.error), /listings/, "the error's message");
    assert.deepEqual(withStack(lines), [], 'no stack trace');
    const back = lines.filter((l) => /^database available again/.test(String(l.msg)));
    assert.equal(back.length, 1);
    assert.equal(back[0]!.level, 30);
    assert.equal(back[0]!.outage_ms, 4000, 'how long it lasted, by the readiness clock');
  });

  it('a column only a replay of changes reads renamed away (listing_changes.listing_id): 503 before any request meets it; renamed back: 200 (issue 40 item 10)', async (t) => {
    await world(t);
    const db = server.service.store.db;
    assert.equal((await readyzLater()).status, 200);
    await db.schema.alterTable('listing_changes').renameColumn('listing_id', 'listing_id_gone').execute();
    try {
      assert.equal((await readyzLater()).status, 503);
    } finally {
      await db.schema.alterTable('listing_changes').renameColumn('listing_id_gone', 'listing_id').execute();
    }
    assert.equal((await server.get('/readyz')).status, 200);
  });

  for (const [table, column] of [['listings', 'body'], ['api_keys', 'key_hash']] as const) {
    it(`a column every read reads renamed away (${table}.${column}): 503 and a 500 that names the database; renamed back: 200 (issue 40 item 10)`, async (t) => {
      await world(t);
      const db = server.service.store.db;
      assert.equal((await readyzLater()).status, 200);
      const from = server.logs.lines.length;
      await db.schema.alterTable(table).renameColumn(column, `${column}_gone`).execute();
      try {
        const res = await readyzLater();
        assert.equal(res.status, 503, `the read path's own statements fail: ${res.body}`);
        assert.equal(await readyMetric(), 0);
        // Caches are off here (READ_CACHE_TTL_MS=0): every request reads what the check reads.
        const failed = await server.get('/v1/listings', { key });
        assert.equal(failed.status, 500);
        const line = linesFrom(from).find((l) => l.msg === 'request' && l.status === 500);
        assert.equal(line?.reason, 'database_unavailable', 'the dependency that failed is named');
        assert.match(String(line?.key_prefix), /^sg_live_/, "the key it sent, by its display prefix: what was known before the failure");
      } finally {
        await db.schema.alterTable(table).renameColumn(`${column}_gone`, column).execute();
      }
      assert.equal((await server.get('/readyz')).status, 200);
      assert.equal((await server.get('/v1/listings', { key })).status, 200);
      const outageLines = linesFrom(from).filter((l) => Number(l.level) >= 40);
      assert.deepEqual(outageLines.map((l) => l.msg), ["database unavailable: it cannot serve the API's reads, which fail until it can; /readyz answers 503"], 'one warning, the failed request part of it');
    });
  }

  it('SQLite: the database file moved away and another put at its path (the process would serve the old one for ever): 503; moved back: 200', { skip: TEST_STORE === 'sqlite' ? false : 'SQLite only' }, async (t) => {
    await world(t);
    const path = server.databaseUrl.slice('file:'.length);
    const from = server.logs.lines.length;
    assert.equal((await readyzLater()).status, 200);
    renameSync(path, `${path}.away`);
    try {
      writeFileSync(path, '');
      const res = await readyzLater();
      assert.equal(res.status, 503);
      assert.equal(res.json.message, NOT_READY_DATABASE);
    } finally {
      rmSync(path, { force: true });
      renameSync(`${path}.away`, path);
    }
    assert.equal((await server.get('/readyz')).status, 200);
    const warnings = linesFrom(from).filter((l) => Number(l.level) >= 40);
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.error), /was replaced since this process opened it; restart the process/);
    assert.equal(linesFrom(from).filter((l) => /^database available again/.test(String(l.msg))).length, 1);
  });

  it('SQLite: the file overwritten in place so that it cannot be read (its header): 503, though the serving connection answers from its cache; restored: 200', { skip: TEST_STORE === 'sqlite' ? false : 'SQLite only' }, async (t) => {
    await world(t);
    const path = server.databaseUrl.slice('file:'.length);
    const from = server.logs.lines.length;
    assert.equal((await readyzLater()).status, 200);
    // Everything in the file itself (a checkpoint moves the write-ahead log's pages into it, as
    // SQLite does by itself every 1000 pages): a reader now takes the header from the file.
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(server.service.store.db);
    const fd = openSync(path, 'r+');
    const header = Buffer.alloc(100);
    try {
      assert.equal(readSync(fd, header, 0, 100, 0), 100);
      writeSync(fd, Buffer.alloc(100, 0x41), 0, 100, 0);
      assert.equal((await server.get('/v1/listings', { key })).status, 200, 'the serving connection has not noticed');
      const res = await readyzLater();
      assert.equal(res.status, 503);
      assert.equal(res.json.message, NOT_READY_DATABASE);
    } finally {
      writeSync(fd, header, 0, 100, 0);
      closeSync(fd);
    }
    assert.equal((await server.get('/readyz')).status, 200);
    const warnings = linesFrom(from).filter((l) => Number(l.level) >= 40);
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.error), /not a database/);
  });

  it('a shutting-down instance: the metric says 0 from the moment the drain begins', async (t) => {
    await world(t);
    // The server closes here.
    const closing = server.close();
    try {
      assert.equal(sampleValue(parseScrape(await server.service.metrics!.scrape()), 'listings_ready'), 0);
    } finally {
      await closing;
    }
  });
});

const skipPg = TEST_STORE === 'postgres' ? false : 'PostgreSQL only: SQLite does not wait for a lock (busy_timeout 0)';

describe('readiness on postgres: the check is bounded in time (issue 30 item 4)', { skip: skipPg }, () => {
  let server: TestServer;
  let moment: TestClock;

  /** Each test's own world (issue 42): a fresh server with a readiness clock of its own. */
  async function world(t: TestContext): Promise<void> {
    moment = new TestClock(0);
    server = await freshServer(t, {}, { readiness: { now: moment.now, timeoutMs: 300 } });
  }

  it('a database that does not answer (a table locked by another session): 503 within the time limit, one check at a time; 200 once it answers', async (t) => {
    await world(t);
    const from = server.logs.lines.length;
    const locker = new pg.Client({ connectionString: server.databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table listings in access exclusive mode');
      moment.advance(1001);
      const started = performance.now();
      const res = await server.get('/readyz');
      assert.equal(res.status, 503);
      assert.ok(performance.now() - started < 2000, 'answered at the limit, not when the statement timeout fires');
      // Polled again while the first check still waits: no second query piles up behind the lock.
      assert.equal((await server.get('/readyz')).status, 503);
      const waiting = await locker.query("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'");
      assert.equal(waiting.rows[0].n, 1, 'one readiness query waits for the lock');
      await locker.query('commit');
    } finally {
      await locker.end();
    }
    let res = await server.get('/readyz');
    for (let i = 0; i < 20 && res.status !== 200; i++) res = await server.get('/readyz');
    assert.equal(res.status, 200);
    const warnings = server.logs.lines.slice(from).filter((l) => Number(l.level) >= 40);
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.error), /did not answer the readiness check within 300 ms/);
  });
});
