import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { hashKey } from '../../src/auth/key-format.js';
import { issueKey } from '../../src/auth/keys.js';
import { DEMO_ACTOR, DEMO_ORG_ID, ensureDemo, ensureDemoMember } from '../../src/demo/demo-data.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { activityItems, DashboardClient, dev, revealedKey } from './helpers.js';

/**
 * `npm start` and `demo` (ensureDemo): each run issues a new demo key and revokes the one before,
 * so keys do not pile up; the demo registers its dev-server origin under both names browsers use.
 */
describe('demo data: one active demo key at a time, and both dev-server origins', () => {
  let server: TestServer;
  let member: DashboardClient;

  /** Each test's own world (issue 42): a fresh server on an empty database, with no demo data yet. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
  }

  const store = () => server.service.store;
  const now = () => new Date(server.clock.now());
  const demoKeys = async () => (await store().keys.listForAccount(DEMO_ORG_ID)).filter((k) => k.label === 'demo');
  const fromBrowser = (key: string, origin: string, host = 'api.localhost') => server.get('/v1/listings', { key, host, headers: { origin } });

  /** A demo data set made by one earlier run: its account, its origins and one active demo key. */
  async function madeBefore(): Promise<void> {
    assert.equal((await ensureDemo(store(), now())).created, true);
  }
  /** The demo member, signed in to the dashboard. */
  async function memberSignedIn(): Promise<void> {
    const login = await ensureDemoMember(store(), now());
    member = new DashboardClient(server.dashboardPort!);
    assert.equal((await member.signIn(login.email, login.password)).status, 303);
  }

  it('a new data set allows http://localhost:5173 and http://127.0.0.1:5173 for sg and my; a browser on either gets 200', async (t) => {
    await world(t);
    const demo = await ensureDemo(store(), now());
    assert.equal(demo.created, true);
    assert.equal(demo.accountId, DEMO_ORG_ID);
    assert.deepEqual(demo.revokedKeyIds, []);
    assert.deepEqual((await store().origins.listForAccount(DEMO_ORG_ID)).map((o) => `${o.country} ${o.origin}`), [
      'my http://127.0.0.1:5173', 'my http://localhost:5173', 'sg http://127.0.0.1:5173', 'sg http://localhost:5173',
    ]);
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:5173']) {
      assert.equal((await fromBrowser(demo.key, origin)).status, 200, origin);
    }
    const my = await issueKey(store(), { accountId: DEMO_ORG_ID, country: 'my', label: 'Malaysia site', now: now() });
    assert.equal((await fromBrowser(my.key, 'http://127.0.0.1:5173', 'api.my.localhost')).status, 200);
  });

  it('a second run leaves exactly one active "demo" key: the earlier one is revoked (401 at once, D4) and the revocation is audit-logged', async (t) => {
    await world(t);
    await madeBefore();
    const [first] = await demoKeys();
    const firstKey = await ensureDemo(store(), now()); // the key of the run before the one under test
    server.clock.advance(60_000);
    const second = await ensureDemo(store(), now());
    assert.equal(second.created, false);
    assert.equal(second.accountId, DEMO_ORG_ID, 'the account id, for the banner');
    assert.deepEqual(second.revokedKeyIds, [firstKey.keyId]);

    const keys = await demoKeys();
    assert.equal(keys.length, 3);
    assert.deepEqual(keys.filter((k) => k.revoked_at === null).map((k) => k.id), [second.keyId]);
    assert.ok(keys.find((k) => k.id === first!.id)!.revoked_at !== null);
    assert.equal((await server.get('/v1/listings', { key: firstKey.key })).status, 401);
    assert.equal((await server.get('/v1/listings', { key: second.key })).status, 200);

    const revoked = (await store().keys.get(firstKey.keyId))!;
    const entries = await store().audit.listForAccount(DEMO_ORG_ID, 100);
    const entry = entries.find((e) => e.action === 'key.revoked' && e.key_id === firstKey.keyId);
    assert.ok(entry, 'the revocation is in the audit log');
    assert.deepEqual(
      [entry.at, entry.actor_user_id, entry.actor_email, entry.key_display, entry.key_label, entry.country],
      [revoked.revoked_at, null, 'operator (CLI)', `${revoked.prefix}…${revoked.last4}`, 'demo', 'sg'],
    );
    assert.equal(entries.filter((e) => e.action === 'key.revoked').length, 2, 'one entry per revocation');
    assert.ok(!JSON.stringify(entries).includes(firstKey.key.slice(12)), 'never the full key (D20)');
  });

  it("the demo member sees the operator's changes in the activity log", async (t) => {
    await world(t);
    // The operator's changes: a first run, and a second one a minute later.
    await madeBefore();
    server.clock.advance(60_000);
    await ensureDemo(store(), now());
    await memberSignedIn();
    const page = await member.get(dev(DEMO_ORG_ID, 'activity'));
    const items = activityItems(page.body).map(([, words]) => words);
    assert.match(items[0]!, new RegExp(`^2026-11-22 10:01 UTC ${DEMO_ACTOR.replace(/[()]/g, '\\$&')} revoked key demo sg_live_\\w{4}…\\w{4}$`));
    assert.match(items[1]!, /^2026-11-22 10:01 UTC operator \(CLI\) created key demo sg_live_\w{4}…\w{4} for Singapore$/);
    assert.ok(items.some((line) => /operator \(CLI\) allowed origin http:\/\/127\.0\.0\.1:5173 for Malaysia$/.test(line)), items.join('\n'));
  });

  it('keys the demo did not issue are never touched: another label, or a member\'s own key named "demo" in the dashboard', async (t) => {
    await world(t);
    await madeBefore();
    await memberSignedIn();
    const handMade = await issueKey(store(), { accountId: DEMO_ORG_ID, country: 'sg', label: 'Website (production)', now: now() });
    const membersDemo = revealedKey((await member.createKey(DEMO_ORG_ID, { label: 'demo', country: 'sg' })).body);
    const membersDemoId = (await demoKeys()).find((k) => k.key_hash === hashKey(membersDemo))!.id;

    const demo = await ensureDemo(store(), now());
    assert.equal(demo.revokedKeyIds.length, 1, 'only the previous demo key');
    assert.ok(!demo.revokedKeyIds.includes(membersDemoId));
    for (const key of [handMade.key, membersDemo, demo.key]) assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await store().keys.get(handMade.id))!.revoked_at, null);
  });

  it('demo keys piled up before this rule are all revoked by the next run', async (t) => {
    await world(t);
    await madeBefore();
    const pile = [];
    for (let i = 0; i < 3; i++) pile.push(await issueKey(store(), { accountId: DEMO_ORG_ID, country: 'sg', label: 'demo', now: now() }));
    const demo = await ensureDemo(store(), now());
    for (const key of pile) assert.ok(demo.revokedKeyIds.includes(key.id));
    assert.equal(demo.revokedKeyIds.length, 4, 'the pile and the previous run\'s key');
    for (const key of pile) assert.equal((await server.get('/v1/listings', { key: key.key })).status, 401);
  });

  it('upgrade: a demo data set from before 127.0.0.1 gets it added; an origin a member removed in the dashboard stays removed', async (t) => {
    await world(t);
    await madeBefore();
    await memberSignedIn();
    // As a data set made before 127.0.0.1 was a demo origin looks.
    for (const country of ['sg', 'my']) await store().origins.remove(DEMO_ORG_ID, country, 'http://127.0.0.1:5173');
    const demo = await ensureDemo(store(), now());
    assert.equal(demo.created, false);
    assert.deepEqual(demo.addedOrigins, [{ country: 'sg', origin: 'http://127.0.0.1:5173' }, { country: 'my', origin: 'http://127.0.0.1:5173' }]);
    assert.equal((await fromBrowser(demo.key, 'http://127.0.0.1:5173')).status, 200);

    // The member removes one in the dashboard: later runs respect that.
    await member.get(dev(DEMO_ORG_ID, 'origins'));
    assert.equal((await member.post(`${dev(DEMO_ORG_ID, 'origins')}/remove`, { country: 'sg', origin: 'http://127.0.0.1:5173' })).status, 303);
    const again = await ensureDemo(store(), now());
    assert.deepEqual(again.addedOrigins, []);
    assert.equal(await store().origins.isAllowed(DEMO_ORG_ID, 'sg', 'http://127.0.0.1:5173'), false);
    assert.equal(await store().origins.isAllowed(DEMO_ORG_ID, 'my', 'http://127.0.0.1:5173'), true);
  });
});
