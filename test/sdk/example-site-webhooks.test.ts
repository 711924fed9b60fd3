import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListingsClient } from '@listings-api/sdk';
import { createSite } from '@listings-api/example-website';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The whole webhook loop (D24, issue 32 item 6): the API sends a signed message to the example
 * website's /webhooks/listings, whose SDK handler verifies it and makes the changed listings'
 * copies due, so the next view shows the change at once instead of after its 10 s of freshness.
 */
describe('example website: webhooks show a change at once', () => {
  let api: TestServer;
  let accountId: string;
  const id = 'e0000000-0000-4000-8000-000000000001';

  before(async () => {
    // The API's clock is the real one: the site checks each message's timestamp against its own.
    api = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1' }, new TestClock(Date.now()), { manualWebhooks: true });
    accountId = await api.createAccount();
    await api.addListings(accountId, [{ id, title: 'Before the change' }]);
  });
  after(() => api?.close());

  it('a listing changed in the API is shown changed on the next view, with no wait', async () => {
    const key = (await api.createKey(accountId, 'sg', 'website')).key;
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    // The endpoint (and its secret) first, on a port picked for the site.
    const port = await freePort();
    const endpoint = await addWebhook(api.service.store, api.clock.now, { accountId, country: 'sg', url: `http://127.0.0.1:${port}/webhooks/listings` });
    const site = createSite({ client, now: new TestClock().now, webhookSecret: endpoint.secret });
    await site.listen(port);
    try {
      assert.match((await httpCall(port, `/listings/${id}`)).body, /Before the change/);
      assert.match((await httpCall(port, '/')).body, /Before the change/);

      await api.addListings(accountId, [{ id, title: 'After the change' }]);
      assert.match((await httpCall(port, `/listings/${id}`)).body, /Before the change/, 'the site\'s copy is fresh for 10 s');

      await api.service.webhooks.tick();
      const [attempt] = await api.service.store.webhooks.attempts(endpoint.id, 1);
      assert.equal(attempt!.status, 204, 'the site verified and took the message');
      assert.match((await httpCall(port, `/listings/${id}`)).body, /After the change/);
      assert.match((await httpCall(port, '/')).body, /After the change/);

      // A message not signed with the site's secret changes nothing.
      const forged = await httpCall(port, '/webhooks/listings', { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' }, body: '{}' });
      assert.equal(forged.status, 400);
    } finally {
      await site.close();
    }
  });
});
