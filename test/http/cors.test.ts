import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { RequestOptions, TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header } from './helpers.js';

/** D18, D21 and D29: what browser code may read (the IETF rate-limit fields and the deprecation headers included). */
const EXPOSED = [
  'ETag', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id',
  'Deprecation', 'Sunset', 'Link',
];

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
}

/** D18: the headers every response to a request with an Origin carries. */
function assertBrowserReadable(res: TestResponse, origin: string, context: string): void {
  assert.equal(header(res, 'access-control-allow-origin'), origin, `${context}: ACAO echoes the origin`);
  assert.ok(list(header(res, 'vary')).includes('origin'), `${context}: Vary: Origin`);
  const exposed = list(header(res, 'access-control-expose-headers'));
  for (const h of EXPOSED) assert.ok(exposed.includes(h.toLowerCase()), `${context}: exposes ${h}`);
  assert.equal(header(res, 'access-control-allow-credentials'), undefined, `${context}: never credentials`);
}

function assertNoCors(res: TestResponse, context: string): void {
  const cors = Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));
  assert.deepEqual(cors, [], `${context}: no CORS headers`);
}

describe('browser access: CORS (spec 4.4, 5 rules 8-9; D16, D17, D18)', () => {
  let server: TestServer;
  let orgId: string;
  let key: string;
  let myKey: string;
  let otherKey: string;
  const listingId = 'c0000000-0000-4000-8000-000000000001';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were two thirds of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount();
    key = (await server.createKey(orgId)).key;
    myKey = (await server.createKey(orgId, 'my')).key;
    const other = await server.createAccount();
    otherKey = (await server.createKey(other)).key;
    await server.addListings(orgId, [{ id: listingId }, { country: 'my', currency: 'MYR' }]);
    await server.addListings(other, [{}]);
    const at = new Date(server.clock.now()).toISOString();
    const add = (account_id: string, country: string, origin: string) => server.service.store.origins.add({ account_id, country, origin, created_at: at });
    await add(orgId, 'sg', 'https://shop.example.com');
    await add(orgId, 'sg', 'https://staging.example.com:8443');
    await add(orgId, 'sg', 'http://localhost:5173');
    await add(orgId, 'my', 'https://my.example.com');
    await add(other, 'sg', 'https://other.example.org');
  }

  const browser = (origin: string, options: RequestOptions = {}, path = '/v1/listings') =>
    server.get(path, { key, ...options, headers: { origin, ...options.headers } });

  describe('D16 preflight', () => {
    const preflight = (origin: string, requestHeaders?: string, path = '/v1/listings', host?: string) =>
      server.get(path, {
        method: 'OPTIONS',
        host,
        headers: {
          origin,
          'access-control-request-method': 'GET',
          ...(requestHeaders === undefined ? {} : { 'access-control-request-headers': requestHeaders }),
        },
      });

    it('is answered 204 for any origin, without a key, with every preflight header', async (t) => {
      await world(t);
      for (const origin of ['https://shop.example.com', 'https://never-registered.example.net', 'http://localhost:3000']) {
        for (const path of ['/v1/listings', `/v1/listings/${listingId}`, '/v1/listings/not-a-uuid']) {
          const res = await preflight(origin, 'authorization', path);
          assert.equal(res.status, 204, `${origin} ${path}`);
          assert.equal(res.body, '');
          assertBrowserReadable(res, origin, `preflight ${origin} ${path}`);
          assert.deepEqual(list(header(res, 'access-control-allow-methods')), ['get', 'head', 'options']);
          assert.ok(list(header(res, 'access-control-allow-headers')).includes('authorization'));
          assert.match(header(res, 'access-control-max-age') ?? '', /^[1-9][0-9]*$/);
        }
      }
      // Also on the other country hosts.
      const my = await preflight('https://my.example.com', 'Authorization', '/v1/listings', 'api.my.localhost');
      assert.equal(my.status, 204);
      assertBrowserReadable(my, 'https://my.example.com', 'my preflight');
    });

    it('grants Authorization always, other requested headers only when safe', async (t) => {
      await world(t);
      const res = await preflight('https://shop.example.com', 'X-Request-Id, Accept, cookie, x-forwarded-host, X-Custom-Thing, authorization, Content-Type');
      const granted = list(header(res, 'access-control-allow-headers'));
      assert.ok(granted.includes('authorization'));
      assert.ok(granted.includes('x-request-id'));
      assert.ok(granted.includes('accept'));
      for (const unsafe of ['cookie', 'x-forwarded-host', 'x-custom-thing']) assert.ok(!granted.includes(unsafe), `${unsafe} is not granted`);
      assert.equal(granted.filter((h) => h === 'authorization').length, 1);
      const none = await preflight('https://shop.example.com');
      assert.deepEqual(list(header(none, 'access-control-allow-headers')), ['authorization']);
    });

    it('never grants the literal origin "null" anything', async (t) => {
      await world(t);
      const res = await preflight('null', 'authorization');
      assertNoCors(res, 'null preflight');
    });
  });

  describe('D17 the real request enforces the exact origin', () => {
    it('a registered origin gets 200 with the data; browser code can read it', async (t) => {
      await world(t);
      for (const origin of ['https://shop.example.com', 'https://staging.example.com:8443', 'http://localhost:5173']) {
        const res = await browser(origin);
        assert.equal(res.status, 200, origin);
        assert.equal(res.json.total, 1);
        assertBrowserReadable(res, origin, origin);
        const detail = await browser(origin, {}, `/v1/listings/${listingId}`);
        assert.equal(detail.status, 200);
        assertBrowserReadable(detail, origin, `${origin} detail`);
      }
    });

    it('host compared case-insensitively, default port ignored', async (t) => {
      await world(t);
      for (const origin of ['https://SHOP.Example.COM', 'https://shop.example.com:443', 'HTTPS://shop.example.com', 'http://LOCALHOST:5173', 'https://Staging.Example.Com:8443']) {
        const res = await browser(origin);
        assert.equal(res.status, 200, origin);
        assertBrowserReadable(res, origin, origin);
      }
    });

    it('anything but the exact origin gets 403 origin_not_allowed, readable by the browser (spec 5 rule 8)', async (t) => {
      await world(t);
      const refused = [
        'http://shop.example.com', // scheme
        'https://shop.example.com:8443', // port
        'http://shop.example.com:443',
        'https://staging.example.com', // registered only with :8443
        'http://localhost', 'http://localhost:5174', 'https://localhost:5173', 'http://127.0.0.1:5173',
        'https://www.shop.example.com', 'https://evil.shop.example.com', 'https://shop.example.com.evil.com', 'https://example.com',
        'https://shopexample.com', 'https://other.example.org', // another account's origin
        'https://my.example.com', // registered for my, not sg
        'https://shop.example.com/', 'https://shop.example.com/path', '*', 'file://', 'https://*.example.com',
      ];
      for (const origin of refused) {
        const res = await browser(origin);
        assertError(res, 403, 'origin_not_allowed', origin);
        assert.equal(res.json.items, undefined, 'no data');
        if (header(res, 'access-control-allow-origin') !== undefined) assertBrowserReadable(res, origin, origin);
      }
      // Well-formed origins that are refused are always told so readably.
      for (const origin of ['http://shop.example.com', 'https://my.example.com', 'https://other.example.org']) {
        assertBrowserReadable(await browser(origin), origin, origin);
      }
    });

    it('origins are per country: the my origin works for the my key on the my host only', async (t) => {
      await world(t);
      const ok = await browser('https://my.example.com', { key: myKey, host: 'api.my.localhost' });
      assert.equal(ok.status, 200);
      assertBrowserReadable(ok, 'https://my.example.com', 'my');
      assertError(await browser('https://shop.example.com', { key: myKey, host: 'api.my.localhost' }), 403, 'origin_not_allowed');
      assertError(await browser('https://my.example.com'), 403, 'origin_not_allowed');
    });

    it('origins are per account: another account\'s registered origin is refused, its own works', async (t) => {
      await world(t);
      assertError(await browser('https://shop.example.com', { key: otherKey }), 403, 'origin_not_allowed');
      assert.equal((await browser('https://other.example.org', { key: otherKey })).status, 200);
    });

    it('the literal origin "null" is never allowed and gets no CORS headers at all (D17, D18)', async (t) => {
      await world(t);
      const res = await browser('null');
      assertError(res, 403, 'origin_not_allowed');
      assertNoCors(res, 'null');
      const unauthorized = await browser('null', { key: 'sg_live_bad' });
      assert.equal(unauthorized.status, 401);
      assertNoCors(unauthorized, 'null 401');
    });

    it('a request without Origin is a server call and is not checked', async (t) => {
      await world(t);
      const res = await server.get('/v1/listings', { key });
      assert.equal(res.status, 200);
      assertNoCors(res, 'server call');
      assert.equal((await server.get('/v1/listings', { key: otherKey })).status, 200, 'an account with origins');
      assert.equal((await server.get('/v1/listings', { key: myKey, host: 'api.my.localhost' })).status, 200);
    });

    it('an origin removed while the server runs is refused on the next request', async (t) => {
      await world(t);
      const origin = 'https://temporary.example.com';
      await server.allowOrigin(orgId, origin);
      assert.equal((await browser(origin)).status, 200);
      assert.equal((await browser(origin)).status, 200);
      await server.service.store.origins.remove(orgId, 'sg', origin);
      assertError(await browser(origin), 403, 'origin_not_allowed');
    });
  });

  describe('D18 every response to a browser is readable, errors included', () => {
    const origin = 'https://shop.example.com';

    it('401, 404 (route, listing, host), 405, 400 and 403 carry ACAO, Vary and Expose-Headers, never credentials', async (t) => {
      await world(t);
      const cases: Array<[number, Promise<TestResponse>]> = [
        [401, server.get('/v1/listings', { headers: { origin } })],
        [401, server.get('/v1/listings', { key: 'sg_live_nope', headers: { origin } })],
        [401, server.get('/v1/listings', { key: myKey, headers: { origin } })],
        [404, server.get('/v2/listings', { key, headers: { origin } })],
        [404, server.get('/', { headers: { origin } })],
        [404, server.get('/v1/listings/c0000000-0000-4000-8000-0000000000ff', { key, headers: { origin } })],
        [404, server.get('/v1/listings', { key, host: 'api.xx.localhost', headers: { origin } })],
        [405, server.get('/v1/listings', { method: 'POST', key, headers: { origin } })],
        [405, server.get(`/v1/listings/${listingId}`, { method: 'DELETE', headers: { origin } })],
        [400, server.get('/v1/listings?page=x', { key, headers: { origin } })],
        [403, server.get('/v1/listings', { key, headers: { origin: 'https://evil.example.com' } })],
        [200, server.get('/v1/listings', { key, method: 'HEAD', headers: { origin } })],
      ];
      for (const [status, pending] of cases) {
        const res = await pending;
        assert.equal(res.status, status, res.body);
        assertBrowserReadable(res, res.status === 403 ? 'https://evil.example.com' : origin, `status ${status}`);
      }
    });

    it('429 carries them too, so that the browser sees rate_limited and Retry-After', async (t) => {
      await world(t);
      const limited = await server.createKey(orgId);
      await server.service.store.keys.setRateLimit(limited.id, 1);
      assert.equal((await server.get('/v1/listings', { key: limited.key, headers: { origin } })).status, 200);
      const res = await server.get('/v1/listings', { key: limited.key, headers: { origin } });
      assertError(res, 429, 'rate_limited');
      assertBrowserReadable(res, origin, '429');
      assert.ok(header(res, 'retry-after'));
    });

    it('the ACAO is the request\'s own origin, never a wildcard', async (t) => {
      await world(t);
      for (const o of ['https://shop.example.com', 'http://localhost:5173', 'https://unregistered.example.net']) {
        const res = await server.get('/v1/listings', { key, headers: { origin: o } });
        assert.equal(header(res, 'access-control-allow-origin'), o);
        assert.notEqual(header(res, 'access-control-allow-origin'), '*');
      }
    });
  });
});
