import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { PER_EMAIL_AND_ADDRESS } from '../../src/dashboard/throttle.js';
import { TEST_STORE } from '../support/database.js';
import { parseScrape, sampleValue } from '../support/prometheus.js';
import { httpCall, startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { holdWriteLock } from '../support/sqlite-lock.js';
import { addMember, DashboardClient, dev, signedIn } from './helpers.js';

/**
 * The dashboard's own traffic in the Prometheus metrics (issue 30, items 3 and 5): every answer by
 * method, route pattern and status (its 5xx and busy 503s among them), and each sign-in attempt
 * by result, so that failed and throttled sign-ins can be watched and alerted on.
 */
describe(`dashboard answers and sign-ins in the metrics on ${TEST_STORE} (issue 30)`, () => {
  let server: TestServer;
  let accountId: string;

  const scrape = async (of = server) => {
    const res = await httpCall(of.service.metricsPort()!, '/metrics', { host: '127.0.0.1' });
    assert.equal(res.status, 200);
    return parseScrape(res.body);
  };

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { METRICS_PORT: '0' });
    accountId = await server.createAccount();
  }

  it('every sign-in result starts at zero, so that the first failure shows in rate()', async (t) => {
    await world(t);
    const scraped = await scrape();
    for (const result of ['succeeded', 'failed', 'throttled']) {
      assert.equal(sampleValue(scraped, 'listings_dashboard_sign_ins_total', { result }), 0, result);
      assert.equal(scraped.get('listings_dashboard_sign_ins_total')!.metrics.filter((s) => s.labels?.result === result).length, 1, `${result} is exported`);
    }
  });

  it('counts answers by method, route and status, and sign-ins: failed, throttled, succeeded', async (t) => {
    await world(t);
    const before = await scrape();
    const client = new DashboardClient(server.dashboardPort!);
    const guessed = `nobody-${randomUUID().slice(0, 8)}@example.com`;
    for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.equal((await client.signIn(guessed, 'not the password')).status, 401);
    assert.equal((await client.signIn(guessed, 'not the password')).status, 429, 'throttled');
    assert.equal((await client.post('/sign-in', { _csrf: 'forged', email: guessed, password: 'x' })).status, 403);
    const member = await addMember(server, accountId);
    const signedInRes = await client.signIn(member.email, member.password);
    assert.equal(signedInRes.status, 303);
    assert.equal((await client.get(dev(accountId, 'keys'))).status, 200);
    assert.equal((await client.get('/nowhere')).status, 404);
    const after = await scrape();

    const requests = (labels: Record<string, string>) =>
      sampleValue(after, 'listings_dashboard_requests_total', labels) - sampleValue(before, 'listings_dashboard_requests_total', labels);
    assert.equal(requests({ method: 'GET', route: '/sign-in', status: '200' }), PER_EMAIL_AND_ADDRESS + 2);
    assert.equal(requests({ method: 'POST', route: '/sign-in', status: '401' }), PER_EMAIL_AND_ADDRESS);
    assert.equal(requests({ method: 'POST', route: '/sign-in', status: '429' }), 1);
    assert.equal(requests({ method: 'POST', route: '/sign-in', status: '403' }), 1);
    assert.equal(requests({ method: 'POST', route: '/sign-in', status: '303' }), 1);
    assert.equal(requests({ method: 'GET', route: '/accounts/:accountId/settings/developer/keys', status: '200' }), 1);
    assert.equal(requests({ method: 'GET', route: 'unmatched', status: '404' }), 1);
    assert.equal(requests({}), PER_EMAIL_AND_ADDRESS * 2 + 2 + 1 + 2 + 1 + 1, 'nothing else was counted');

    const signIns = (result: string) =>
      sampleValue(after, 'listings_dashboard_sign_ins_total', { result }) - sampleValue(before, 'listings_dashboard_sign_ins_total', { result });
    assert.equal(signIns('failed'), PER_EMAIL_AND_ADDRESS);
    assert.equal(signIns('throttled'), 1);
    assert.equal(signIns('succeeded'), 1);
    // The API's counter is the API's alone.
    assert.equal(sampleValue(after, 'listings_http_requests_total') - sampleValue(before, 'listings_http_requests_total'), 0);
  });

  it('a 503 while the database is busy is counted (SQLite: another writer holds the lock)', { skip: TEST_STORE === 'postgres' ? 'SQLite only' : false }, async (t) => {
    await world(t);
    const quick = await startTestServer({ DATABASE_URL: server.databaseUrl, DATABASE_BUSY_TIMEOUT_MS: '200', METRICS_PORT: '0' });
    try {
      const { client } = await signedIn(quick, accountId);
      const key = await quick.createKey(accountId, 'sg', 'survives');
      await client.get(dev(accountId, `keys/${key.id}/revoke`));
      const before = await scrape(quick);
      const lock = await holdWriteLock(server.databaseUrl.slice('file:'.length));
      try {
        assert.equal((await client.post(dev(accountId, `keys/${key.id}/revoke`), {})).status, 503);
      } finally {
        await lock.release();
      }
      const after = await scrape(quick);
      const labels = { method: 'POST', route: '/accounts/:accountId/settings/developer/keys/:keyId/revoke', status: '503' };
      assert.equal(sampleValue(after, 'listings_dashboard_requests_total', labels) - sampleValue(before, 'listings_dashboard_requests_total', labels), 1);
    } finally {
      await quick.close();
    }
  });
});
