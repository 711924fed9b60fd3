import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header } from './helpers.js';

/**
 * D21 conditional requests: strong ETags from the body alone, `Cache-Control: private, no-cache`,
 * `If-None-Match` (strong, weak, a list, `*`) answered 304, and a 304 is free against the limit.
 */
const ORIGIN = 'https://shop.example.com';
const STRONG_ETAG = /^"[A-Za-z0-9_-]{16,}"$/;

describe('conditional requests (D21)', () => {
  let server: TestServer;
  let accountId: string;
  let key: string;
  let listingId: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    accountId = await server.createAccount();
    await server.addListings(accountId, Array.from({ length: 7 }, (_, i) => ({ title: `Unit ${i}` })));
    listingId = (await server.get('/v1/listings?per_page=1', { key: (await server.createKey(accountId)).key })).json.items[0].id;
    ({ key } = await server.createKey(accountId));
    await server.allowOrigin(accountId, ORIGIN);
  }

  const paths = () => ['/v1/listings', '/v1/listings?page=2&per_page=3', `/v1/listings/${listingId}`];
  const conditional = (path: string, ifNoneMatch: string, extra: Record<string, string> = {}) =>
    server.get(path, { key, headers: { 'if-none-match': ifNoneMatch, ...extra } });
  const remaining = (res: TestResponse) => Number(header(res, 'x-ratelimit-remaining'));

  it('every 200 carries a strong ETag and Cache-Control: private, no-cache; HEAD too', async (t) => {
    await world(t);
    for (const path of paths()) {
      const res = await server.get(path, { key });
      assert.equal(res.status, 200);
      assert.match(header(res, 'etag') ?? '', STRONG_ETAG, path);
      assert.equal(header(res, 'cache-control'), 'private, no-cache');
      const head = await server.get(path, { key, method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(header(head, 'etag'), header(res, 'etag'), `${path}: HEAD has the GET's tag`);
      assert.equal(header(head, 'cache-control'), 'private, no-cache');
    }
  });

  it('the same body has the same ETag; a different body a different one', async (t) => {
    await world(t);
    const seen = new Map<string, string>();
    for (const path of [...paths(), '/v1/listings?per_page=100', '/v1/listings?page=9']) {
      const res = await server.get(path, { key });
      const etag = header(res, 'etag')!;
      const earlier = seen.get(etag);
      if (earlier !== undefined) assert.equal(res.body, earlier, 'one tag, one body');
      seen.set(etag, res.body);
      const again = await server.get(path, { key });
      assert.equal(header(again, 'etag'), etag);
      assert.equal(again.body, res.body);
    }
    assert.equal(seen.size, 5, 'five different bodies, five tags');
  });

  it('If-None-Match with the tag, weak, in a list, or * gives 304: no body, the tag, Cache-Control, request id, rate-limit and CORS headers', async (t) => {
    await world(t);
    for (const path of paths()) {
      const etag = header(await server.get(path, { key }), 'etag')!;
      for (const ifNoneMatch of [etag, `W/${etag}`, `"nope", ${etag}`, `"a","b" ,W/${etag}`, '*']) {
        const res = await conditional(path, ifNoneMatch, { origin: ORIGIN });
        assert.equal(res.status, 304, `${path} ${ifNoneMatch}`);
        assert.equal(res.body, '');
        assert.equal(header(res, 'etag'), etag);
        assert.equal(header(res, 'cache-control'), 'private, no-cache');
        assert.match(header(res, 'x-request-id') ?? '', /^req_/);
        for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) assert.ok(header(res, name), name);
        assert.equal(header(res, 'access-control-allow-origin'), ORIGIN);
        assert.match(header(res, 'access-control-expose-headers') ?? '', /(^|, )ETag(,|$)/);
        assert.equal(header(res, 'content-type'), undefined);
      }
      const head = await server.get(path, { key, method: 'HEAD', headers: { 'if-none-match': etag } });
      assert.equal(head.status, 304);
    }
  });

  it('a tag that does not match is an ordinary request: 200 with the body, counted', async (t) => {
    await world(t);
    const path = paths()[0]!;
    const before = remaining(await server.get(path, { key }));
    const res = await conditional(path, '"not-this-one", W/"nor-this"');
    assert.equal(res.status, 200);
    assert.ok(res.body.length > 0);
    assert.equal(remaining(res), before - 1);
  });

  it('a 304 is free: it does not count, and is given even when the key has no request left', async (t) => {
    await world(t);
    const limited = await server.createKey(accountId, 'sg', 'limited');
    await server.service.store.keys.setRateLimit(limited.id, 3);
    const path = paths()[2]!;
    const first = await server.get(path, { key: limited.key });
    const etag = header(first, 'etag')!;
    assert.equal(remaining(first), 2);
    for (let i = 0; i < 5; i++) {
      const res = await server.get(path, { key: limited.key, headers: { 'if-none-match': etag } });
      assert.equal(res.status, 304);
      assert.equal(remaining(res), 2, 'a 304 takes nothing; Remaining says what would be admitted now');
      assert.equal(header(res, 'retry-after'), undefined);
    }
    assert.equal((await server.get(path, { key: limited.key })).status, 200);
    assert.equal((await server.get(path, { key: limited.key })).status, 200);
    assertError(await server.get(path, { key: limited.key }), 429, 'rate_limited');
    // No request left: a revalidation still gets its 304, Remaining 0 ...
    const free = await server.get(path, { key: limited.key, headers: { 'if-none-match': etag } });
    assert.equal(free.status, 304);
    assert.equal(remaining(free), 0);
    // ... while a tag that does not match is counted as D5 says: 429.
    const refused = await server.get(path, { key: limited.key, headers: { 'if-none-match': '"stale"' } });
    assertError(refused, 429, 'rate_limited');
    assert.ok(Number(header(refused, 'retry-after')) >= 1);
  });

  it('If-None-Match on a request that ends in an error changes nothing: 401, 403, 400, 404 as D5 says, counted', async (t) => {
    await world(t);
    const etag = header(await server.get(paths()[0]!, { key }), 'etag')!;
    assertError(await server.get(paths()[0]!, { key: 'sg_live_nope', headers: { 'if-none-match': etag } }), 401, 'unauthorized');
    const before = remaining(await server.get(paths()[0]!, { key }));
    assertError(await conditional(paths()[0]!, etag, { origin: 'https://elsewhere.example' }), 403, 'origin_not_allowed');
    assertError(await conditional('/v1/listings?page=zero', '*'), 400, 'bad_request');
    const notFound = await conditional('/v1/listings/00000000-0000-4000-8000-000000000000', '*');
    assertError(notFound, 404, 'not_found');
    assert.equal(remaining(notFound), before - 3, 'the three errors counted');

    // With no request left, such an error is the 429 that D5 puts before it.
    const limited = await server.createKey(accountId, 'sg', 'spent');
    await server.service.store.keys.setRateLimit(limited.id, 1);
    assert.equal((await server.get(paths()[0]!, { key: limited.key })).status, 200);
    for (const [path, headers] of [['/v1/listings?page=zero', {}], [paths()[0]!, { origin: 'https://elsewhere.example' }], ['/v1/listings/00000000-0000-4000-8000-000000000000', {}]] as const) {
      assertError(await server.get(path, { key: limited.key, headers: { 'if-none-match': '*', ...headers } }), 429, 'rate_limited', path);
    }
  });

  it('a change to the data changes the tag of what it changed, not of the rest', async (t) => {
    await world(t);
    const list = await server.get('/v1/listings?per_page=100', { key });
    const other = list.json.items.find((l: { id: string }) => l.id !== listingId).id as string;
    const detail = await server.get(`/v1/listings/${listingId}`, { key });
    const untouched = await server.get(`/v1/listings/${other}`, { key });
    // Through the import, as operators change listings:
    const row = await server.service.store.db.selectFrom('listings').selectAll().where('id', '=', listingId).executeTakeFirstOrThrow();
    await server.addListings(accountId, [{ id: row.id, title: 'Renamed again', created_at: row.created_at }]);
    const changed = await conditional(`/v1/listings/${listingId}`, header(detail, 'etag')!);
    assert.equal(changed.status, 200);
    assert.notEqual(header(changed, 'etag'), header(detail, 'etag'));
    assert.equal(changed.json.title, 'Renamed again');
    assert.equal((await conditional(`/v1/listings/${other}`, header(untouched, 'etag')!)).status, 304);
    assert.equal((await conditional('/v1/listings?per_page=100', header(list, 'etag')!)).status, 200);
  });
});

