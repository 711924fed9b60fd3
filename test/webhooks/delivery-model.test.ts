import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { RETRY_DELAYS_MS } from '../../src/webhooks/deliverer.js';
import { TestClock, type TestServer } from '../support/server.js';
import { prng } from '../support/random.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { atEnd, freshServer } from '../support/world.js';

/**
 * Issue 43 "done when": order and no loss under concurrency. A model of commits against messages:
 * six tenants of three endpoints each, two instances on one database (the suite's store: SQLite, or
 * PostgreSQL in its run) delivering at once, random commits (new listings, updates, removals) and
 * receivers that fail a third of the time. Whatever the interleaving, each endpoint's delivered
 * messages, folded in the order they arrived, give exactly the tenant's changes since the endpoint
 * was added, by their latest state; no endpoint ever has two attempts open at once; a retried
 * message is the same message.
 */

const TENANTS = 6;
const ENDPOINTS_PER_TENANT = 3;
const ROUNDS = 25;

interface Endpoint {
  tenant: number;
  receiver: Receiver;
  /** The status each received message was answered with, by its index in `receiver.received`. */
  answers: number[];
}

describe('webhook delivery model: many endpoints, two instances (issue 43)', () => {
  /** The test's own world (issue 42): two instances on one fresh database, on one clock. */
  async function world(t: TestContext): Promise<{ first: TestServer; second: TestServer }> {
    const clock = new TestClock(Date.now());
    const first = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_CONCURRENCY: '4' }, { clock, manualWebhooks: true });
    const second = await freshServer(t, { DATABASE_URL: first.databaseUrl, WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_CONCURRENCY: '4' }, { clock, manualWebhooks: true });
    return { first, second };
  }

  it('each endpoint\'s delivered messages give its tenant\'s changes, in order, whatever the interleaving', { timeout: 120_000 }, async (context) => {
    const { first, second } = await world(context);
    const endpoints: Endpoint[] = [];
    const accounts: string[] = [];
    const seed = Number(process.env.MODEL_SEED ?? Date.now() % 100_000);
    // A failure names its seed: MODEL_SEED=<seed> runs the same sequence again.
    const next = prng(seed);
    let failing = true;
    for (let t = 0; t < TENANTS; t++) {
      accounts.push(await first.createAccount());
      for (let e = 0; e < ENDPOINTS_PER_TENANT; e++) {
        const endpoint: Endpoint = { tenant: t, receiver: await startReceiver(), answers: [] };
        atEnd(context, () => endpoint.receiver.close());
        endpoint.receiver.answerWith(() => {
          const status = failing && next() < 1 / 3 ? 500 : 204;
          endpoint.answers.push(status);
          return status;
        });
        await addWebhook(first.service.store, first.clock.now, { accountId: accounts[t]!, country: 'sg', url: endpoint.receiver.url });
        endpoints.push(endpoint);
      }
    }
    // The model: each tenant's listings and whether each is visible now.
    const visible = accounts.map(() => new Map<string, boolean>());
    const [a, b] = [first.service.webhooks, second.service.webhooks];
    const ticks = () => Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);

    for (let round = 0; round < ROUNDS; round++) {
      // Each tenant has changes (its first rounds), then tenants at random.
      const t = round < TENANTS ? round : Math.floor(next() * TENANTS);
      const known = [...visible[t]!.keys()];
      const lines: Array<Record<string, unknown>> = [];
      for (let n = 1 + Math.floor(next() * 4); n > 0; n--) {
        const reuse = known.length > 0 && next() < 0.6;
        const id = reuse ? known[Math.floor(next() * known.length)]! : crypto.randomUUID();
        if (lines.some((l) => l.id === id)) continue;
        const show = next() < 0.7;
        lines.push({ id, status: show ? 'active' : 'leased' });
      }
      // Every write is a change of the feed (D22), a listing written as not visible a removal.
      await first.addListings(accounts[t]!, lines);
      for (const l of lines) visible[t]!.set(l.id as string, l.status === 'active');
      await ticks();
      if (next() < 0.5) first.clock.advance(RETRY_DELAYS_MS[0]);
    }
    // Then every endpoint recovers, and both instances deliver what is left.
    failing = false;
    for (let i = 0; i < 8; i++) {
      first.clock.advance(RETRY_DELAYS_MS[1]);
      await ticks();
    }

    for (const [index, endpoint] of endpoints.entries()) {
      const label = `seed ${seed}, endpoint ${index} (tenant ${endpoint.tenant})`;
      const { received } = endpoint.receiver;
      assert.ok(endpoint.receiver.received.length > 0, `${label}: its tenant's changes were sent`);
      assert.equal(endpoint.receiver.mostAtOnce(), 1, `${label}: one attempt at a time`);
      const bodies = new Map<string, string>();
      for (const r of received) {
        const id = r.headers['webhook-id'] as string;
        assert.equal(bodies.get(id) ?? r.body, r.body, `${label}: a retried message is the same message`);
        bodies.set(id, r.body);
      }
      const delivered = received.filter((_, i) => endpoint.answers[i] === 204);
      assert.equal(new Set(delivered.map((r) => r.headers['webhook-id'])).size, delivered.length, `${label}: each message delivered once`);
      const folded = new Map<string, boolean>();
      for (const r of delivered) {
        const { data } = JSON.parse(r.body) as { data: { upserted: string[]; removed: string[] } };
        for (const id of data.upserted) folded.set(id, true);
        for (const id of data.removed) folded.set(id, false);
      }
      assert.deepEqual(new Map([...folded].sort()), new Map([...visible[endpoint.tenant]!].sort()), `${label}: the changes, by their latest state`);
    }
    assert.ok(endpoints.some((e) => e.answers.includes(500)), 'some attempts failed and were retried');
  });
});
