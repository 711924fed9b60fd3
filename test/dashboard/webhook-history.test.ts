import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { REPLAY_HEADER } from '../../src/webhooks/deliverer.js';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import type { WebhookEndpoint } from '../../src/storage/index.js';
import { dom, named, only } from '../support/html.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { TestClock, type TestServer } from '../support/server.js';
import { atEnd, freshServer } from '../support/world.js';
import { activityItems, dev, signedIn, type DashboardClient } from './helpers.js';

/**
 * Settings > Developer > Webhooks, issue 43 item 3: Replay, Choose events and every attempt page by
 * page, through the real dashboard; the deliverer driven by `tick()` and the injected clock.
 */
describe('dashboard: webhook replay, events and attempt log (issue 43)', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  let receiver: Receiver;
  let endpoint: WebhookEndpoint;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: new TestClock(Date.now()), manualWebhooks: true });
    accountId = await server.createAccount();
    ({ client } = await signedIn(server, accountId));
    receiver = await startReceiver();
    atEnd(t, () => receiver.close());
    endpoint = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: receiver.url });
  }

  const tick = () => server.service.webhooks.tick();
  const card = async () => only(dom((await client.get(dev(accountId, 'webhooks'))).body), `#webhook-${endpoint.id}`);

  it('the card says what the endpoint is told of, and links to Replay, Choose events and every attempt', async (t) => {
    await world(t);
    await server.addListings(accountId, [{}]);
    await tick();
    const root = await card();
    assert.match(root.text, /Told of every change\./);
    assert.match(named(root, 'a', `Replay ${receiver.url}`).getAttribute('href')!, /\/webhooks\/replay\?id=/);
    assert.match(named(root, 'a', `Choose events of ${receiver.url}`).getAttribute('href')!, /\/webhooks\/filters\?id=/);
    assert.ok(named(root, 'a', 'Every attempt of the last 7 days'));
  });

  it('Replay from a time without an offset (read as UTC): the messages again, marked; audited', async (t) => {
    await world(t);
    // A change, told to the endpoint: what the replay sends again.
    await server.addListings(accountId, [{}]);
    await tick();
    const since = new Date(server.clock.now() - 60_000).toISOString().slice(0, 16);
    const form = dom((await client.get(`${dev(accountId, 'webhooks/replay')}?id=${endpoint.id}`)).body);
    assert.ok(named(form, 'button', 'Replay'));
    const res = await client.post(dev(accountId, 'webhooks/replay'), { id: endpoint.id, since });
    assert.equal(res.status, 303);
    const after = dom((await client.get(res.headers.location as string)).body);
    assert.match(only(after, '[role="status"], .notice, .alert.success').text, /Replay of .* asked for/);
    assert.match(only(after, `#webhook-${endpoint.id}`).text, /A replay is under way/);
    const before = receiver.received.length;
    await tick();
    assert.equal(receiver.received.length, before + 1);
    assert.equal(receiver.received.at(-1)!.headers[REPLAY_HEADER], 'true');
    assert.match((await card()).text, /replay/, 'the attempt is marked in the table');
    assert.doesNotMatch((await card()).text, /A replay is under way/, 'caught up');
    const activity = activityItems((await client.get(dev(accountId, 'activity'))).body);
    assert.ok(activity.some(([action, words]) => action === 'webhook.replayed' && /asked for the messages of webhook .* again/.test(words)), JSON.stringify(activity));
  });

  it('a replay that cannot be served is explained next to the field; nothing is asked for', async (t) => {
    await world(t);
    for (const [since, reason] of [['2999-01-01T00:00Z', /in the future/], ['soon', /not issued by this API/]] as const) {
      const res = await client.post(dev(accountId, 'webhooks/replay'), { id: endpoint.id, since });
      assert.equal(res.status, 400);
      assert.match(only(dom(res.body), '#replay-since-error').text, reason);
      assert.equal(only(dom(res.body), '#replay-since').getAttribute('value'), since);
    }
    assert.equal((await server.service.store.webhooks.get(endpoint.id))!.replay_from, null);
  });

  it('Choose events: the kind of change and usage types, ticked as saved; an unknown one is refused', async (t) => {
    await world(t);
    const res = await client.post(dev(accountId, 'webhooks/filters'), { id: endpoint.id, changes: 'upserted', usage_types: ['Office', 'Cafe'] });
    assert.equal(res.status, 303);
    assert.match((await card()).text, /Told of upserts only, listings of Office, Cafe\./);
    const form = dom((await client.get(`${dev(accountId, 'webhooks/filters')}?id=${endpoint.id}`)).body);
    assert.deepEqual(form.querySelectorAll('input[name="usage_types"][checked]').map((i) => i.getAttribute('value')), ['Office', 'Cafe']);
    assert.equal(only(form, 'input[name="changes"][checked]').getAttribute('value'), 'upserted');
    const bad = await client.post(dev(accountId, 'webhooks/filters'), { id: endpoint.id, changes: 'all', usage_types: 'Offices' });
    assert.equal(bad.status, 400);
    assert.match(only(dom(bad.body), '[role="alert"]').text, /"Offices" is not a usage type/);
    // One box ticked is one value, as a browser sends it; none ticked clears the usage types.
    await client.post(dev(accountId, 'webhooks/filters'), { id: endpoint.id, changes: 'all', usage_types: 'Retail' });
    assert.match((await card()).text, /Told of every change, listings of Retail\./);
    await client.post(dev(accountId, 'webhooks/filters'), { id: endpoint.id, changes: 'all' });
    assert.match((await card()).text, /Told of every change\./);
  });

  it('every attempt, 25 a page, newest first, back to the oldest kept', async (t) => {
    await world(t);
    // Thirty failed attempts of one message, the newest of the log.
    for (let n = 1; n <= 30; n++) {
      await server.service.store.webhooks.recordAttempt({
        endpoint_id: endpoint.id, at: new Date(server.clock.now() + n * 1000).toISOString(), message_id: 'msg_paged', message_type: 'listings.changed',
        ids: 1, attempt: n, status: 503, error: 'HTTP 503', duration_ms: 5, replay: 0,
      });
    }
    const all = await server.service.store.webhooks.attempts(endpoint.id, 100);
    const firstPage = await client.get(`${dev(accountId, 'webhooks/attempts')}?id=${endpoint.id}`);
    assert.equal(firstPage.status, 200, firstPage.body);
    const first = dom(firstPage.body);
    const rows = (root: ReturnType<typeof dom>) => root.querySelectorAll('table.attempts tbody tr').length;
    assert.equal(rows(first), 25);
    assert.deepEqual(first.querySelectorAll('table.attempts tbody tr td:nth-child(5)').slice(0, 3).map((td) => td.text), ['30', '29', '28'], 'newest first');
    const older = named(first, 'a', 'Older attempts').getAttribute('href')!;
    const second = dom((await client.get(older.replaceAll('&amp;', '&'))).body);
    assert.equal(rows(second), all.length - 25);
    assert.match(only(second, 'nav.pager').text, /The oldest attempt kept/);
    assert.ok(named(second, 'a', 'Newest attempts'));
    assert.equal((await client.get(`${dev(accountId, 'webhooks/attempts')}?id=${endpoint.id}&before=nope`)).status, 404);
    const other = await server.createAccount();
    const theirs = await addWebhook(server.service.store, server.clock.now, { accountId: other, country: 'sg', url: receiver.url });
    assert.equal((await client.get(`${dev(accountId, 'webhooks/attempts')}?id=${theirs.id}`)).status, 404, 'another account\'s endpoint');
    assert.equal((await client.post(dev(accountId, 'webhooks/replay'), { id: theirs.id, since: '2026-01-01T00:00Z' })).status, 404);
  });
});
