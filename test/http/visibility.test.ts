import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError } from './helpers.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describe('visibility: only active, unexpired listings of the key (spec 3, 4.3; D10, D11)', () => {
  let server: TestServer;
  let orgId: string;
  let key: string;
  let myKey: string;
  let otherKey: string;
  const ids = {
    plain: 'a0000000-0000-4000-8000-000000000001',
    noExpiry: 'a0000000-0000-4000-8000-000000000002',
    expiresSoon: 'a0000000-0000-4000-8000-000000000003',
    expiresLater: 'a0000000-0000-4000-8000-000000000004',
    expiredAlready: 'a0000000-0000-4000-8000-000000000005',
    leased: 'a0000000-0000-4000-8000-000000000006',
    expiredStatus: 'a0000000-0000-4000-8000-000000000007',
    draft: 'a0000000-0000-4000-8000-000000000008',
    toBeLeased: 'a0000000-0000-4000-8000-000000000009',
    myListing: 'a0000000-0000-4000-8000-00000000000a',
    otherOwners: 'a0000000-0000-4000-8000-00000000000b',
    expiresAtExactly: 'a0000000-0000-4000-8000-00000000000c',
  };
  let soon: number;
  let exactly: number;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // Rate limiting is tested in rate-limit.test.ts; here many requests share a key.
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000', DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount();
    key = (await server.createKey(orgId)).key;
    myKey = (await server.createKey(orgId, 'my')).key;
    const other = await server.createAccount();
    otherKey = (await server.createKey(other)).key;
    const now = server.clock.now();
    soon = now + 10 * MINUTE;
    exactly = now + 30 * MINUTE;
    await server.addListings(orgId, [
      { id: ids.plain, expiry_date: new Date(now + 400 * DAY).toISOString() },
      { id: ids.noExpiry, expiry_date: null },
      { id: ids.expiresSoon, expiry_date: new Date(soon).toISOString() },
      { id: ids.expiresLater, expiry_date: new Date(now + 2 * DAY).toISOString() },
      { id: ids.expiredAlready, expiry_date: new Date(now - 1).toISOString() },
      { id: ids.leased, status: 'leased' },
      { id: ids.expiredStatus, status: 'expired' },
      { id: ids.draft, status: 'draft' },
      { id: ids.toBeLeased },
      { id: ids.myListing, country: 'my', currency: 'MYR' },
      { id: ids.expiresAtExactly, expiry_date: new Date(exactly).toISOString() },
    ]);
    await server.addListings(other, [{ id: ids.otherOwners }]);
  }

  const listIds = async (k = key): Promise<string[]> => {
    const res = await server.get('/v1/listings?per_page=100', { key: k });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.total, res.json.items.length);
    for (const item of res.json.items) assert.equal(item.status, 'active');
    return res.json.items.map((l: { id: string }) => l.id).sort();
  };
  const detail = (id: string, k = key) => server.get(`/v1/listings/${id}`, { key: k });

  it('only active listings whose expiry is null or later than now are listed; the others are 404 by id (spec 3, D10)', async (t) => {
    await world(t);
    const visible = [ids.plain, ids.noExpiry, ids.expiresSoon, ids.expiresLater, ids.toBeLeased, ids.expiresAtExactly].sort();
    assert.deepEqual(await listIds(), visible);
    for (const id of visible) assert.equal((await detail(id)).status, 200, id);
    for (const id of [ids.expiredAlready, ids.leased, ids.expiredStatus, ids.draft]) {
      assertError(await detail(id), 404, 'not_found', id);
    }
  });

  it('an active listing drops out at the instant of its expiry, with no batch job (D10)', async (t) => {
    await world(t);
    // One millisecond before: visible (and any cache of it is warm).
    server.clock.ms = soon - 1;
    assert.ok((await listIds()).includes(ids.expiresSoon));
    assert.equal((await detail(ids.expiresSoon)).status, 200);
    assert.ok((await listIds()).includes(ids.expiresSoon));
    const before = (await server.get('/v1/listings', { key })).json.total;

    server.clock.advance(1); // now == expiry_date: no longer "later than now"
    assert.ok(!(await listIds()).includes(ids.expiresSoon));
    assertError(await detail(ids.expiresSoon), 404, 'not_found');
    assert.equal((await server.get('/v1/listings', { key })).json.total, before - 1);

    // Still visible until their own expiry.
    assert.equal((await detail(ids.expiresAtExactly)).status, 200);
    server.clock.ms = exactly;
    assertError(await detail(ids.expiresAtExactly), 404, 'not_found');
    assert.ok(!(await listIds()).includes(ids.expiresAtExactly));

    server.clock.advance(2 * DAY);
    assert.deepEqual(await listIds(), [ids.plain, ids.noExpiry, ids.toBeLeased].sort());
    // A listing with no expiry stays, however much time passes.
    server.clock.advance(3650 * DAY);
    assert.ok((await listIds()).includes(ids.noExpiry));
    assert.equal((await detail(ids.noExpiry)).status, 200);
    assert.ok(!(await listIds()).includes(ids.plain));
  });

  it('a listing that becomes leased drops out on the next request; its id then gives 404 (spec 3)', async (t) => {
    await world(t);
    assert.equal((await detail(ids.toBeLeased)).status, 200);
    assert.ok((await listIds()).includes(ids.toBeLeased));
    // The import is how a listing's status changes (OPERATIONS); the server keeps running.
    await server.addListings(orgId, [{ id: ids.toBeLeased, status: 'leased' }]);
    assertError(await detail(ids.toBeLeased), 404, 'not_found');
    assert.ok(!(await listIds()).includes(ids.toBeLeased));
    // And back: re-activated, it is visible again.
    await server.addListings(orgId, [{ id: ids.toBeLeased, status: 'active' }]);
    assert.equal((await detail(ids.toBeLeased)).status, 200);
  });

  it('D11: an id that is not a UUID gives 404 not_found', async (t) => {
    await world(t);
    const malformed = [
      'abc', '123', '0', 'null', 'undefined', '%20', 'a0000000000040008000000000000001', `${ids.noExpiry}0`, ids.noExpiry.slice(1),
      `{${ids.noExpiry}}`, ids.noExpiry.replaceAll('-', '_'), 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', "1'%20OR%20'1'='1", 'x'.repeat(1000),
      '..', '%2e%2e', `${ids.noExpiry}%00`,
    ];
    for (const id of malformed) assertError(await detail(id), 404, 'not_found', id);
  });

  it('another owner\'s listing and another country\'s listing give 404; all the 404s look alike (spec 4.3)', async (t) => {
    await world(t);
    const otherOwner = await detail(ids.otherOwners);
    assertError(otherOwner, 404, 'not_found');
    const otherCountry = await detail(ids.myListing);
    assertError(otherCountry, 404, 'not_found');
    const leased = await detail(ids.leased);
    const missing = await detail('a0000000-0000-4000-8000-0000000000ff');
    const malformed = await detail('not-a-uuid');
    // The service does not tell these cases apart.
    for (const res of [otherCountry, leased, missing, malformed]) assert.deepEqual(res.json, otherOwner.json);

    // Each is visible to the key that owns it, in its country.
    assert.equal((await detail(ids.otherOwners, otherKey)).status, 200);
    assertError(await detail(ids.plain, otherKey), 404, 'not_found');
    const mine = await server.get(`/v1/listings/${ids.myListing}`, { key: myKey, host: 'api.my.localhost' });
    assert.equal(mine.status, 200);
    const myList = await server.get('/v1/listings', { key: myKey, host: 'api.my.localhost' });
    assert.deepEqual(myList.json.items.map((l: { id: string }) => l.id), [ids.myListing]);
    const sgOnMy = await server.get(`/v1/listings/${ids.noExpiry}`, { key: myKey, host: 'api.my.localhost' });
    assertError(sgOnMy, 404, 'not_found');
  });
});