describe('conditional requests across instances and restarts (D21)', () => {
  it('two instances on one database give the same body the same ETag, and so does a restarted one', async () => {
    const first = await startTestServer();
    const accountId = await first.createAccount();
    await first.addListings(accountId, Array.from({ length: 5 }, (_, i) => ({ title: `Unit ${i}` })));
    const { key } = await first.createKey(accountId);
    const second = await startTestServer({ DATABASE_URL: first.databaseUrl }, first.clock);
    try {
      for (const path of ['/v1/listings', '/v1/listings?per_page=2&page=2']) {
        const a = await first.get(path, { key });
        const b = await second.get(path, { key });
        assert.equal(b.body, a.body);
        assert.equal(header(b, 'etag'), header(a, 'etag'), path);
        assert.equal((await second.get(path, { key, headers: { 'if-none-match': header(a, 'etag')! } })).status, 304, 'a tag from one instance revalidates on the other');
      }
      await second.close();
      const restarted = await startTestServer({ DATABASE_URL: first.databaseUrl }, first.clock);
      try {
        const a = await first.get('/v1/listings', { key });
        assert.equal(header(await restarted.get('/v1/listings', { key }), 'etag'), header(a, 'etag'));
      } finally {
        await restarted.close();
      }
    } finally {
      await first.close();
    }
  });
});
