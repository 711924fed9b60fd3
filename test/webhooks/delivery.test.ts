import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { WEBHOOK_MESSAGE_SCHEMAS } from '../../src/webhooks/messages.js';
import { sendAttempt } from '../../src/webhooks/send.js';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { DISABLE_AFTER_MS, RETRY_DELAYS_MS } from '../../src/webhooks/deliverer.js';
import { TestClock, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver, type Received } from '../support/webhook-receiver.js';
import { until } from '../support/until.js';
import { atEnd, freshServer } from '../support/world.js';

/**
 * Webhook delivery (D24) through the real service on the suite's store, to a real HTTP receiver
 * on loopback (WEBHOOK_ALLOW_PRIVATE=1). The deliverer is driven by `tick()` and the injected
 * clock: no sleeps.
 */



/** The published schema of a message type (what the OpenAPI document's `webhooks` give). */
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats.default(ajv);
const validChanged = ajv.compile(WEBHOOK_MESSAGE_SCHEMAS.ListingsChangedMessage);
const payload = (r: Received) => JSON.parse(r.body) as { type: string; timestamp: string; data: { country: string; upserted: string[]; removed: string[] } };
const id = (n: number) => `d0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('webhook delivery (D24)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server with its own clock, a receiver, and an account. */
  async function world(t: TestContext): Promise<void> {
    // The clock starts at the real time: receivers (standardwebhooks) check the timestamp against theirs.
    server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1', METRICS_PORT: '0' }, { clock: new TestClock(Date.now()), manualWebhooks: true });
    receiver = await startReceiver();
    atEnd(t, () => receiver.close());
    accountId = await server.createAccount();
  }

  const add = async (url = receiver.url) => addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url });
  const tick = () => server.service.webhooks.tick();

  it('a change after the endpoint was added is one signed message; nothing before it, nothing twice', async (t) => {
    await world(t);
    await server.addListings(accountId, [{ id: id(1) }]);
    const endpoint = await add();
    await tick();
    assert.equal(receiver.received.length, 0, 'a new endpoint starts at the end of the history');

    await server.addListings(accountId, [{ id: id(2) }, { id: id(3) }]);
    await tick();
    assert.equal(receiver.received.length, 1);
    const [message] = receiver.received;
    assert.deepEqual(new Webhook(endpoint.secret).verify(message!.body, message!.headers as Record<string, string>), payload(message!));
    assert.match(String(message!.headers['webhook-id']), /^msg_[0-9a-f-]{36}$/);
    assert.equal(message!.headers['content-type'], 'application/json');
    const { type, data } = payload(message!);
    assert.ok(validChanged(payload(message!)), JSON.stringify(validChanged.errors));
    assert.equal(type, 'listings.changed');
    assert.deepEqual({ ...data, upserted: [...data.upserted].sort() }, { country: 'sg', upserted: [id(2), id(3)], removed: [] });

    await tick();
    assert.equal(receiver.received.length, 1, 'the position moved past the delivered message');
    const [attempt] = await server.service.store.webhooks.attempts(endpoint.id, 10);
    assert.equal(attempt!.status, 204);
    assert.equal(attempt!.ids, 2);
  });

  it('a listing that stops being visible is removed; one id in one list, by its latest change', async (t) => {
    await world(t);
    await add();
    await server.addListings(accountId, [{ id: id(11) }]);
    await server.addListings(accountId, [{ id: id(11), status: 'leased' }]);
    await tick();
    assert.equal(receiver.received.length, 1);
    assert.deepEqual(payload(receiver.received[0]!).data, { country: 'sg', upserted: [], removed: [id(11)] });
  });

  it('an expiry passing is a removal at its instant, with no write', async (t) => {
    await world(t);
    const expiry = new Date(server.clock.now() + 60_000).toISOString();
    await server.addListings(accountId, [{ id: id(21), expiry_date: expiry }]);
    await add();
    await tick();
    assert.equal(receiver.received.length, 0);
    server.clock.advance(61_000);
    await tick();
    assert.equal(receiver.received.length, 1);
    assert.deepEqual(payload(receiver.received[0]!).data.removed, [id(21)]);
  });

  it('2,500 new listings: messages of at most 1,000 ids, in order, every id once', async (t) => {
    await world(t);
    await add();
    const listings = Array.from({ length: 2500 }, (_, i) => ({ id: id(1000 + i) }));
    await server.addListings(accountId, listings);
    await tick();
    const messages = receiver.received.map(payload);
    assert.equal(messages.length, 3);
    assert.deepEqual(messages.map((m) => m.data.upserted.length), [1000, 1000, 500]);
    for (const m of messages) assert.ok(validChanged(m), JSON.stringify(validChanged.errors));
    assert.deepEqual(new Set(messages.flatMap((m) => m.data.upserted)).size, 2500);
  });

  it('a failing endpoint gets the same message again on the retry schedule; a 3xx is not followed; then it recovers', async (t) => {
    await world(t);
    const endpoint = await add();
    await server.addListings(accountId, [{ id: id(31) }]);
    receiver.answerWith(() => 500);
    await tick();
    assert.equal(receiver.received.length, 1);
    let row = (await server.service.store.webhooks.get(endpoint.id))!;
    assert.equal(row.attempt, 1);
    assert.notEqual(row.failing_since, null);
    assert.equal(Date.parse(row.next_attempt_at!) - Date.parse(row.failing_since!), RETRY_DELAYS_MS[0]);

    await tick();
    assert.equal(receiver.received.length, 1, 'not before its time');
    server.clock.advance(RETRY_DELAYS_MS[0]);
    receiver.answerWith(() => 302);
    await server.addListings(accountId, [{ id: id(32) }]);
    await tick();
    assert.equal(receiver.received.length, 2, 'the redirect was not followed');
    assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
    assert.equal(receiver.received[1]!.body, receiver.received[0]!.body, 'the same message, not one with the later change');
    assert.notEqual(receiver.received[1]!.headers['webhook-timestamp'], undefined);

    server.clock.advance(RETRY_DELAYS_MS[1]);
    receiver.answerWith(() => 200);
    await tick();
    // Delivered, then at once the message of the later change: a backlog goes out in one go.
    assert.equal(receiver.received.length, 4);
    row = (await server.service.store.webhooks.get(endpoint.id))!;
    assert.equal(row.failing_since, null);
    assert.equal(row.attempt, 0);
    await tick();
    assert.equal(receiver.received.length, 4, 'nothing more');
    assert.deepEqual(payload(receiver.received[3]!).data.upserted, [id(32)]);
    const attempts = await server.service.store.webhooks.attempts(endpoint.id, 10);
    assert.deepEqual(attempts.map((a) => a.status).reverse(), [500, 302, 200, 200]);
  });

  it('after a day of failures the endpoint is disabled; enable resumes from its position with the same message', async (t) => {
    await world(t);
    const endpoint = await add();
    await server.addListings(accountId, [{ id: id(41) }]);
    receiver.answerWith(() => 503);
    for (let elapsed = 0; elapsed <= DISABLE_AFTER_MS; elapsed += RETRY_DELAYS_MS.at(-1)!) {
      await tick();
      server.clock.advance(RETRY_DELAYS_MS.at(-1)!);
    }
    await tick();
    const row = (await server.service.store.webhooks.get(endpoint.id))!;
    assert.equal(row.enabled, 0, 'disabled');
    const sent = receiver.received.length;
    server.clock.advance(RETRY_DELAYS_MS.at(-1)!);
    await tick();
    assert.equal(receiver.received.length, sent, 'a disabled endpoint gets nothing');

    receiver.answerWith(() => 200);
    assert.equal(await server.service.store.webhooks.enable(endpoint.id), true);
    await tick();
    assert.equal(receiver.received.length, sent + 1);
    assert.equal(receiver.received.at(-1)!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
  });

  it('an endpoint whose history was pruned (disabled too long) gets listings.resync, then changes again', async (t) => {
    await world(t);
    const endpoint = await add();
    await server.addListings(accountId, [{ id: id(91) }]);
    // The history after its position is gone, as after CHANGE_HISTORY_DAYS of being disabled.
    await server.service.store.write((tx) => tx.updateTable('tenant_versions').set({ pruned_seq: 2 ** 31 }).where('owner_account_id', '=', accountId).execute());
    await tick();
    assert.equal(receiver.received.length, 1);
    const resync = payload(receiver.received[0]!);
    assert.deepEqual({ type: resync.type, data: resync.data }, { type: 'listings.resync', data: { country: 'sg' } });
    const [attempt] = await server.service.store.webhooks.attempts(endpoint.id, 1);
    assert.equal(attempt!.message_type, 'listings.resync');
    await server.service.store.write((tx) => tx.updateTable('tenant_versions').set({ pruned_seq: 0 }).where('owner_account_id', '=', accountId).execute());
    await server.addListings(accountId, [{ id: id(92) }]);
    await tick();
    assert.deepEqual(payload(receiver.received[1]!).data.upserted, [id(92)], 'from the end of the history on');
  });

  it('an instance that dies mid-delivery is taken over after its lease, with the same message', async (t) => {
    await world(t);
    const endpoint = await add();
    const { store } = server.service;
    const now = server.clock.now();
    // Another instance took the lease and kept its message, then died before sending it.
    assert.ok(await store.webhooks.takeLease(endpoint.id, 'dead-instance', new Date(now).toISOString(), new Date(now + 30_000).toISOString()));
    const body = JSON.stringify({ type: 'listings.changed', timestamp: new Date(now).toISOString(), data: { country: 'sg', upserted: [id(51)], removed: [] } });
    assert.equal(await store.webhooks.keepMessage(endpoint.id, 'dead-instance', { id: 'msg_taken-over', at: new Date(now).toISOString(), type: 'listings.changed', body, ids: 1, end: endpoint.position, replay: false }), true);
    assert.equal(await store.webhooks.takeLease(endpoint.id, 'another', new Date(now).toISOString(), new Date(now + 30_000).toISOString()), undefined, 'one sender at a time');
    await tick();
    assert.equal(receiver.received.length, 0, 'not while the lease holds');
    server.clock.advance(30_000);
    await tick();
    assert.equal(receiver.received.length, 1);
    assert.equal(receiver.received[0]!.headers['webhook-id'], 'msg_taken-over');
    assert.equal(receiver.received[0]!.body, body);
  });

  it('two instances on one database: each change in one message, never sent by both at once', async (t) => {
    await world(t);
    const other = await freshServer(t, { DATABASE_URL: server.databaseUrl, WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: server.clock, manualWebhooks: true });
    let open = 0;
    let most = 0;
    receiver.answerWith(() => {
      most = Math.max(most, ++open);
      setImmediate(() => open--);
      return 200;
    });
    await add();
    for (let round = 0; round < 4; round++) {
      await server.addListings(accountId, [{ id: id(70 + round) }]);
      await Promise.all([tick(), other.service.webhooks.tick(), tick(), other.service.webhooks.tick()]);
    }
    for (let i = 0; i < 3; i++) await Promise.all([tick(), other.service.webhooks.tick()]);
    const ids = receiver.received.flatMap((r) => payload(r).data.upserted);
    assert.deepEqual([...ids].sort(), [id(70), id(71), id(72), id(73)], 'every change once');
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, receiver.received.length, 'no message twice');
    assert.equal(most, 1, 'one sender at a time');
  });

  it('metrics: attempts by outcome, and the age of the oldest undelivered change', async (t) => {
    await world(t);
    const value = async (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(await server.service.metrics!.scrape())?.[1]);
    const failed = await value('listings_webhook_deliveries_total{outcome="failed"}');
    const delivered = await value('listings_webhook_deliveries_total{outcome="delivered"}');
    await add();
    receiver.answerWith(() => 500);
    await server.addListings(accountId, [{ id: id(81) }]);
    await tick();
    assert.equal(await value('listings_webhook_deliveries_total{outcome="failed"}'), failed + 1);
    server.clock.advance(3000);
    await tick();
    assert.equal(await value('listings_webhook_oldest_undelivered_seconds'), 3);
    server.clock.advance(RETRY_DELAYS_MS[0]);
    receiver.answerWith(() => 200);
    await tick();
    await tick();
    assert.equal(await value('listings_webhook_deliveries_total{outcome="delivered"}'), delivered + 1);
    assert.equal(await value('listings_webhook_oldest_undelivered_seconds'), 0);
  });

  it('a hanging endpoint holds neither the next look nor another endpoint\'s delivery', async (t) => {
    await world(t);
    const slow = await startReceiver();
    slow.answerWith('hang');
    try {
      await add(slow.url);
      await server.addListings(accountId, [{ id: id(95) }]);
      const hanging = tick();
      await until(() => slow.received.length === 1, { what: 'the hanging attempt' });
      const other = await server.createAccount();
      await addWebhook(server.service.store, server.clock.now, { accountId: other, country: 'sg', url: receiver.url });
      await server.addListings(other, [{ id: id(96) }]);
      await tick();
      assert.deepEqual(payload(receiver.received[0]!).data.upserted, [id(96)], 'delivered while the other endpoint hangs');
      await slow.close();
      await hanging;
    } finally {
      await slow.close();
    }
  });

  it('a slow endpoint does not hold the API: requests are answered while it hangs', async (t) => {
    await world(t);
    await add();
    receiver.answerWith(() => 'hang');
    await server.addListings(accountId, [{ id: id(61) }]);
    const delivering = tick();
    const { key } = await server.createKey(accountId);
    const started = Date.now();
    const response = await server.get('/v1/listings', { key });
    assert.equal(response.status, 200);
    assert.ok(Date.now() - started < 2000);
    await receiver.close();
    await delivering;
  });
});

describe('one attempt (D24 safety)', () => {
  it('an address that is loopback, private or link-local is refused without WEBHOOK_ALLOW_PRIVATE, nothing sent', async () => {
    const receiver = await startReceiver();
    try {
      const literal = await sendAttempt(receiver.url, {}, '{}', { allowPrivate: false });
      assert.equal(literal.error, 'refused address');
      assert.match(literal.detail ?? '', /^resolved address 127\.0\.0\.1 is .* \(allowed only with WEBHOOK_ALLOW_PRIVATE\)$/);
      // DNS rebinding: a public-looking name that resolves to the metadata address.
      const rebinding = await sendAttempt('https://hooks.example.com/x', {}, '{}', { allowPrivate: false, resolve: async () => ['169.254.169.254'] });
      assert.equal(rebinding.error, 'refused address');
      assert.match(rebinding.detail ?? '', /169\.254\.169\.254 is in the non-global range "linkLocal"/);
      const mixed = await sendAttempt('https://hooks.example.com/x', {}, '{}', { allowPrivate: false, resolve: async () => ['93.184.216.34', '10.0.0.1'] });
      assert.match(mixed.detail ?? '', /10\.0\.0\.1 is in the non-global range "private"/);
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });

  it('connects to the address checked: the name is not looked up a second time', async () => {
    const receiver = await startReceiver();
    try {
      let lookups = 0;
      const port = new URL(receiver.url).port;
      const outcome = await sendAttempt(`http://hooks.localhost:${port}/x`, {}, '{}', { allowPrivate: true, resolve: async () => (lookups++, ['127.0.0.1']) });
      assert.equal(outcome.status, 204);
      assert.equal(lookups, 1);
      assert.equal(receiver.received[0]!.headers.host, `hooks.localhost:${port}`);
    } finally {
      await receiver.close();
    }
  });

  it('no answer within the timeout is a failure; the body of an answer is not needed', async () => {
    const receiver = await startReceiver();
    try {
      receiver.answerWith(() => 'hang');
      const outcome = await sendAttempt(receiver.url, {}, '{}', { allowPrivate: true, timeoutMs: 200 });
      assert.equal(outcome.status, undefined);
      assert.deepEqual([outcome.error, outcome.detail], ['timed out', 'no answer within 0.2 s']);
    } finally {
      await receiver.close();
    }
  });

  it('a connection reset before the answer is a failure: its category, the reason for the operator', async () => {
    const server = createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const outcome = await sendAttempt(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, {}, '{}', { allowPrivate: true });
      assert.equal(outcome.status, undefined);
      assert.equal(outcome.error, 'closed without an answer');
      assert.match(outcome.detail ?? '', /ECONNRESET|socket hang up/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a connection refused is a failure: its category, the reason for the operator', async () => {
    const outcome = await sendAttempt('http://127.0.0.1:1/x', {}, '{}', { allowPrivate: true });
    assert.deepEqual([outcome.error, outcome.detail], ['could not connect', 'ECONNREFUSED']);
  });
});
