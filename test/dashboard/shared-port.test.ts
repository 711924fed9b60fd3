import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { DashboardClient, addMember, revealedKey } from './helpers.js';

/**
 * The default placement (issue 8, item 1): the dashboard answers on the API's own port for its own
 * host name, `dashboard.$API_DOMAIN`, so that an instance needs one port and two instances on one
 * host cannot collide on a second one. The API's hosts are untouched.
 */
describe('dashboard on the API port under DASHBOARD_HOST (the default)', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { DASHBOARD_PORT: '' });
    accountId = await server.createAccount();
    await addMember(server, accountId, 'admin@acme.example', 'a long enough password');
    client = new DashboardClient(server.port, `dashboard.localhost:${server.port}`);
  }

  it('has no port of its own; its URL is http://dashboard.localhost:PORT', async (t) => {
    await world(t);
    assert.equal(server.config.dashboardPort, 'shared');
    assert.equal(server.dashboardPort, server.port);
    assert.equal(server.service.dashboard!.url(), `http://dashboard.localhost:${server.port}`);
  });

  it('signs in, creates a key that works on the API of the same port, on the dashboard host only', async (t) => {
    await world(t);
    assert.equal((await client.signIn('admin@acme.example', 'a long enough password')).status, 303);
    const created = await client.createKey(accountId, { label: 'Website', country: 'sg' });
    assert.equal(created.status, 201);
    const key = revealedKey(created.body);
    assert.match(created.body, new RegExp(`http://api\\.localhost:${server.port}/v1/listings`), 'the curl line names the API on this port');
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
  });

  it('the API hosts never reach the dashboard, and the dashboard host never reaches the API', async (t) => {
    await world(t);
    const apiSignIn = await server.get('/sign-in');
    assert.equal(apiSignIn.status, 404);
    assert.equal(apiSignIn.json.error, 'not_found');
    const dashboardApi = await client.get('/v1/listings');
    assert.equal(dashboardApi.status, 404);
    assert.match(dashboardApi.headers['content-type'] as string, /^text\/html/);
    // Case and port do not matter; behind no proxy, X-Forwarded-Host does not either.
    assert.equal((await new DashboardClient(server.port, `DASHBOARD.localhost:${server.port}`).get('/sign-in')).status, 200);
    assert.equal((await server.get('/sign-in', { headers: { 'x-forwarded-host': 'dashboard.localhost' } })).status, 404);
  });

  it('DASHBOARD_HOST names another host; with TRUST_PROXY the proxy\'s X-Forwarded-Host decides', async (t) => {
    await world(t);
    const other = await startTestServer({ DASHBOARD_PORT: '', DASHBOARD_HOST: 'developers.localhost', TRUST_PROXY: '1' });
    try {
      assert.equal((await new DashboardClient(other.port, `developers.localhost:${other.port}`).get('/sign-in')).status, 200);
      assert.equal((await new DashboardClient(other.port, `dashboard.localhost:${other.port}`).get('/sign-in')).status, 404);
      assert.equal((await other.get('/sign-in', { host: 'lb.internal', headers: { 'x-forwarded-host': 'developers.localhost' } })).status, 200);
    } finally {
      await other.close();
    }
  });

  it('issue 29 item 3: with TRUST_PROXY as addresses, only a listed proxy\'s X-Forwarded-Host reaches the dashboard', async (t) => {
    await world(t);
    const other = await startTestServer({ DASHBOARD_PORT: '', TRUST_PROXY: '127.0.0.2' });
    try {
      const viaHeader = { host: 'lb.internal', headers: { 'x-forwarded-host': 'dashboard.localhost' } };
      const proxied = await other.get('/sign-in', { ...viaHeader, localAddress: '127.0.0.2' });
      assert.equal(proxied.status, 200);
      assert.match(proxied.headers['content-type'] as string, /^text\/html/);
      const direct = await other.get('/sign-in', viaHeader);
      assert.equal(direct.status, 404);
      assert.equal(direct.json.error, 'not_found', 'the API answered: the header was not believed');
    } finally {
      await other.close();
    }
  });
});
