import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { DISABLE_AFTER_MS, RETRY_DELAYS_MS } from '../../src/webhooks/deliverer.js';
import { addWebhook, statusOf } from '../../src/webhooks/endpoints.js';
import { TestClock, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import { atEnd, freshServer } from '../support/world.js';

/**
 * Issue 40 item 0 (D24): an endpoint whose name resolves to an address where the connection fails
 * at once (broadcast, multicast, or a link-local address with no interface) crashed the process
 * that sent to it: the connection's error came before anything listened for it. Now the process
 * survives, and the failure is an attempt like any other, with its place in the retry schedule,
 * until the endpoint is disabled. The names resolve through the service's injected resolver (no
 * DNS, nothing leaves the machine): each address fails inside this host's network stack.
 */

/** Names and the one address each resolves to. */
const ADDRESSES: Record<string, string> = {
  'broadcast.hooks.test': '255.255.255.255',
  'multicast.hooks.test': '224.0.0.1',
  'all-nodes.hooks.test': 'ff02::1',
  // Link-local with no interface named: connect() fails at once (EINVAL). Allowed with
  // WEBHOOK_ALLOW_PRIVATE, so in that mode the connection itself is attempted and fails.
  'link-local.hooks.test': 'fe80::1',
};
const resolve = async (hostname: string) => {
  const address = ADDRESSES[hostname];
  if (address === undefined) throw Object.assign(new Error(`no test address for ${hostname}`), { code: 'ENOTFOUND' });
  return [address];
};

/** Every uncaught exception or unhandled rejection while these tests run (there must be none). */
const uncaught: unknown[] = [];
const record = (error: unknown) => void uncaught.push(error);

/** Records every uncaught exception or unhandled rejection until the test ends, after its server has closed. */
function recordUncaught(t: TestContext): void {
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  atEnd(t, () => {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });
}

for (const allowPrivate of [false, true]) {
  describe(`webhooks to an address that fails at once, WEBHOOK_ALLOW_PRIVATE=${allowPrivate ? 1 : 0} (D24, issue 40 item 0)`, () => {
    let server: TestServer;
    let accountId: string;

    /** Each test's own world (issue 42): uncaught errors recorded, a fresh server with its own clock, and an account. */
    async function world(t: TestContext): Promise<void> {
      recordUncaught(t);
      server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: allowPrivate ? '1' : '0' }, { clock: new TestClock(Date.now()), manualWebhooks: true, webhookResolve: resolve });
      accountId = await server.createAccount();
    }

    const add = (host: string) => addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: `https://${host}/hooks/listings` });
    let n = 0;
    const change = () => server.addListings(accountId, [{ id: `e0000000-0000-4000-8000-${String(++n + (allowPrivate ? 500 : 0)).padStart(12, '0')}` }]);

    const cases: Array<[string, string]> = allowPrivate
      ? [['broadcast.hooks.test', 'refused address'], ['all-nodes.hooks.test', 'refused address'], ['link-local.hooks.test', 'could not connect']]
      : [['broadcast.hooks.test', 'refused address'], ['multicast.hooks.test', 'refused address'], ['link-local.hooks.test', 'refused address']];
    for (const [host, category] of cases) {
      it(`${host} (${ADDRESSES[host]}): each attempt is recorded as "${category}" on the retry schedule, then the endpoint is disabled`, async (t) => {
        await world(t);
        const endpoint = await add(host);
        await change();
        const delays: number[] = [];
        const { webhooks } = server.service.store;
        for (let row = (await webhooks.get(endpoint.id))!; row.enabled === 1; row = (await webhooks.get(endpoint.id))!) {
          await server.service.webhooks.tick();
          row = (await webhooks.get(endpoint.id))!;
          assert.equal(statusOf(row), row.enabled === 1 ? 'failing' : 'disabled');
          if (row.enabled === 1) {
            const delay = Date.parse(row.next_attempt_at!) - server.clock.now();
            delays.push(delay);
            server.clock.advance(delay);
          }
          assert.ok(delays.length < 40, 'disabled within a day of attempts');
        }
        // D24: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h; disabled after 24 hours of failures.
        assert.deepEqual(delays.slice(0, RETRY_DELAYS_MS.length), [...RETRY_DELAYS_MS]);
        assert.ok(delays.slice(RETRY_DELAYS_MS.length).every((d) => d === RETRY_DELAYS_MS.at(-1)));
        assert.ok(delays.reduce((a, b) => a + b, 0) >= DISABLE_AFTER_MS);
        const attempts = await webhooks.attempts(endpoint.id, 100);
        assert.equal(attempts.length, delays.length + 1, 'every failure is an attempt');
        assert.deepEqual(new Set(attempts.map((a) => a.error)), new Set([category]));
        assert.deepEqual(attempts.map((a) => a.attempt).reverse(), attempts.map((_, i) => i + 1));
        assert.deepEqual(uncaught, []);
      });
    }
  });
}

describe('serve\'s own delivery loop survives an endpoint that fails at once (issue 40 item 0)', () => {
  it('a listing change reaches the endpoint\'s failure, recorded, and the process goes on serving', async (t) => {
    recordUncaught(t);
    // Not manualWebhooks: the deliverer looks every second on its own, as in `serve`.
    const server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: new TestClock(Date.now()), webhookResolve: resolve });
    const accountId = await server.createAccount();
    const endpoint = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: 'https://link-local.hooks.test/hooks' });
    const other = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: 'https://broadcast.hooks.test/hooks' });
    await server.addListings(accountId, [{ id: 'e0000000-0000-4000-8000-000000000999' }]);
    const { webhooks } = server.service.store;
    await until(async () => (await webhooks.attempts(endpoint.id, 1)).length === 1 && (await webhooks.attempts(other.id, 1)).length === 1, { what: 'the first attempts' });
    const row = (await webhooks.get(endpoint.id))!;
    assert.equal(row.attempt, 1);
    assert.equal(Date.parse(row.next_attempt_at!) - Date.parse(row.failing_since!), RETRY_DELAYS_MS[0]);
    assert.equal((await webhooks.attempts(endpoint.id, 1))[0]!.error, 'could not connect');
    assert.equal((await webhooks.attempts(other.id, 1))[0]!.error, 'refused address');
    assert.equal((await server.get('/healthz')).status, 200);
    assert.deepEqual(uncaught, []);
  });
});
