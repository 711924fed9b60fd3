import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListingsClient } from '@listings-api/sdk';
import { createSite } from '@listings-api/example-website';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../support/process.js';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import { unfinishedRequest } from './helpers.js';

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

  it('issue 40 item 4: a body cut short, a 700 MB Content-Length or no signature cannot stop the site', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    const key = (await api.createKey(accountId, 'sg', 'website')).key;
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const refusals: string[] = [];
    const logged = console.error;
    console.error = (line: unknown) => void refusals.push(String(line));
    const site = createSite({ client, now: new TestClock().now, webhookSecret: secret });
    const port = await site.listen(0);
    const at = Math.floor(Date.now() / 1000);
    const signed = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(at), 'webhook-signature': new Webhook(secret).sign('msg_1', new Date(at * 1000), '{}') };
    const head = (headers: Record<string, string>) =>
      ['POST /webhooks/listings HTTP/1.1', `Host: 127.0.0.1:${port}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)].join('\r\n');
    try {
      // The issue's `curl -m 1 -H 'Content-Length: 1000' --data-binary '{}'`: refused at once, without waiting for the body.
      const curl = await unfinishedRequest(port, head({ 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': '1000' }), '{}', 1000);
      assert.equal(curl.status, 400, curl.text);
      // Signed headers, and the body cut short: nothing to answer, and nothing thrown.
      const cut = await unfinishedRequest(port, head({ ...signed, 'Content-Length': '1000' }), '{}', 300);
      assert.equal(cut.status, undefined);
      // 700 MB announced: 413 before a byte of it is read.
      const huge = await unfinishedRequest(port, head({ ...signed, 'Content-Length': String(700 * 1024 * 1024) }), '{}', 1000);
      assert.equal(huge.status, 413, huge.text);
      // Each refusal is logged once the site has seen its connection end; then one turn, for what that set off.
      await until(() => refusals.length >= 3, { what: 'the site to log its three refusals', timeoutMs: 5000 });
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
      assert.equal(refusals.length, 3, refusals.join('\n'));
      assert.match(refusals[1]!, /cut short/);
      // The site still serves its pages.
      const home = await httpCall(port, '/');
      assert.equal(home.status, 200);
      assert.match(home.body, /Before the change|After the change/);
    } finally {
      console.error = logged;
      process.off('unhandledRejection', record);
      await site.close();
    }
  });
});
