import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { dom, named, only } from '../support/html.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { freePort } from '../support/process.js';
import { TestClock, type TestServer } from '../support/server.js';
import { atEnd, freshServer } from '../support/world.js';
import { dev, signedIn, text, type DashboardClient } from './helpers.js';

/**
 * Names the test endpoints resolve to (no DNS): addresses where the connection fails at once, in
 * this host's network stack (issue 40 item 0).
 */
const TEST_ADDRESSES: Record<string, string> = { 'broadcast.hooks.test': '255.255.255.255', 'link-local.hooks.test': 'fe80::1' };
const resolve = async (hostname: string) => {
  const address = TEST_ADDRESSES[hostname];
  if (address === undefined) throw Object.assign(new Error(`no test address for ${hostname}`), { code: 'ENOTFOUND' });
  return [address];
};

/** Settings > Developer > Webhooks (D24, issue 32 item 5), through the real dashboard. */
describe('dashboard: webhooks page (D24)', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  let receiver: Receiver;
  let received: Receiver['received'];
  let url = '';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // Real time: the receiver checks signatures' timestamps against its own clock.
    server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: new TestClock(Date.now()), manualWebhooks: true, webhookResolve: resolve });
    accountId = await server.createAccount();
    ({ client } = await signedIn(server, accountId));
    receiver = await startReceiver();
    atEnd(t, () => receiver.close());
    ({ received, url } = receiver);
  }

  const page = async () => dom((await client.get(dev(accountId, 'webhooks'))).body);
  const secretOf = (body: string) => only(dom(body), '#webhook-secret').text.trim();

  it('empty: says what a webhook is and how to verify it; the tab is in the navigation', async (t) => {
    await world(t);
    const root = await page();
    assert.equal(named(root, 'nav a', 'Webhooks').getAttribute('aria-current'), 'page');
    assert.match(text(root.toString()), /No webhook endpoints yet\./);
    assert.ok(named(root, 'button', 'Add endpoint'));
  });

  /** An endpoint added on the page, as the adding test does: what the tests of an endpoint act on. */
  async function added(): Promise<void> {
    assert.equal((await client.post(dev(accountId, 'webhooks'), { country: 'sg', url })).status, 201);
  }

  it('a refused URL is explained next to the field, and nothing is added', async (t) => {
    await world(t);
    const res = await client.post(dev(accountId, 'webhooks'), { country: 'sg', url: 'http://example.com/hook' });
    assert.equal(res.status, 400);
    assert.match(only(dom(res.body), '#webhook-url-error').text, /use https/);
    assert.equal(only(dom(res.body), '#webhook-url').getAttribute('value'), 'http://example.com/hook');
    assert.deepEqual(await server.service.store.webhooks.listForAccount(accountId), []);
  });

  it('adding shows the secret once with a copy button; the list shows it enabled and up to date; audited', async (t) => {
    await world(t);
    const res = await client.post(dev(accountId, 'webhooks'), { country: 'sg', url });
    assert.equal(res.status, 201);
    const secret = secretOf(res.body);
    assert.match(secret, /^whsec_/);
    assert.ok(named(dom(res.body), 'button', 'Copy secret'));
    const root = await page();
    const card = only(root, 'section.webhook');
    assert.match(card.text, /Enabled/);
    assert.match(card.text, /Up to date/);
    assert.doesNotMatch(root.toString(), new RegExp(secret.slice(6, 20).replace(/[+/]/g, '\\$&')), 'the list never shows the secret');
    const activity = text((await client.get(dev(accountId, 'activity'))).body);
    assert.match(activity, new RegExp(`added webhook ${url.replace(/[./]/g, '\\$&')} for Singapore`));
  });

  it('Send test event delivers a signed webhook.test and lists the attempt; a failure says why', async (t) => {
    await world(t);
    await added();
    const [endpoint] = await server.service.store.webhooks.listForAccount(accountId);
    let res = await client.post(dev(accountId, 'webhooks/test'), { id: endpoint!.id });
    assert.match(text(res.body), /Test event delivered to .* HTTP 204/);
    const message = received.at(-1)!;
    assert.equal((new Webhook(endpoint!.secret).verify(message.body, message.headers as Record<string, string>) as { type: string }).type, 'webhook.test');
    receiver.answerWith(503);
    res = await client.post(dev(accountId, 'webhooks/test'), { id: endpoint!.id });
    assert.match(text(only(dom(res.body), '[role=alert]').toString()), /Test event not delivered to .* HTTP 503/);
    receiver.answerWith(204);
    const rows = only(dom(res.body), 'table.attempts').querySelectorAll('tbody tr');
    assert.equal(rows.length, 2);
    assert.match(rows[0]!.text, /webhook\.test/);
    assert.match(rows[0]!.text, /HTTP 503/);
  });

  it('Send test event to an address that fails at once or a closed port: the category only, no error name, no timing (issue 40 items 0, 8)', async (t) => {
    await world(t);
    const other = await server.createAccount();
    const { client: member } = await signedIn(server, other);
    const closed = await freePort();
    const cases: Array<[string, string]> = [
      ['https://broadcast.hooks.test/hooks', 'refused address'],
      ['https://link-local.hooks.test/hooks', 'could not connect'],
      [`http://127.0.0.1:${closed}/hooks`, 'could not connect'],
    ];
    for (const [hook, category] of cases) {
      assert.equal((await member.post(dev(other, 'webhooks'), { country: 'sg', url: hook })).status, 201, hook);
      const endpoint = (await server.service.store.webhooks.listForAccount(other)).find((e) => e.url === hook)!;
      const res = await member.post(dev(other, 'webhooks/test'), { id: endpoint.id });
      assert.equal(res.status, 200, hook);
      const alert = text(only(dom(res.body), '[role=alert]').toString()).trim();
      assert.equal(alert, `Test event not delivered to ${hook}: ${category}.`);
      const row = only(dom(res.body), `#webhook-${endpoint.id} table.attempts tbody tr`);
      assert.match(row.text, new RegExp(category));
      assert.doesNotMatch(row.text, /\d\s*ms|E[A-Z]{4,}/, 'no duration, no error name');
      const [attempt] = await server.service.store.webhooks.attempts(endpoint.id, 1);
      assert.equal(attempt!.error, category);
    }
    assert.equal((await member.get('/healthz')).status, 200, 'the process goes on');
  });

  it('an address no deployment may send to is refused when added (issue 40 item 0)', async (t) => {
    await world(t);
    const res = await client.post(dev(accountId, 'webhooks'), { country: 'sg', url: 'https://224.0.0.1/hook' });
    assert.equal(res.status, 400);
    assert.match(only(dom(res.body), '#webhook-url-error').text, /special-purpose range "multicast"/);
  });

  it('a failing endpoint shows since when and how far behind; a disabled one can be enabled', async (t) => {
    await world(t);
    await added();
    const [endpoint] = await server.service.store.webhooks.listForAccount(accountId);
    receiver.answerWith(500);
    await server.addListings(accountId, [{ title: 'New shop' }]);
    await server.service.webhooks.tick();
    let card = only(await page(), 'section.webhook');
    assert.match(card.text, /Failing since/);
    assert.match(card.text, /Behind: a message of 1 listing waiting since/);
    await server.service.store.webhooksDb.updateTable('webhook_endpoints').set({ enabled: 0 }).where('id', '=', endpoint!.id).execute();
    card = only(await page(), 'section.webhook');
    assert.match(card.text, /Disabled/);
    receiver.answerWith(204);
    const res = await client.post(dev(accountId, 'webhooks/enable'), { id: endpoint!.id });
    assert.equal(res.status, 303);
    assert.match(text((await client.get(res.location!)).body), /Enabled .*delivery resumes from where it stopped/);
    await server.service.webhooks.tick();
    assert.match(only(await page(), 'section.webhook').text, /Up to date/);
  });

  it('Show secret and Rotate secret (confirmed first): the new secret is shown, both sign for a day', async (t) => {
    await world(t);
    await added();
    const [endpoint] = await server.service.store.webhooks.listForAccount(accountId);
    assert.equal(secretOf((await client.get(`${dev(accountId, 'webhooks/secret')}?id=${endpoint!.id}`)).body), endpoint!.secret);
    const confirm = dom((await client.get(`${dev(accountId, 'webhooks/rotate')}?id=${endpoint!.id}`)).body);
    assert.ok(named(confirm, 'button', 'Rotate secret'));
    const rotated = secretOf((await client.post(dev(accountId, 'webhooks/rotate'), { id: endpoint!.id })).body);
    assert.notEqual(rotated, endpoint!.secret);
    await client.post(dev(accountId, 'webhooks/test'), { id: endpoint!.id });
    const message = received.at(-1)!;
    for (const secret of [rotated, endpoint!.secret]) assert.ok(new Webhook(secret).verify(message.body, message.headers as Record<string, string>));
  });

  it('Remove asks first, then removes; another account\'s endpoint is a 404; CSRF is required', async (t) => {
    await world(t);
    await added();
    const [endpoint] = await server.service.store.webhooks.listForAccount(accountId);
    const other = await server.createAccount();
    const { client: stranger } = await signedIn(server, other);
    assert.equal((await stranger.get(`${dev(other, 'webhooks/remove')}?id=${endpoint!.id}`)).status, 404);
    assert.equal((await stranger.post(dev(other, 'webhooks/remove'), { id: endpoint!.id })).status, 404);
    assert.equal((await client.post(dev(accountId, 'webhooks/remove'), { id: endpoint!.id, _csrf: null })).status, 403);
    const confirm = dom((await client.get(`${dev(accountId, 'webhooks/remove')}?id=${endpoint!.id}`)).body);
    assert.ok(named(confirm, 'button', 'Remove endpoint'));
    const res = await client.post(dev(accountId, 'webhooks/remove'), { id: endpoint!.id });
    assert.equal(res.status, 303);
    assert.match(text((await client.get(res.location!)).body), /Removed the endpoint/);
    assert.deepEqual(await server.service.store.webhooks.listForAccount(accountId), []);
  });
});
