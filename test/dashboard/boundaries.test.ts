import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dev, revealedKey, signedIn, text, type DashboardClient } from './helpers.js';

/**
 * A member of account A tampers with ids in URLs and forms to read or change account B's keys and
 * origins. Every attempt must be 404 or 403, show nothing of B, and change nothing.
 */
describe("dashboard boundaries: a member sees and changes only their own account's keys and origins", () => {
  let server: TestServer;
  let a: string;
  let b: string;
  let mallory: DashboardClient;
  let bKey: { id: string; key: string };
  let aKeyId: string;
  let bSnapshot: () => Promise<string>;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    a = await server.createAccount();
    b = await server.createAccount();
    await server.addListings(b, [{ title: 'B listing' }]);
    bKey = await server.createKey(b, 'sg', 'B production key');
    await server.service.store.origins.add({ account_id: b, country: 'sg', origin: 'https://b.example.com', created_at: '2026-11-22T10:00:00.000Z' });
    // B's own member makes a change, so that B has activity too.
    const bob = await signedIn(server, b);
    assert.equal((await bob.client.post(dev(b, 'origins'), { country: 'sg', origin: 'https://shop.b.example.com' })).status, 303);

    ({ client: mallory } = await signedIn(server, a));
    const created = await mallory.createKey(a, { label: 'A key', country: 'sg' });
    revealedKey(created.body);
    aKeyId = (await server.service.store.keys.listForAccount(a))[0]!.id;
    await mallory.get(dev(a, 'keys'));

    bSnapshot = async () => JSON.stringify({
      keys: await server.service.store.keys.listForAccount(b),
      origins: await server.service.store.origins.listForAccount(b),
      audit: await server.service.store.audit.listForAccount(b, 100),
    });
  }

  const assertRefused = (res: { status: number; body: string }, what: string) => {
    assert.ok(res.status === 404 || res.status === 403, `${what}: got ${res.status}`);
    assert.ok(!res.body.includes('B production key') && !res.body.includes('b.example.com') && !res.body.includes(bKey.key.slice(0, 12)), `${what}: nothing of B shown`);
  };

  it("reading B's pages by putting B's account id in the URL: 404, nothing of B shown", async (t) => {
    await world(t);
    for (const page of ['', 'keys', 'origins', 'activity', `keys/${bKey.id}/revoke`]) {
      assertRefused(await mallory.get(dev(b, page)), `GET ${dev(b, page)}`);
    }
  });

  it("reading B's key through A's own URLs (B's key id): 404", async (t) => {
    await world(t);
    assertRefused(await mallory.get(`${dev(a, 'keys')}/${bKey.id}/revoke`), 'revoke confirmation of B key');
    const list = await mallory.get(`${dev(a, 'keys')}?revoked=${bKey.id}&relabelled=${bKey.id}`);
    assert.equal(list.status, 200);
    assertRefused({ status: 404, body: list.body }, 'notice for B key');
  });

  it("revoking B's key, with B's key id in A's URL or with B's account id in the URL: 404, and the key still works", async (t) => {
    await world(t);
    const before = await bSnapshot();
    for (const path of [`${dev(a, 'keys')}/${bKey.id}/revoke`, `${dev(b, 'keys')}/${bKey.id}/revoke`]) {
      assertRefused(await mallory.post(path, {}), `POST ${path}`);
    }
    assert.equal(await bSnapshot(), before);
    assert.equal((await server.get('/v1/listings', { key: bKey.key })).status, 200);
  });

  it("relabelling B's key either way: 404, the label is unchanged", async (t) => {
    await world(t);
    const before = await bSnapshot();
    for (const path of [`${dev(a, 'keys')}/${bKey.id}/label`, `${dev(b, 'keys')}/${bKey.id}/label`]) {
      assertRefused(await mallory.post(path, { label: 'Owned' }), `POST ${path}`);
    }
    assert.equal((await server.service.store.keys.get(bKey.id))!.label, 'B production key');
    assert.equal(await bSnapshot(), before);
  });

  it("creating a key in B, or acting on A's key through B's URL: 404, nothing created or changed", async (t) => {
    await world(t);
    const before = await bSnapshot();
    await mallory.get(dev(a, 'keys'));
    // Even with a good single-use form token (of A's page).
    assertRefused(await mallory.post(dev(b, 'keys'), { label: 'Planted', country: 'sg', _form: mallory.formToken! }), 'create in B');
    assertRefused(await mallory.post(`${dev(b, 'keys')}/${aKeyId}/revoke`, {}), 'A key via B URL');
    assert.equal(await bSnapshot(), before);
    assert.equal((await server.service.store.keys.get(aKeyId))!.revoked_at, null);
  });

  it("adding or removing B's origins through B's URL, or removing B's origin through A's: 404 or 403, nothing changed", async (t) => {
    await world(t);
    const before = await bSnapshot();
    assertRefused(await mallory.post(dev(b, 'origins'), { country: 'sg', origin: 'https://evil.example.com' }), 'add to B');
    assertRefused(await mallory.post(`${dev(b, 'origins')}/remove`, { country: 'sg', origin: 'https://b.example.com' }), 'remove from B via B URL');
    assertRefused(await mallory.post(`${dev(a, 'origins')}/remove`, { country: 'sg', origin: 'https://b.example.com' }), 'remove B origin via A URL');
    // Nor the confirmation page of removing B's origin, either way.
    for (const account of [a, b]) {
      assertRefused(await mallory.get(`${dev(account, 'origins')}/remove?country=sg&origin=${encodeURIComponent('https://b.example.com')}`), `confirm removal of B origin via ${account === a ? 'A' : 'B'} URL`);
    }
    // An account id smuggled into the form is not an account selector: A's own URL acts on A only.
    const smuggled = await mallory.post(dev(a, 'origins'), { country: 'sg', origin: 'https://a.example.com', account_id: b, accountId: b, account: b });
    assert.equal(smuggled.status, 303);
    assert.equal(await bSnapshot(), before);
    assert.deepEqual((await server.service.store.origins.listForAccount(a)).map((o) => o.origin), ['https://a.example.com']);
    // B's origins still work for B's key.
    assert.equal((await server.get('/v1/listings', { key: bKey.key, headers: { origin: 'https://b.example.com' } })).status, 200);
  });

  it("with B's CSRF token (another session), A's URL still refuses: 403", async (t) => {
    await world(t);
    const bob = await signedIn(server, b);
    const res = await mallory.post(`${dev(a, 'keys')}/${aKeyId}/label`, { label: 'x', _csrf: bob.client.csrf! });
    assert.equal(res.status, 403);
    // And Bob cannot act on A with his own session and token.
    assertRefused(await bob.client.post(`${dev(a, 'keys')}/${aKeyId}/revoke`, {}), 'bob revokes A key');
    assert.equal((await server.service.store.keys.get(aKeyId))!.revoked_at, null);
  });

  it("A's pages list only A's keys, origins and activity", async (t) => {
    await world(t);
    for (const page of ['keys', 'origins', 'activity']) {
      const res = await mallory.get(dev(a, page));
      assert.equal(res.status, 200);
      assertRefused({ status: 404, body: res.body.replace(/https:\/\/a\.example\.com/g, '') }, `A ${page}`);
    }
    const activity = text((await mallory.get(dev(a, 'activity'))).body);
    assert.match(activity, /created key A key/);
    assert.doesNotMatch(activity, /shop\.b\.example\.com/);
  });

  it('unknown and malformed ids are 404 too', async (t) => {
    await world(t);
    for (const path of [
      `${dev(a, 'keys')}/00000000-0000-4000-8000-000000000000/revoke`,
      `${dev(a, 'keys')}/not-a-uuid/revoke`,
      `${dev(b, 'keys')}/${bKey.id.toUpperCase()}/revoke`,
      dev('not-an-account', 'keys'),
      '/accounts',
      '/nothing-here',
    ]) {
      const res = await mallory.get(path);
      assert.equal(res.status, 404, path);
      assert.match(text(res.body), /Not found/);
    }
  });

  it('ids are compared as UUIDs, in either case, as everywhere else: an uppercase id of an own key is that key', async (t) => {
    await world(t);
    const res = await mallory.get(`${dev(a, 'keys')}/${aKeyId.toUpperCase()}/revoke`);
    assert.equal(res.status, 200);
    assert.match(text(res.body), /A key/);
  });
});
