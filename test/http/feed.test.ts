import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header } from './helpers.js';

/**
 * GET /v1/listings/changes (D22), rule by rule: the answer's shape, the snapshot of a first call,
 * each kind of event and its `at`, limits, cursors that cannot be used, conditional polling (D21)
 * and the request rules shared with the other endpoints (D3-D6, D14-D19).
 */
const CURSOR_REFUSED = /Start again without a cursor/;

describe('change feed (D22)', () => {
  let server: TestServer;
  let owner: string;
  let key: string;
  let keyId: string;

  /** Each test's own world (issue 42): a fresh server, an account, and its key with a limit no test reaches. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    owner = await server.createAccount();
    ({ key, id: keyId } = await server.createKey(owner));
    await server.service.store.keys.setRateLimit(keyId, 1_000_000);
  }

  const feed = (query = '', options: { key?: string; headers?: Record<string, string>; host?: string } = {}) =>
    server.get(`/v1/listings/changes${query}`, { key: options.key ?? key, headers: options.headers, host: options.host });

  /** Polls from a cursor until caught up; returns the events and the cursor to keep. */
  async function drain(cursor: string | undefined, limit = 100): Promise<{ events: any[]; cursor: string }> {
    const events: any[] = [];
    for (;;) {
      const res = await feed(`?limit=${limit}${cursor === undefined ? '' : `&cursor=${cursor}`}`);
      assert.equal(res.status, 200, res.body);
      events.push(...res.json.items);
      cursor = res.json.next_cursor;
      if (!res.json.has_more) return { events, cursor: cursor! };
    }
  }

  it('the answer: items, next_cursor, has_more; a first call gives every visible listing as listing.upserted', async (t) => {
    await world(t);
    await server.addListings(owner, [{ title: 'one' }, { title: 'two' }, { title: 'leased', status: 'leased' }, { title: 'expired', expiry_date: '2026-01-01T00:00:00Z' }]);
    const res = await feed();
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json), ['items', 'next_cursor', 'has_more']);
    assert.equal(typeof res.json.next_cursor, 'string');
    assert.equal(res.json.has_more, false);
    const list = await server.get('/v1/listings', { key });
    assert.deepEqual(res.json.items.map((e: any) => e.type), ['listing.upserted', 'listing.upserted']);
    for (const event of res.json.items) {
      assert.deepEqual(Object.keys(event), ['type', 'id', 'at', 'listing']);
      assert.deepEqual(event.listing, list.json.items.find((l: any) => l.id === event.id), 'the listing exactly as in items[] of the list');
      assert.match(event.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'D13');
    }
  });

  it('changes give listing.upserted (new, changed, re-activated) and listing.removed (leased, moved owner or country), in order', async (t) => {
    await world(t);
    await server.addListings(owner, [{ title: 'one' }, { title: 'two' }]);
    const start = (await drain(undefined)).cursor;
    const list = (await server.get('/v1/listings', { key })).json.items;
    const [one, two] = [list.find((l: any) => l.title === 'one'), list.find((l: any) => l.title === 'two')];
    const other = await server.createAccount();
    server.clock.advance(1000);
    await server.addListings(owner, [{ id: one.id, title: 'one, renamed', created_at: one.created_at }]);
    server.clock.advance(1000);
    await server.addListings(owner, [{ id: two.id, title: 'two', created_at: two.created_at, status: 'leased' }]);
    server.clock.advance(1000);
    await server.addListings(owner, [{ id: two.id, title: 'two', created_at: two.created_at, status: 'active' }]);
    server.clock.advance(1000);
    await server.addListings(other, [{ id: one.id, title: 'one, sold on', created_at: one.created_at }]);
    server.clock.advance(1000);
    await server.addListings(owner, [{ title: 'three' }]);
    const { events } = await drain(start, 1);
    // Each listing's last change only: two was leased and re-activated, one renamed then moved.
    assert.deepEqual(events.map((e) => [e.type, e.id === one.id ? 'one' : e.id === two.id ? 'two' : e.listing.title]), [
      ['listing.upserted', 'two'],
      ['listing.removed', 'one'],
      ['listing.upserted', 'three'],
    ]);
    const times = events.map((e) => e.at);
    assert.deepEqual(times, [...times].sort(), 'in the order they took effect');
    assert.equal(events[0].at, '2026-11-22T10:00:03.000Z');
    assert.deepEqual(Object.keys(events[1]), ['type', 'id', 'at']);

    // Moved to another country: removed here too.
    const { cursor } = await drain(start);
    await server.addListings(owner, [{ id: two.id, title: 'two', created_at: two.created_at, country: 'my', currency: 'MYR' }]);
    const moved = await drain(cursor);
    assert.deepEqual(moved.events.map((e) => [e.type, e.id]), [['listing.removed', two.id]]);
  });

  it('an expiry passing is a removal at the expiry instant, with no write; a write that sets a past expiry is a removal at the write', async (t) => {
    await world(t);
    await server.addListings(owner, [{ title: 'standing' }]);
    const now = server.clock.now();
    await server.addListings(owner, [{ title: 'expiring', expiry_date: new Date(now + 30_000).toISOString() }]);
    const { events: added, cursor } = await drain(undefined);
    const expiring = added.find((e) => e.listing?.title === 'expiring');
    assert.ok(expiring);
    const idle = await feed(`?cursor=${cursor}`);
    assert.deepEqual(idle.json.items, []);
    server.clock.advance(30_000);
    const later = await drain(cursor);
    assert.deepEqual(later.events, [{ type: 'listing.removed', id: expiring.id, at: new Date(now + 30_000).toISOString() }]);

    const { cursor: before } = await drain(later.cursor);
    server.clock.advance(5_000);
    const writeTime = new Date(server.clock.now()).toISOString();
    const target = (await server.get('/v1/listings?per_page=1', { key })).json.items[0];
    await server.addListings(owner, [{ id: target.id, title: target.title, created_at: target.created_at, expiry_date: '2026-01-01T00:00:00.000Z' }]);
    const past = await drain(before);
    assert.deepEqual(past.events.map((e) => [e.type, e.id, e.at]), [['listing.removed', target.id, writeTime]]);
  });

  it('limit: 1 to 1000, default 100, larger clamped to 1000, anything else 400; an answer holds limit events when that many are pending', async (t) => {
    await world(t);
    await server.addListings(owner, Array.from({ length: 120 }, (_, i) => ({ title: `bulk ${i}` })));
    const visible = (await server.get('/v1/listings', { key })).json.total;
    const first = await feed();
    assert.equal(first.json.items.length, 100);
    assert.equal(first.json.has_more, true);
    for (const [limit, expected] of [['1', 1], ['+7', 7], ['1000', visible], ['1001', visible], ['2147483647', visible]] as const) {
      const res = await feed(`?limit=${limit}`);
      assert.equal(res.status, 200, `${limit}: ${res.body}`);
      assert.equal(res.json.items.length, Math.min(expected, 1000), String(limit));
    }
    for (const limit of ['0', '-1', '2147483648', '1.5', 'ten', ' 5', '1e3', '']) assertError(await feed(`?limit=${encodeURIComponent(limit)}`), 400, 'bad_request', limit);
    assertError(await feed('?limit=5&limit=6'), 400, 'bad_request');
    const page = await feed('?limit=50');
    const rest = await feed(`?limit=50&cursor=${page.json.next_cursor}`);
    assert.equal(rest.json.items.length, 50, 'full answers while that many are pending');
  });

  it('no new events: the same body, the same next_cursor, the same ETag, and a free 304 with If-None-Match (D21)', async (t) => {
    await world(t);
    await server.addListings(owner, [{ title: 'one' }, { title: 'two' }]);
    const { cursor } = await drain(undefined, 1000);
    const first = await feed(`?cursor=${cursor}`);
    const second = await feed(`?cursor=${cursor}`);
    assert.deepEqual(first.json, { items: [], next_cursor: cursor, has_more: false });
    assert.equal(second.body, first.body);
    assert.equal(header(second, 'etag'), header(first, 'etag'));
    assert.equal(header(first, 'cache-control'), 'private, no-cache');
    const remaining = Number(header(second, 'x-ratelimit-remaining'));
    for (let i = 0; i < 3; i++) {
      const res = await feed(`?cursor=${cursor}`, { headers: { 'if-none-match': header(first, 'etag')! } });
      assert.equal(res.status, 304);
      assert.equal(Number(header(res, 'x-ratelimit-remaining')), remaining, 'free');
    }
    await server.addListings(owner, [{ title: 'news' }]);
    const news = await feed(`?cursor=${cursor}`, { headers: { 'if-none-match': header(first, 'etag')! } });
    assert.equal(news.status, 200);
    assert.equal(news.json.items[0].listing.title, 'news');
  });

  it('a cursor edited, forged, from another account or country, or older than the history kept gives 400 saying to start again', async (t) => {
    await world(t);
    await server.addListings(owner, [{ title: 'one' }, { title: 'two' }]);
    const { cursor } = await drain(undefined, 1000);
    const bytes = Buffer.from(cursor, 'base64url');
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at] = copy[at]! ^ 1;
      return copy.toString('base64url');
    };
    const edited = [0, 20, bytes.length - 1].map(flipped);
    for (const bad of [...edited, 'nonsense', '', `${cursor}x`, `${cursor}AAAA`, cursor.slice(1), cursor.slice(0, -4), `${cursor.slice(0, 40)}.${cursor.slice(40)}`]) {
      const res = await feed(`?cursor=${encodeURIComponent(bad)}`);
      assertError(res, 400, 'bad_request', bad);
      assert.match(res.json.message, CURSOR_REFUSED);
    }
    const otherAccount = await server.createAccount();
    const otherKey = (await server.createKey(otherAccount)).key;
    assert.match((await feed(`?cursor=${cursor}`, { key: otherKey })).json.message, CURSOR_REFUSED);
    const myKey = (await server.createKey(owner, 'my')).key;
    const res = await feed(`?cursor=${cursor}`, { key: myKey, host: 'api.my.localhost' });
    assertError(res, 400, 'bad_request');
    assert.match(res.json.message, CURSOR_REFUSED);
    // History older than its keeping period is pruned; a cursor from before it can no longer be served.
    await server.addListings(owner, [{ title: 'after the cursor' }]);
    server.clock.advance(40 * 86_400_000);
    const pruned = await server.service.store.feed.prune(new Date(server.clock.now() - 35 * 86_400_000).toISOString());
    assert.ok(pruned > 0);
    assertError(await feed(`?cursor=${cursor}`), 400, 'bad_request');
    assert.match((await feed(`?cursor=${cursor}`)).json.message, CURSOR_REFUSED);
    // Starting again works, and a fresh cursor of an idle tenant stays good however old it gets.
    const fresh = await drain(undefined, 1000);
    server.clock.advance(40 * 86_400_000);
    await server.service.store.feed.prune(new Date(server.clock.now() - 35 * 86_400_000).toISOString());
    assert.equal((await feed(`?cursor=${fresh.cursor}`)).status, 200);
  });

  it('an empty cursor is a 400, also while the answer without a cursor is cached (D22, issue 29 item 6)', async (t) => {
    await world(t);
    const first = await feed();
    assert.equal(first.status, 200);
    assert.equal((await feed()).body, first.body, 'the cursor-less answer is served again');
    for (let i = 0; i < 2; i++) {
      const res = await feed('?cursor=');
      assertError(res, 400, 'bad_request');
      assert.match(res.json.message, /"cursor" is empty/);
      assert.match(res.json.message, CURSOR_REFUSED);
    }
  });

  it('a cursor tells nothing of other tenants: opaque, the same length whatever the position, and the same position gives the same cursor (issue 29 item 8)', async (t) => {
    await world(t);
    const other = await server.createAccount();
    const mine = await drain(undefined, 1000);
    const lengths = new Set([mine.cursor.length]);
    const positions: string[] = [mine.cursor];
    for (let round = 0; round < 3; round++) {
      // Another tenant writes a lot (the global change sequence moves on), then this one writes once.
      await server.addListings(other, Array.from({ length: 40 }, (_, i) => ({ title: `theirs ${round}.${i}` })));
      await server.addListings(owner, [{ title: `mine ${round}` }]);
      const next = await drain(positions.at(-1), 1000);
      assert.equal(next.events.length, 1, 'only my change');
      positions.push(next.cursor);
      lengths.add(next.cursor.length);
    }
    assert.equal(lengths.size, 1, `cursor lengths ${[...lengths].join(', ')}`);
    assert.equal(new Set(positions).size, positions.length, 'each position its own cursor');
    for (const cursor of positions) {
      const text = Buffer.from(cursor, 'base64url').toString('latin1');
      assert.ok(!text.includes(owner) && !/"[ls]",|\d{4}-\d\d-\d\dT/.test(text), 'nothing readable inside');
      assert.equal((await feed(`?cursor=${cursor}`)).status, 200);
    }
    // Polled again with nothing new: the same cursor back (D22), so the answer is the same.
    assert.equal((await feed(`?cursor=${positions.at(-1)}`)).json.next_cursor, positions.at(-1));
  });

  it('the request rules of the other endpoints: 401, 404 for an unknown host, 405, 403 for an unregistered origin, rate-limit headers, request id', async (t) => {
    await world(t);
    assertError(await server.get('/v1/listings/changes'), 401, 'unauthorized');
    assertError(await feed('', { host: 'api.nowhere.localhost' }), 404, 'not_found');
    const post = await server.get('/v1/listings/changes', { key, method: 'POST' });
    assertError(post, 405, 'method_not_allowed');
    assert.equal(header(post, 'allow'), 'GET, HEAD, OPTIONS');
    assertError(await feed('', { headers: { origin: 'https://not.registered.example' } }), 403, 'origin_not_allowed');
    const ok = await feed();
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id', 'etag']) assert.ok(header(ok, name), name);
    const head: TestResponse = await server.get('/v1/listings/changes', { key, method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(header(head, 'etag'), header(ok, 'etag'));
    const preflight = await server.get('/v1/listings/changes', { method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' } });
    assert.equal(preflight.status, 204);
  });
});
