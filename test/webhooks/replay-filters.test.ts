import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { REPLAY_HEADER } from '../../src/webhooks/deliverer.js';
import { addWebhook, replayWebhook, setWebhookFilters, WebhookError } from '../../src/webhooks/endpoints.js';
import type { WebhookEndpoint } from '../../src/storage/index.js';
import { TestClock, type TestServer } from '../support/server.js';
import { atEnd, freshServer } from '../support/world.js';
import { startReceiver, type Receiver, type Received } from '../support/webhook-receiver.js';

/**
 * Issue 43 item 3: replay (an endpoint's messages again from a point in time or a change-feed
 * position, in D24's order, marked by a header) and event filtering per endpoint, through the
 * real service on the suite's store, the deliverer driven by `tick()` and the injected clock.
 */

const data = (r: Received) => (JSON.parse(r.body) as { data: { upserted: string[]; removed: string[] } }).data;
const id = (n: number) => `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('webhook replay and filters (issue 43)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let accountId: string;
  let endpoint: WebhookEndpoint;

  /** Each test's own world (issue 42): a fresh server with its own clock, a receiver, and an account's endpoint on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: new TestClock(Date.now()), manualWebhooks: true });
    receiver = await startReceiver();
    atEnd(t, () => receiver.close());
    accountId = await server.createAccount();
    endpoint = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: receiver.url });
  }

  const tick = () => server.service.webhooks.tick();
  const change = async (listings: Array<Record<string, unknown>>) => {
    await server.addListings(accountId, listings);
    await tick();
    server.clock.advance(60_000);
  };

  it('since a time: the changes made from then on again, in order, marked as replays; then live messages unmarked', async (t) => {
    await world(t);
    await change([{ id: id(1) }]);
    const since = new Date(server.clock.now()).toISOString();
    await change([{ id: id(2) }]);
    await change([{ id: id(3) }, { id: id(1), status: 'leased' }]);
    assert.equal(receiver.received.length, 3);
    assert.ok(receiver.received.every((r) => r.headers[REPLAY_HEADER] === undefined), 'live messages carry no replay header');

    await replayWebhook(server.service.store, server.clock.now, endpoint, since);
    await tick();
    const replayed = receiver.received.slice(3);
    assert.equal(replayed.length, 1);
    assert.equal(replayed[0]!.headers[REPLAY_HEADER], 'true');
    assert.deepEqual(data(replayed[0]!), { country: 'sg', upserted: [id(2), id(3)], removed: [id(1)] }, 'each change since then, by its latest state');
    assert.notEqual(replayed[0]!.headers['webhook-id'], receiver.received[1]!.headers['webhook-id'], 'a replay is a new message');

    await change([{ id: id(4) }]);
    const live = receiver.received.at(-1)!;
    assert.deepEqual(data(live).upserted, [id(4)]);
    assert.equal(live.headers[REPLAY_HEADER], undefined, 'caught up: no longer a replay');
    const attempts = await server.service.store.webhooks.attempts(endpoint.id, 10);
    assert.deepEqual(attempts.map((a) => a.replay).reverse(), [0, 0, 0, 1, 0], 'the attempt log says which were replays');
  });

  it('a replay asked for while a message is retried waits for it: order holds', async (t) => {
    await world(t);
    receiver.answerWith(500);
    const since = new Date(server.clock.now()).toISOString();
    await server.addListings(accountId, [{ id: id(11) }]);
    await tick();
    await replayWebhook(server.service.store, server.clock.now, endpoint, since);
    await server.addListings(accountId, [{ id: id(12) }]);
    receiver.answerWith(204);
    server.clock.advance(5000);
    await tick();
    const bodies = receiver.received.map((r) => [data(r).upserted, r.headers[REPLAY_HEADER] ?? 'live']);
    assert.deepEqual(bodies, [[[id(11)], 'live'], [[id(11)], 'live'], [[id(11), id(12)], 'true']],
      'the kept message first (retried, same id), then the replay from the time asked, which covers the later change too');
  });

  it('from a change-feed cursor the site holds: every change after it', async (t) => {
    await world(t);
    const { key } = await server.createKey(accountId);
    await change([{ id: id(21) }]);
    const feed = await server.get('/v1/listings/changes', { key });
    assert.equal(feed.status, 200, feed.body);
    const cursor = feed.json.next_cursor as string;
    await change([{ id: id(22) }]);
    await replayWebhook(server.service.store, server.clock.now, endpoint, cursor);
    await tick();
    const last = receiver.received.at(-1)!;
    assert.deepEqual([data(last).upserted, last.headers[REPLAY_HEADER]], [[id(22)], 'true']);
  });

  it('refuses a time in the future, a malformed time, another tenant\'s cursor, and a time before the history kept', async (t) => {
    await world(t);
    const { store } = server.service;
    const refused = async (since: string, message: RegExp) =>
      assert.rejects(replayWebhook(store, server.clock.now, endpoint, since), (e: Error) => e instanceof WebhookError && message.test(e.message));
    await refused(new Date(server.clock.now() + 60_000).toISOString(), /in the future/);
    await refused('2026-13-45T00:00:00Z', /not a date and time/);
    await refused('2026-12-01', /not a date and time/);
    await refused('', /say since when/);
    const other = await server.createAccount();
    const { key } = await server.createKey(other);
    await server.addListings(other, [{}]);
    const foreign = (await server.get('/v1/listings/changes', { key })).json.next_cursor as string;
    await refused(foreign, /not issued by this API for this account and country/);
    await refused('not-a-cursor', /not issued by this API/);
    // The history pruned up to now: nothing from before it can be replayed.
    await change([{ id: id(31) }]);
    await store.feed.prune(new Date(server.clock.now() + 1).toISOString());
    await refused(new Date(server.clock.now() - 3600_000).toISOString(), /does not reach back/);
    assert.equal((await store.webhooks.get(endpoint.id))!.replay_from, null, 'nothing was asked for');
  });

  it('only upserts, only removals: the other kind is left out, and a message left with nothing is not sent', async (t) => {
    await world(t);
    await setWebhookFilters(server.service.store, endpoint, { changes: 'upserted', usageTypes: [] });
    await change([{ id: id(41) }, { id: id(42) }]);
    await change([{ id: id(41), status: 'leased' }]);
    assert.equal(receiver.received.length, 1, 'a removal alone: nothing sent');
    assert.deepEqual(data(receiver.received[0]!), { country: 'sg', upserted: [id(41), id(42)], removed: [] });
    await setWebhookFilters(server.service.store, endpoint, { changes: 'removed', usageTypes: [] });
    await change([{ id: id(42), status: 'leased' }, { id: id(43) }]);
    assert.deepEqual(data(receiver.received.at(-1)!), { country: 'sg', upserted: [], removed: [id(42)] });
    const row = (await server.service.store.webhooks.get(endpoint.id))!;
    assert.equal(row.message_id, null, 'the position moved past what was filtered out');
  });

  it('some usage types: upserts of those, an upsert that is of none of them told as a removal, removals as they are', async (t) => {
    await world(t);
    await setWebhookFilters(server.service.store, endpoint, { changes: 'all', usageTypes: ['Office', 'Cafe'] });
    await change([{ id: id(51), usage_types: ['Office'] }, { id: id(52), usage_types: ['F&B', 'Cafe'] }, { id: id(53), usage_types: ['Retail', 'Shop'] }]);
    assert.deepEqual(data(receiver.received[0]!), { country: 'sg', upserted: [id(51), id(52)], removed: [id(53)] });
    // An office becomes a shop: the site that shows offices must drop it.
    await change([{ id: id(51), usage_types: ['Retail'] }]);
    assert.deepEqual(data(receiver.received[1]!), { country: 'sg', upserted: [], removed: [id(51)] });
  });

  it('a filter names a usage type or a kind of change that exists; each refusal one sentence', async (t) => {
    await world(t);
    const { store } = server.service;
    await assert.rejects(setWebhookFilters(store, endpoint, { changes: 'some', usageTypes: [] }), /changes must be one of all, upserted, removed/);
    await assert.rejects(setWebhookFilters(store, endpoint, { changes: 'all', usageTypes: ['Offices'] }), /"Offices" is not a usage type/);
    const row = (await store.webhooks.get(endpoint.id))!;
    assert.deepEqual([row.only_change, row.only_usage_types], [null, null], 'nothing changed');
  });

  it('the attempt log pages back from any attempt, newest first, to the first', async (t) => {
    await world(t);
    receiver.answerWith(500);
    await server.addListings(accountId, [{}]);
    for (let i = 0; i < 7; i++) {
      await tick();
      server.clock.advance(3 * 3600_000);
    }
    const { store } = server.service;
    const all = await store.webhooks.attempts(endpoint.id, 100);
    assert.equal(all.length, 7);
    const pages = [];
    let before: string | undefined;
    for (;;) {
      const page = await store.webhooks.attempts(endpoint.id, 3, before);
      if (page.length === 0) break;
      pages.push(page.map((a) => a.attempt));
      before = page.at(-1)!.id;
    }
    assert.deepEqual(pages, [[7, 6, 5], [4, 3, 2], [1]]);
    assert.deepEqual(await store.webhooks.attempts(endpoint.id, 3, crypto.randomUUID()), [], 'an attempt that is not the endpoint\'s: nothing');
  });
});
