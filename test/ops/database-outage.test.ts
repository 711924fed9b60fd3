import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from '#kysely';
import { INSTANCE_APPLICATION_NAME } from '../../src/storage/pg-notifications.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { FaultProxy } from '../support/fault-proxy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';

const skip = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set: the PostgreSQL outage test is skipped';

describe('database outage (PostgreSQL behind a link the test cuts)', { skip }, () => {
  let database: TestDatabase;
  let link: FaultProxy;
  let server: TestServer;
  let key: string;

  before(async () => {
    database = await createTestDatabase('postgres');
    const proxied = await FaultProxy.inFrontOf(database.url);
    link = proxied.proxy;
    server = await startTestServer({ DATABASE_URL: proxied.url, DATABASE_STATEMENT_TIMEOUT_MS: '1000' });
    const owner = await server.createAccount();
    key = (await server.createKey(owner)).key;
    await server.addListings(owner, [{}]);
  });
  after(async () => {
    await server.close();
    await link.close();
    await database.drop();
  });

  it('answers 500 internal_error quickly while the database is away, fails /readyz, and recovers by itself', async () => {
    const from = server.logs.lines.length;
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await server.get('/readyz')).status, 200);

    link.down();
    // The list, the word and place views (D26, D28) and the counts (D27) read through the same index.
    for (const path of ['/v1/listings', '/v1/listings?page=2', '/v1/listings?q=office', '/v1/listings?near=1.3,103.8', '/v1/listings/facets']) {
      const started = Date.now();
      const res = await server.get(path, { key });
      const elapsed = Date.now() - started;
      assert.equal(res.status, 500, res.body);
      assert.equal(res.json.error, 'internal_error');
      assert.doesNotMatch(res.body, /at .*\.js|ECONN|terminated|stack/i, 'no stack trace or internals');
      assert.ok(elapsed < 4000, `bounded: ${elapsed} ms`);
    }
    const ready = await server.get('/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.json.error, 'internal_error');
    assert.equal((await server.get('/healthz')).status, 200, 'the process itself is alive');

    link.restore();
    let res = await server.get('/v1/listings', { key });
    for (let i = 0; i < 50 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await server.get('/v1/listings', { key });
    }
    assert.equal(res.status, 200, 'recovered without a restart');
    assert.equal(res.json.total, 1);
    assert.equal((await server.get('/readyz')).status, 200);

    // Issue 30 items 4 and 5: ONE warning for the outage, with the error's message; no stack trace
    // per failed request or per poll (nor for the change listener, whose loss is part of it); and
    // one line when it is over.
    const lines = server.logs.lines.slice(from);
    const warnings = lines.filter((l) => Number(l.level) >= 40);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(String(warnings[0]!.msg), /^database unavailable/);
    assert.equal(typeof warnings[0]!.error, 'string');
    assert.deepEqual(lines.filter((l) => JSON.stringify(l).includes('"stack"')), []);
    assert.equal(lines.filter((l) => /^database available again/.test(String(l.msg))).length, 1);
  });

  it('the change listener alone lost (its connection ended by the server): one warning, and one line when it listens again', async () => {
    const from = server.logs.lines.length;
    const listenerLines = () => server.logs.lines.slice(from).filter((l) => /^database change listener/.test(String(l.msg)));
    // Requests are answered before the listener is back from the outage above (versions are read
    // per request meanwhile): wait until it listens again.
    const listening = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name like ${`${INSTANCE_APPLICATION_NAME}%`}`.execute(server.service.store.db)).rows[0]!.n === 1;
    await until(listening, { what: "this instance's listener to be back", timeoutMs: 10_000 });
    const { rows } = await sql<{ ended: boolean }>`
      select pg_terminate_backend(pid) as ended from pg_stat_activity
      where datname = current_database() and application_name like ${`${INSTANCE_APPLICATION_NAME}%`}`.execute(server.service.store.db);
    assert.deepEqual(rows.map((r) => r.ended), [true], "this instance's listener");
    await until(() => listenerLines().some((l) => /reconnected/.test(String(l.msg))), { what: 'the listener to reconnect', timeoutMs: 10_000 });
    const [lost, back, ...rest] = listenerLines();
    assert.deepEqual(rest, []);
    assert.equal(lost!.level, 40);
    assert.match(String(lost!.msg), /^database change listener lost: key and origin caches are off/);
    assert.match(String(lost!.error), /terminat/);
    assert.equal(back!.level, 30);
    assert.equal(back!.msg, 'database change listener reconnected: caches are on again');
    assert.equal(typeof back!.outage_ms, 'number');
    assert.deepEqual(server.logs.lines.slice(from).filter((l) => JSON.stringify(l).includes('"stack"')), []);
    assert.equal((await server.get('/readyz')).status, 200, 'the database itself served meanwhile');
  });
});
