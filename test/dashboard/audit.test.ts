import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dom, named } from '../support/html.js';
import { activityItems, dev, revealedKey, signedIn, text } from './helpers.js';

describe('dashboard audit log: who created, relabelled or revoked which key, who added or removed which origin, and when', () => {
  let server: TestServer;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
  }

  it('records every change with actor, action, target and time (never the full key), and lists them newest first', async (t) => {
    await world(t);
    const alice = await signedIn(server, accountId);
    const bob = await signedIn(server, accountId);
    const activity = await alice.client.get(dev(accountId, 'activity'));
    assert.match(text(activity.body), /Nothing yet\. Changes to keys and origins made here will be listed/);

    const created = await alice.client.createKey(accountId, { label: 'Website', country: 'sg' });
    const fullKey = revealedKey(created.body);
    const key = (await server.service.store.keys.listForAccount(accountId))[0]!;
    server.clock.advance(60_000);
    await bob.client.post(`${dev(accountId, 'keys')}/${key.id}/label`, { label: 'Website (prod)' });
    server.clock.advance(60_000);
    await alice.client.post(dev(accountId, 'origins'), { country: 'sg', origin: 'https://www.example.com' });
    server.clock.advance(60_000);
    await bob.client.post(`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'https://www.example.com' });
    server.clock.advance(60_000);
    await alice.client.post(`${dev(accountId, 'keys')}/${key.id}/revoke`, {});

    const rows = await server.service.store.audit.listForAccount(accountId, 100);
    const display = `${key.prefix}…${key.last4}`;
    const minute = (minutes: number) => new Date(Date.parse('2026-11-22T10:00:00.000Z') + minutes * 60_000).toISOString();
    assert.deepEqual(rows.map((r) => [
      r.at, r.actor_email, r.actor_user_id, r.action, r.key_id, r.key_display, r.key_label, r.previous_label, r.country, r.origin,
    ]), [
      [minute(4), alice.email, alice.userId, 'key.revoked', key.id, display, 'Website (prod)', null, 'sg', null],
      [minute(3), bob.email, bob.userId, 'origin.removed', null, null, null, null, 'sg', 'https://www.example.com'],
      [minute(2), alice.email, alice.userId, 'origin.added', null, null, null, null, 'sg', 'https://www.example.com'],
      [minute(1), bob.email, bob.userId, 'key.relabelled', key.id, display, 'Website (prod)', 'Website', 'sg', null],
      [minute(0), alice.email, alice.userId, 'key.created', key.id, display, 'Website', null, 'sg', null],
    ]);
    assert.ok(!JSON.stringify(rows).includes(fullKey.slice(12)), 'no full key in the audit log (D20)');

    const page = await bob.client.get(dev(accountId, 'activity'));
    const items = activityItems(page.body).map(([, words]) => words);
    assert.deepEqual(items, [
      `2026-11-22 10:04 UTC ${alice.email} revoked key Website (prod) ${display}`,
      `2026-11-22 10:03 UTC ${bob.email} removed origin https://www.example.com for Singapore`,
      `2026-11-22 10:02 UTC ${alice.email} allowed origin https://www.example.com for Singapore`,
      `2026-11-22 10:01 UTC ${bob.email} renamed key ${display} from Website to Website (prod)`,
      `2026-11-22 10:00 UTC ${alice.email} created key Website ${display} for Singapore`,
    ]);
    // The keys page shows the latest few with a link to the rest.
    const keys = await bob.client.get(dev(accountId, 'keys'));
    assert.equal(activityItems(keys.body).length, 5);
    assert.equal(named(dom(keys.body), 'a', 'All activity').getAttribute('href'), dev(accountId, 'activity'));
  });

  it('entries of the same millisecond keep their order', async (t) => {
    await world(t);
    const member = await signedIn(server, accountId);
    for (let i = 0; i < 20; i++) await member.client.post(dev(accountId, 'origins'), { country: 'my', origin: `https://site${i}.example.com` });
    const rows = await server.service.store.audit.listForAccount(accountId, 20);
    assert.deepEqual(rows.map((r) => r.origin), Array.from({ length: 20 }, (_, i) => `https://site${19 - i}.example.com`));
  });
});
