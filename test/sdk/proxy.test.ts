import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';
import express from 'express';
import { createListingsHandler, fetchWithLocalhost, ListingsClient, type FetchLike, type ListingsHandler, type ListingsHandlerOptions, type UpstreamFailure } from '@listings-api/sdk';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';

/**
 * The SDK's proxy handler with real HTTP on both sides: browsers -> a node:http site that mounts
 * `handler.node` -> the real API. It keeps the key on the server, forwards nothing of the visitor's
 * request, and shares one revalidated copy among visitors.
 */

/** A transport that counts (and can break) what goes upstream, and keeps the headers sent. */
function upstream() {
  const sent: Array<{ url: string; headers: Record<string, string> }> = [];
  const state = { down: false };
  const fetch: FetchLike = async (url, init) => {
    sent.push({ url, headers: { ...init.headers } });
    if (state.down) throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    return fetchWithLocalhost(url, init);
  };
  return { fetch, sent, state };
}

describe('proxy handler (createListingsHandler) over real HTTP', () => {
  let api: TestServer;
  let accountId: string;
  let key: string;
  let ids: string[];

  before(async () => {
    api = await startTestServer();
    accountId = await api.createAccount();
    const created = await api.createKey(accountId, 'sg');
    key = created.key;
    await api.service.store.keys.setRateLimit(created.id, 1000);
    await api.addListings(accountId, Array.from({ length: 30 }, (_, i) => ({
      title: `Unit ${i}`,
      usage_types: i % 3 === 0 ? ['Office'] : ['F&B', 'Cafe'],
      created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
    })));
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}` });
    ids = (await client.listings.list({ perPage: 100 })).items.map((l) => l.id);
  });
  after(() => api?.close());

  /** A site on a free port: the handler under /api, anything else a 404 page of the site's own. */
  async function site(handler: ListingsHandler): Promise<{ port: number; close(): Promise<void> }> {
    const server: Server = createServer((req, res) =>
      handler.node(req, res, () => {
        res.statusCode = 404;
        res.end('site page not found');
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  function setup(options: Omit<ListingsHandlerOptions, 'client'> = {}) {
    const up = upstream();
    const clock = new TestClock();
    const failures: UpstreamFailure[] = [];
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, fetch: up.fetch, maxRetries: 0 });
    const handler = createListingsHandler({ client, basePath: '/api', now: clock.now, onError: (f) => failures.push(f), ...options });
    return { up, clock, handler, failures };
  }

  it('serves list (with filters), detail and changes under basePath, keeping the key on the server', async () => {
    const { up, handler } = setup();
    const s = await site(handler);
    try {
      const list = await httpCall(s.port, '/api/v1/listings?per_page=5&usage_type=Office&sort=-created_at', { host: 'www.example.test' });
      assert.equal(list.status, 200);
      assert.equal(list.json.per_page, 5);
      assert.equal(list.json.total, 10);
      assert.ok(list.json.items.every((l: { usage_types: string[] }) => l.usage_types[0] === 'Office'));
      assert.ok(!list.body.includes(key) && !JSON.stringify(list.headers).includes(key), 'the key never reaches the browser');
      assert.equal(list.headers['x-ratelimit-remaining'], undefined, 'nothing of the upstream answer but the body and its ETag');

      const detail = await httpCall(s.port, `/api/v1/listings/${ids[3]!.toUpperCase()}`, { host: 'www.example.test' });
      assert.equal(detail.status, 200);
      assert.equal(detail.json.id, ids[3]);

      const changes = await httpCall(s.port, '/api/v1/listings/changes?limit=5', { host: 'www.example.test' });
      assert.equal(changes.status, 200);
      assert.equal(changes.json.items.length, 5);
      assert.equal(changes.json.has_more, true);

      assert.deepEqual(up.sent.map((r) => new URL(r.url).pathname + new URL(r.url).search), [
        '/v1/listings?per_page=5&usage_type=Office&sort=-created_at',
        `/v1/listings/${ids[3]}`,
        '/v1/listings/changes?limit=5',
      ]);
    } finally {
      await s.close();
    }
  });

  it('forwards nothing of the visitor\'s request: no headers (cookies, Origin, Authorization), no unknown parameters', async () => {
    const { up, handler } = setup();
    const s = await site(handler);
    try {
      const res = await httpCall(s.port, '/api/v1/listings?page=1&utm_source=x&debug=1', {
        headers: { cookie: 'session=secret', origin: 'https://evil.example', authorization: 'Bearer sg_live_visitor', 'x-forwarded-for': '203.0.113.9', 'user-agent': 'bot' },
      });
      // Had Origin gone upstream, the API would have answered 403 (D17).
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(up.sent[0]!.headers).sort(), ['accept', 'authorization']);
      assert.equal(up.sent[0]!.headers.authorization, `Bearer ${key}`);
      assert.equal(new URL(up.sent[0]!.url).search, '?page=1');
    } finally {
      await s.close();
    }
  });

  it('shares one copy: fresh answers cost nothing upstream, then one revalidation (a free 304) serves everyone', async () => {
    const { up, clock, handler } = setup({ freshMs: 10_000 });
    const s = await site(handler);
    try {
      const first = await httpCall(s.port, '/api/v1/listings?page=2');
      assert.equal(first.headers['x-listings-cache'], 'miss');
      // Twenty visitors at once, then later: one copy, asked for once.
      const burst = await Promise.all(Array.from({ length: 20 }, () => httpCall(s.port, '/api/v1/listings?page=2&ignored=1')));
      assert.ok(burst.every((r) => r.status === 200 && r.body === first.body && r.headers['x-listings-cache'] === 'hit'));
      assert.equal(up.sent.length, 1);
      clock.advance(10_000);
      const again = await Promise.all(Array.from({ length: 20 }, () => httpCall(s.port, '/api/v1/listings?page=2')));
      assert.ok(again.every((r) => r.body === first.body));
      assert.equal(up.sent.length, 2, 'one revalidation for the twenty');
      assert.equal(up.sent[1]!.headers['if-none-match'], first.headers.etag);
      assert.equal(handler.stats.refreshes, 2);
      // Those who came while it was under way got its answer; those after, the copy.
      assert.ok(again.every((r) => ['revalidated', 'hit'].includes(r.headers['x-listings-cache'] as string)));
      assert.equal(handler.stats.revalidated + handler.stats.hits, 40);
    } finally {
      await s.close();
    }
  });

  it('answers a browser\'s If-None-Match with its own 304, and HEAD without a body', async () => {
    const { handler } = setup();
    const s = await site(handler);
    try {
      const first = await httpCall(s.port, '/api/v1/listings');
      const etag = first.headers.etag as string;
      assert.match(first.headers['cache-control'] as string, /^public, max-age=10$/);
      const revalidated = await httpCall(s.port, '/api/v1/listings', { headers: { 'if-none-match': etag } });
      assert.equal(revalidated.status, 304);
      assert.equal(revalidated.body, '');
      const head = await httpCall(s.port, '/api/v1/listings', { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
    } finally {
      await s.close();
    }
  });

  it('400 and 404 pass through with the API\'s code and are kept like copies; a non-UUID id is a 404 without asking', async () => {
    const { up, handler } = setup();
    const s = await site(handler);
    try {
      // A cursor is the API's to judge (it is signed): its 400 is asked for once.
      for (let i = 0; i < 3; i++) {
        const bad = await httpCall(s.port, '/api/v1/listings/changes?cursor=abc');
        assert.equal(bad.status, 400);
        assert.equal(bad.json.error, 'bad_request');
      }
      const malformed = await httpCall(s.port, '/api/v1/listings?per_page=abc');
      assert.equal(malformed.status, 400, 'refused without asking (issue 29 item 2)');
      const missing = '00000000-0000-4000-8000-000000000000';
      for (let i = 0; i < 3; i++) {
        const res = await httpCall(s.port, `/api/v1/listings/${missing}`);
        assert.equal(res.status, 404);
        assert.equal(res.json.error, 'not_found');
      }
      const junk = await httpCall(s.port, '/api/v1/listings/..%2F..%2Fadmin');
      assert.equal(junk.status, 404);
      const twice = await httpCall(s.port, '/api/v1/listings?page=1&page=2');
      assert.equal(twice.status, 400);
      assert.equal(up.sent.length, 2, 'one for the 400, one for the 404; the repeats, the malformed page size, the junk id and the repeated parameter cost nothing');
    } finally {
      await s.close();
    }
  });

  it('only GET and HEAD; an unknown path under basePath is a JSON 404; outside basePath, next() runs (the site\'s own 404)', async () => {
    const { handler } = setup();
    const s = await site(handler);
    try {
      const post = await httpCall(s.port, '/api/v1/listings', { method: 'POST' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.allow, 'GET, HEAD');
      const unknown = await httpCall(s.port, '/api/v1/keys');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.json.error, 'not_found');
      const outside = await httpCall(s.port, '/about');
      assert.equal(outside.body, 'site page not found');
    } finally {
      await s.close();
    }
  });

  it('issue 29 item 1: a method fetch refuses (TRACE) or a target the URL parser refuses (http://[) is a 4xx answer, never a throw that ends the process', async () => {
    const { up, handler } = setup();
    // Mounted with next (the site's own pages behind it) and bare, as sdk/README.md shows it.
    const withNext = await site(handler);
    const bare = createServer(handler.node);
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    const barePort = (bare.address() as { port: number }).port;
    try {
      for (const port of [withNext.port, barePort]) {
        for (const method of ['TRACE', 'PROPFIND', 'M-SEARCH']) {
          const refused = await httpCall(port, '/api/v1/listings', { method });
          assert.equal(refused.status, 405, method);
          assert.equal(refused.headers.allow, 'GET, HEAD');
          assert.deepEqual(refused.json, { error: 'method_not_allowed', message: `Method ${method} is not allowed here; use GET or HEAD.` });
        }
        const absolute = await httpCall(port, `http://www.example.test/api/v1/listings?per_page=2`);
        assert.equal(absolute.status, 200, 'absolute-form targets are served like origin-form ones');
        assert.equal(absolute.json.items.length, 2);
      }
      for (const target of ['http://[', 'http://[/api/v1/listings', 'http://[::1/api/v1/listings', '*']) {
        const res = await httpCall(barePort, target, { method: target === '*' ? 'OPTIONS' : 'GET' });
        assert.equal(res.status, 400, target);
        assert.deepEqual(res.json, { error: 'bad_request', message: 'The request target is not a valid URL.' });
        // With next, the target is not the handler's to judge: the site's own page says.
        assert.equal((await httpCall(withNext.port, target)).body, 'site page not found', target);
      }
      // Both processes' servers are still there.
      assert.equal((await httpCall(barePort, '/api/v1/listings?per_page=2')).status, 200);
      assert.equal((await httpCall(withNext.port, '/api/v1/listings?per_page=2')).status, 200);
      assert.equal(up.sent.length, 1, 'nothing refused went upstream');
    } finally {
      await withNext.close();
      await new Promise((resolve) => bare.close(resolve));
    }
  });

  /** D28's rules between parameters and of range, which no parameter's schema can say: the API judges them. */
  const API_JUDGES = ['near=91,0', 'bbox=0,5,1,1', 'near=1,2&bbox=0,0,1,1', 'radius_m=100', 'sort=distance'];

  it('issue 29 item 2: reads the query as the API does (+ is a plus) and refuses locally exactly what the API refuses, naming the parameter', async () => {
    // Some 25 distinct valid URLs from one address: more than one visitor's budget of look-ups.
    const { up, handler } = setup({ visitorLookupsPerMinute: Infinity });
    const s = await site(handler);
    // Each query, asked of the API directly and through the proxy: the same status, code, parameter
    // named and (for a 200) the same body; a 400 the proxy can decide costs no upstream request.
    const list = [
      'page=+1', 'page=%2B1', 'page=01', 'page=0', 'page=-1', 'page=1.5', 'page=1e2', 'page=%201', 'page=x0', 'page=', 'page', 'page=%',
      'page=2147483647', 'page=2147483648', 'page=1&page=1', 'pa%67e=x', 'per_page=500', 'per_page=0&page=x', 'per_page=+3',
      'min_price=+5', 'min_price=%2B5', 'min_price=5.', 'min_price=.5', 'min_price=1e3', 'min_price=-1', 'min_price=9&max_price=8.5',
      'min_price=8.5&max_price=9', 'min_size_sqft=1000&max_size_sqft=999', 'min_size_sqft=+1000&max_size_sqft=1000',
      'usage_type=Shared+Office', 'usage_type=Shared%20Office', 'usage_type=Office,F%26B', 'usage_type=F%26B,Cafe,Cafe', 'usage_type=Office,',
      'usage_type=office', 'usage_type=', 'usage_type=F&B', 'usage_type=Office&usage_type=Retail',
      'featured=true', 'featured=1', 'takeover=false', 'takeover=', 'sort=-price', 'sort=rank', 'sort=+price', 'sort=%2Dprice',
      'utm_source=x&page=2', '%=1&per_page=2', '__proto__=1&constructor=2',
      // D26, D28: forms the proxy checks itself, and rules between parameters (or of range) only the API judges.
      'q=marina', 'q=!!', 'q=', 'q=%20%2C', 'near=1.29,103.85', 'near=1.29', 'near=1,2&radius_m=0', 'bbox=0,0,1,1', 'bbox=0,0,1',
      ...API_JUDGES,
    ].map((q) => `/v1/listings?${q}`);
    const facets = ['q=cafe', 'q=--', 'usage_type=Nope', 'sort=rank&page=x', ...API_JUDGES.filter((q) => !q.startsWith('sort'))].map((q) => `/v1/listings/facets?${q}`);
    const changes = ['limit=0', 'limit=+5', 'limit=%2B5', 'limit=1001', 'limit=x', 'limit=5&limit=5', 'cursor=abc', 'cursor=&limit=2'].map((q) => `/v1/listings/changes?${q}`);
    const named = (message: string) => /"([a-z_]+)"/.exec(message)?.[1];
    try {
      let refusedLocally = 0;
      let refusedByApi = 0;
      let apiJudged = 0;
      for (const path of [...list, ...facets, ...changes]) {
        const direct = await api.get(path, { key });
        const sentBefore = up.sent.length;
        const via = await httpCall(s.port, `/api${path}`);
        assert.equal(via.status, direct.status, `${path}: ${via.body.slice(0, 200)} / API: ${direct.body.slice(0, 200)}`);
        if (direct.status === 200) {
          assert.equal(via.body, direct.body, path);
          continue;
        }
        assert.equal(via.json.error, direct.json.error, path);
        if (!path.includes('cursor=')) refusedByApi++;
        assert.equal(named(via.json.message), named(direct.json.message), `${path}: ${via.json.message} / API: ${direct.json.message}`);
        if (up.sent.length === sentBefore) refusedLocally++;
        else if (!API_JUDGES.some((q) => path.endsWith(q))) assert.match(path, /cursor=/, `${path}: only a cursor needs the API to judge it`);
        else apiJudged++;
      }
      assert.equal(apiJudged, API_JUDGES.length * 2 - 1, 'the rules between parameters and of range are the API\'s');
      assert.ok(refusedByApi > 30);
      assert.equal(refusedLocally + apiJudged, refusedByApi, 'every 400 but a cursor\'s and those of API_JUDGES was decided without asking');
      // The values went upstream as the API reads them: `+1` as 1, a plus sign encoded, a space as %20.
      const sent = up.sent.map((r) => new URL(r.url).search);
      assert.ok(sent.includes('?page=1'));
      assert.ok(sent.includes('?min_price=%2B5'));
      assert.ok(sent.includes('?usage_type=Shared%20Office'));
      const refused = await httpCall(s.port, '/api/v1/listings?usage_type=Shared+Office');
      assert.deepEqual(Object.keys(refused.json), ['error', 'message'], 'the proxy\'s own JSON shape');
      assert.match(refused.json.message, /^Query parameter "usage_type" holds "Shared\+Office", which is not one of Office, Shared Office, F&B, /);
      // Server-side reads are checked by the same rules.
      await assert.rejects(handler.listings.list({ page: 0 }), { status: 400, code: 'bad_request', message: 'Query parameter "page" must be 1 or more.' });
      await assert.rejects(handler.listings.list({ minPrice: 'abc' }), { status: 400, message: /^Query parameter "min_price" must match / });
      await assert.rejects(handler.listings.list({ minPrice: 9, maxPrice: 8.5 }), { status: 400, message: 'Query parameter "min_price" (9) is above "max_price" (8.5).' });
      await assert.rejects(handler.listings.changes({ limit: 0 }), { status: 400, message: 'Query parameter "limit" must be 1 or more.' });
      const sentBefore = up.sent.length;
      assert.equal((await handler.listings.list({ usageType: ['Shared Office', 'Cafe'] })).total, 20);
      assert.equal(new URL(up.sent[sentBefore]!.url).search, '?usage_type=Shared%20Office%2CCafe');
    } finally {
      await s.close();
    }
  });

  it('issue 29 item 2: one visitor causes at most 20 look-ups a minute (then 429 with Retry-After, or an older copy); copies cost nothing; the key keeps the rest', async () => {
    // A key with the default limit, 60 a minute, as a site's key has.
    const limited = await api.createKey(accountId, 'sg', 'site');
    const up = upstream();
    const clock = new TestClock();
    const client = new ListingsClient({ apiKey: limited.key, baseUrl: `http://api.localhost:${api.port}`, fetch: up.fetch, maxRetries: 0 });
    const handler = createListingsHandler({ client, now: clock.now });
    const s = await site(handler);
    const a = { localAddress: '127.0.0.2' };
    const b = { localAddress: '127.0.0.3' };
    try {
      // 65 distinct valid URLs from one address: 20 look-ups, then refused here.
      const flood: Array<{ status: number; headers: Record<string, unknown>; json: any }> = [];
      for (let page = 1; page <= 65; page++) flood.push(await httpCall(s.port, `/api/v1/listings?page=${page}&per_page=1`, a));
      assert.deepEqual(flood.map((r) => r.status), [...Array(20).fill(200), ...Array(45).fill(429)]);
      assert.equal(up.sent.length, 20);
      const refused = flood.at(-1)!;
      assert.equal(refused.headers['retry-after'], '3', 'one look-up comes back every 3 s');
      assert.equal(refused.headers['x-listings-cache'], 'limited');
      assert.deepEqual(refused.json, { error: 'rate_limited', message: 'Too many requests for listings not viewed lately (at most 20 a minute per visitor); try again in 3 s.' });
      // What is in the copy is still served to that visitor, for nothing.
      const copy = await httpCall(s.port, '/api/v1/listings?page=1&per_page=1', a);
      assert.equal(copy.status, 200);
      assert.equal(copy.headers['x-listings-cache'], 'hit');
      // Another visitor is not affected, and the key has 40 of its 60 left (39 after this one).
      const other = await httpCall(s.port, '/api/v1/listings?per_page=7', b);
      assert.equal(other.status, 200);
      assert.equal(other.headers['x-listings-cache'], 'miss');
      assert.equal(up.sent.length, 21);
      const direct = await api.get('/v1/listings?per_page=2', { key: limited.key });
      assert.equal(direct.headers['x-ratelimit-remaining'], '38');
      // The budget refills evenly: one look-up after 3 s.
      clock.advance(3000);
      assert.equal((await httpCall(s.port, '/api/v1/listings?page=21&per_page=1', a)).status, 200);
      assert.equal((await httpCall(s.port, '/api/v1/listings?page=22&per_page=1', a)).status, 429);
      // Copies due for revalidation: three look-ups after 10 s (free 304s), then the older copy rather than a 429.
      clock.advance(10_000);
      const due = [];
      for (let page = 1; page <= 4; page++) due.push(await httpCall(s.port, `/api/v1/listings?page=${page}&per_page=1`, a));
      assert.deepEqual(due.map((r) => [r.status, r.headers['x-listings-cache']]), [[200, 'revalidated'], [200, 'revalidated'], [200, 'revalidated'], [200, 'stale']]);
      assert.equal(due[3]!.json.page, 4);
      assert.equal(handler.stats.limited, 46);
      // Server-side reads spend the budget of the visitor they are made for, and none without one.
      await assert.rejects(handler.listings.list({ page: 30 }, { visitor: handler.visitorOf({ headers: {}, socket: { remoteAddress: '127.0.0.2' } }) }), { status: 429, code: 'rate_limited', retryAfter: 3 });
      assert.equal((await handler.listings.list({ page: 30 })).page, 30);
    } finally {
      await s.close();
    }
  });

  it('issue 29 item 2: the Fetch API handler keys the budget by visitorKey, else one budget for all; IPv6 visitors by their network', async () => {
    const { handler: shared } = setup({ visitorLookupsPerMinute: 2 });
    const ask = (h: ListingsHandler, page: number, visitor?: string) =>
      h(new Request(`https://www.example.test/api/v1/listings?page=${page}`, visitor === undefined ? {} : { headers: { 'x-visitor': visitor } })).then((r) => r.status);
    assert.deepEqual([await ask(shared, 1, 'a'), await ask(shared, 2, 'b'), await ask(shared, 3, 'c')], [200, 200, 429], 'without visitorKey: one budget');
    const { handler: keyed } = setup({ visitorLookupsPerMinute: 2, visitorKey: (request: Request) => request.headers.get('x-visitor') ?? undefined });
    assert.deepEqual([await ask(keyed, 1, 'a'), await ask(keyed, 2, 'a'), await ask(keyed, 3, 'a'), await ask(keyed, 3, 'b'), await ask(keyed, 4)], [200, 200, 429, 200, 200]);
    const of = (address: string, ip?: string, h = keyed) =>
      h.visitorOf({ headers: {}, socket: { remoteAddress: address }, ...(ip === undefined ? {} : { ip }) });
    // By its /56 (issue 40 item 5), or the prefix given.
    assert.equal(of('2001:db8:1:2:aaaa::1'), '2001:db8:1:0::/56');
    assert.equal(of('2001:db8:1:2ff:ffff::1'), '2001:db8:1:200::/56');
    const by64 = setup({ visitorIPv6Prefix: 64 }).handler;
    assert.equal(of('2001:db8:1:2:aaaa::1', undefined, by64), '2001:db8:1:2::/64');
    assert.equal(of('2001:0db8:0001:0002:ffff:1:2:3', undefined, by64), '2001:db8:1:2::/64');
    assert.equal(of('2001:db8::1', undefined, by64), '2001:db8:0:0::/64');
    assert.equal(of('2001:db8:1:2:aaaa::1', undefined, setup({ visitorIPv6Prefix: 48 }).handler), '2001:db8:1::/48');
    assert.equal(of('2001:db8::1', undefined, setup({ visitorIPv6Prefix: 128 }).handler), '2001:db8:0:0:0:0:0:1/128');
    assert.equal(of('::ffff:203.0.113.9'), '203.0.113.9');
    assert.equal(of('203.0.113.9'), '203.0.113.9');
    assert.equal(of('10.0.0.1', '198.51.100.7'), '198.51.100.7', 'Express\'s req.ip (after trust proxy) first');
    assert.throws(() => createListingsHandler({ client: new ListingsClient({ apiKey: key, baseUrl: 'http://x.test' }), visitorLookupsPerMinute: 0 }), /visitorLookupsPerMinute/);
    assert.throws(() => createListingsHandler({ client: new ListingsClient({ apiKey: key, baseUrl: 'http://x.test' }), siteLookupsPerMinute: 0 }), /siteLookupsPerMinute/);
    assert.throws(() => createListingsHandler({ client: new ListingsClient({ apiKey: key, baseUrl: 'http://x.test' }), visitorIPv6Prefix: 129 }), /visitorIPv6Prefix/);
  });

  it('issue 40 item 5: four IPv6 /64s of one /56, 20 distinct URLs each, are one visitor; with /64 budgets the site\'s share still holds', async () => {
    // Behind a reverse proxy on loopback, as Express's recipe says: req.ip is the X-Forwarded-For address.
    async function expressSite(handler: ListingsHandler): Promise<{ port: number; close(): Promise<void> }> {
      const app = express();
      app.set('trust proxy', 'loopback');
      app.use(handler.node);
      const server = app.listen(0, '127.0.0.1');
      await new Promise<void>((resolve) => server.once('listening', resolve));
      return { port: (server.address() as { port: number }).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
    }
    /** 20 distinct URLs from each address, the addresses at once; the statuses, and how many look-ups reached the API. */
    async function flood(port: number, addresses: string[], sent: () => number) {
      const before = sent();
      const statuses = (await Promise.all(addresses.map(async (address, a) => {
        const got: number[] = [];
        for (let page = 1; page <= 20; page++) {
          got.push((await httpCall(port, `/api/v1/listings?page=${page}&per_page=${a + 1}`, { headers: { 'x-forwarded-for': address } })).status);
        }
        return got;
      }))).flat();
      return { statuses, sent: sent() - before };
    }
    const slash64s = ['2001:db8:0:ab01::1', '2001:db8:0:ab02::2', '2001:db8:0:ab03:1::3', '2001:db8:0:abff::4'];

    // The defaults: one /56, one budget of 20.
    const grouped = await api.createKey(accountId, 'sg', 'site');
    const up = upstream();
    const client = new ListingsClient({ apiKey: grouped.key, baseUrl: `http://api.localhost:${api.port}`, fetch: up.fetch, maxRetries: 0 });
    const handler = createListingsHandler({ client, now: new TestClock().now, onError: () => {} });
    const s = await expressSite(handler);
    try {
      const { statuses, sent } = await flood(s.port, slash64s, () => up.sent.length);
      assert.equal(sent, 20, `one budget for the /56: ${sent} look-ups reached the API`);
      assert.equal(statuses.filter((status) => status === 200).length, 20);
      assert.equal(statuses.filter((status) => status === 429).length, 60);
      // Another /56 is another visitor, and the key has most of its limit.
      const other = await httpCall(s.port, '/api/v1/listings?per_page=9', { headers: { 'x-forwarded-for': '2001:db8:0:cd00::1' } });
      assert.equal(other.status, 200);
      assert.equal(client.rateLimit!.remaining, 39);
    } finally {
      await s.close();
    }

    // Budgets by /64: four visitors, but the site's share (45 of the key's 60) holds, and a new visitor is served.
    const apart = await api.createKey(accountId, 'sg', 'site by /64');
    const up64 = upstream();
    const client64 = new ListingsClient({ apiKey: apart.key, baseUrl: `http://api.localhost:${api.port}`, fetch: up64.fetch, maxRetries: 0 });
    const by64 = createListingsHandler({ client: client64, now: new TestClock().now, visitorIPv6Prefix: 64, onError: () => {} });
    const s64 = await expressSite(by64);
    try {
      const { statuses, sent } = await flood(s64.port, slash64s, () => up64.sent.length);
      assert.ok(sent <= 45, `${sent} look-ups reached the API`);
      assert.ok(statuses.every((status) => status === 200 || status === 503), JSON.stringify(statuses));
      assert.ok(client64.rateLimit!.remaining >= 15, `the key has ${client64.rateLimit!.remaining} left`);
      const newcomer = await httpCall(s64.port, '/api/v1/listings?per_page=9', { headers: { 'x-forwarded-for': '2001:db8:0:cd00::1' } });
      assert.equal(newcomer.status, 200);
      assert.equal(newcomer.headers['x-listings-cache'], 'miss');
    } finally {
      await s64.close();
    }
  });

  it('issue 40 item 5: the site\'s share: three quarters of the key\'s reported limit, a part kept for newcomers, stale copies or a 503 once spent, the key\'s own Remaining', async () => {
    // A key of 8 a minute: once the API has said so, the share is 6, of which 2 are kept for newcomers.
    const small = await api.createKey(accountId, 'sg', 'small');
    await api.service.store.keys.setRateLimit(small.id, 8);
    const up = upstream();
    // The proxy's clock is the API's: the key's rolling minute and its X-RateLimit-Reset are on it.
    const { clock } = api;
    const client = new ListingsClient({ apiKey: small.key, baseUrl: `http://api.localhost:${api.port}`, fetch: up.fetch, maxRetries: 0 });
    const handler = createListingsHandler({ client, now: clock.now, visitorLookupsPerMinute: Infinity, visitorKey: (r) => r.headers.get('x-visitor') ?? undefined, onError: () => {} });
    const ask = async (path: string, visitor: string) => {
      const res = await handler(new Request(`https://www.example.test/api${path}`, { headers: { 'x-visitor': visitor } }));
      return { status: res.status, how: res.headers.get('x-listings-cache'), retryAfter: res.headers.get('retry-after'), body: await res.text() };
    };
    const busy = [];
    for (let page = 1; page <= 8; page++) busy.push(await ask(`/v1/listings?page=${page}&per_page=1`, 'busy'));
    // Four from the open part, one more while the busy visitor still counts as new (fewer than 5), then the site's 503.
    assert.deepEqual(busy.map((r) => r.status), [200, 200, 200, 200, 200, 503, 503, 503]);
    assert.deepEqual([busy[7]!.how, busy[7]!.retryAfter], ['busy', '60']);
    assert.deepEqual(JSON.parse(busy[7]!.body), { error: 'rate_limited', message: 'The listings are busy right now; try again in 60 s.' });
    // A newcomer takes the last of the share; then no one can, and the key keeps its last 2.
    assert.equal((await ask('/v1/listings?per_page=5', 'new')).status, 200);
    assert.deepEqual((await ask('/v1/listings?per_page=6', 'another')).status, 503);
    assert.equal(up.sent.length, 6);
    assert.equal(client.rateLimit!.remaining, 2);
    // A copy due again is served as it is, marked stale, while the share is spent.
    clock.advance(15_000);
    const stale = await ask('/v1/listings?page=1&per_page=1', 'another');
    assert.deepEqual([stale.status, stale.how], [200, 'stale']);
    assert.equal(handler.stats.busy, 4);
    // The server's own reads spend none of the share (the key's reserve is for them).
    assert.equal((await handler.listings.list({ perPage: 7 })).per_page, 7);
    assert.equal(up.sent.length, 7);
    // Once the key's X-RateLimit-Reset has passed (a minute after the server's read), the share is whole again.
    clock.advance(61_000);
    assert.equal((await ask('/v1/listings?page=9&per_page=1', 'busy')).status, 200);

    // The key's own report: anything else that spends the key (another instance of the site, a
    // sync job) leaves the proxy no more than its share; it waits for the key's X-RateLimit-Reset.
    const shared = await api.createKey(accountId, 'sg', 'shared');
    for (let i = 0; i < 44; i++) assert.equal((await api.get(`/v1/listings?per_page=${1 + (i % 50)}&page=${1 + Math.floor(i / 50)}`, { key: shared.key })).status, 200);
    const up2 = upstream();
    const client2 = new ListingsClient({ apiKey: shared.key, baseUrl: `http://api.localhost:${api.port}`, fetch: up2.fetch, maxRetries: 0 });
    const proxy2 = createListingsHandler({ client: client2, now: api.clock.now, onError: () => {} });
    const get2 = (path: string) => proxy2(new Request(`https://www.example.test/api${path}`));
    assert.equal((await get2('/v1/listings?per_page=61')).status, 200);
    assert.equal(client2.rateLimit!.remaining, 15, '44 + 1 of 60');
    const waiting = await get2('/v1/listings?per_page=62');
    assert.equal(waiting.status, 503);
    assert.ok(Number(waiting.headers.get('retry-after')) >= 55, `Retry-After ${waiting.headers.get('retry-after')}`);
    assert.equal(up2.sent.length, 1);
    api.clock.advance(61_000);
    assert.equal((await get2('/v1/listings?per_page=62')).status, 200);
    // Infinity: no share at all.
    const unlimited = createListingsHandler({
      client: client2, now: api.clock.now, siteLookupsPerMinute: Infinity, visitorLookupsPerMinute: Infinity, onError: () => {},
    });
    const answers = [];
    for (let n = 1; n <= 50; n++) answers.push((await unlimited(new Request(`https://www.example.test/api/v1/listings?per_page=${n}&page=2`))).status);
    assert.ok(answers.slice(0, 45).every((status) => status === 200), JSON.stringify(answers));
  });

  it('serves the last copy when the API cannot be reached, and a clear 502 when it has none', async () => {
    const { up, clock, handler } = setup({ freshMs: 1000, staleIfErrorMs: 60_000 });
    const s = await site(handler);
    try {
      const first = await httpCall(s.port, '/api/v1/listings');
      up.state.down = true;
      clock.advance(5000);
      const stale = await httpCall(s.port, '/api/v1/listings');
      assert.equal(stale.status, 200);
      assert.equal(stale.headers['x-listings-cache'], 'stale');
      assert.equal(stale.body, first.body);
      const none = await httpCall(s.port, '/api/v1/listings?page=9');
      assert.equal(none.status, 502);
      assert.equal(none.json.error, 'bad_gateway');
      clock.advance(60_000);
      const tooOld = await httpCall(s.port, '/api/v1/listings');
      assert.equal(tooOld.status, 502);
    } finally {
      await s.close();
    }
  });

  it('the README\'s cache rules: a stale copy or a kept error is not asked about again for freshMs; staleIfErrorMs counts from the last 200 or 304', async () => {
    const { up, clock, handler } = setup({ freshMs: 1000, staleIfErrorMs: 5000, visitorLookupsPerMinute: Infinity });
    const get = async (path: string) => {
      const res = await handler(new Request(`https://www.example.test/api${path}`));
      return { status: res.status, how: res.headers.get('x-listings-cache') };
    };
    assert.deepEqual(await get('/v1/listings'), { status: 200, how: 'miss' }); // confirmed at 0
    clock.advance(2000);
    assert.deepEqual(await get('/v1/listings'), { status: 200, how: 'revalidated' }); // a 304: confirmed at 2000
    up.state.down = true;
    clock.advance(2000);
    const sent = up.sent.length;
    assert.deepEqual(await get('/v1/listings'), { status: 200, how: 'stale' }); // rule 5, at 4000
    clock.advance(500);
    assert.deepEqual(await get('/v1/listings'), { status: 200, how: 'hit' }); // rule 1: not asked again
    assert.equal(up.sent.length, sent + 1);
    clock.advance(2000);
    assert.deepEqual(await get('/v1/listings'), { status: 200, how: 'stale' }); // 6500: 4500 after the 304
    clock.advance(1000);
    assert.deepEqual(await get('/v1/listings'), { status: 502, how: 'error' }); // 7500: too old
    clock.advance(500);
    assert.deepEqual(await get('/v1/listings'), { status: 502, how: 'error' }); // rule 6: kept, not asked
    assert.equal(up.sent.length, sent + 3);

    // Rule 7: a visitor whose budget is spent gets the copy (confirmed less than staleIfErrorMs ago), nothing asked.
    const budget = setup({ freshMs: 1000, staleIfErrorMs: 5000, visitorLookupsPerMinute: 1, visitorKey: () => 'one visitor' });
    const first = await budget.handler(new Request('https://www.example.test/api/v1/listings?per_page=2'));
    assert.equal(first.status, 200);
    budget.clock.advance(2000);
    const limited = await budget.handler(new Request('https://www.example.test/api/v1/listings?per_page=2'));
    assert.deepEqual([limited.status, limited.headers.get('x-listings-cache')], [200, 'stale']);
    assert.equal(budget.up.sent.length, 1);
    const other = await budget.handler(new Request('https://www.example.test/api/v1/listings?per_page=3'));
    assert.deepEqual([other.status, other.headers.get('x-listings-cache')], [429, 'limited']);
  });

  it('a key revoked after a copy was kept: the next look-up is a 502, never the older copy (401 is not a failure to hide)', async () => {
    const created = await api.createKey(accountId, 'sg', 'soon revoked');
    const clock = new TestClock();
    const client = new ListingsClient({ apiKey: created.key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    const failures: UpstreamFailure[] = [];
    const handler = createListingsHandler({ client, basePath: '/api', now: clock.now, freshMs: 1000, staleIfErrorMs: 600_000, onError: (f) => failures.push(f) });
    const s = await site(handler);
    try {
      assert.equal((await httpCall(s.port, '/api/v1/listings')).status, 200);
      await api.service.store.keys.revoke(created.id, new Date(api.clock.now()).toISOString());
      await api.service.store.broadcastSettled();
      clock.advance(5000);
      const after = await httpCall(s.port, '/api/v1/listings');
      assert.equal(after.status, 502);
      assert.match(after.json.message, /refused this site's key \(unauthorized\)/);
      await assert.rejects(handler.listings.list(), { code: 'unauthorized' });
      assert.deepEqual(failures.map((f) => [f.outcome, f.error.status, f.error.code]), [['error', 401, 'unauthorized']], 'onError saw the revoked key');
    } finally {
      await s.close();
    }
  });

  it('issue 33 item 2: a handler whose client has no key throws at once, instead of answering every browser with a 502', () => {
    // What `apiKey: process.env.LISTINGS_API_KEY` gives when the variable is not set.
    const unset: string | undefined = undefined;
    const keyless = new ListingsClient({ apiKey: unset, baseUrl: `http://api.localhost:${api.port}` });
    assert.equal(keyless.hasApiKey, false);
    assert.throws(() => createListingsHandler({ client: keyless }), (error: Error) => error instanceof TypeError && /has no apiKey/.test(error.message) && /LISTINGS_API_KEY/.test(error.message));
  });

  it('issue 33 item 2: onError sees every upstream failure (no answer, timeout, 401, 429, 5xx) with status and code, and what the visitors got; never the key', async () => {
    const failures: UpstreamFailure[] = [];
    const state = { mode: 'ok' as 'ok' | 'down' | '503' | 'hang' };
    const fetch: FetchLike = async (url, init) => {
      if (state.mode === 'down') throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
      if (state.mode === '503') return new Response('<html>Service Unavailable</html>', { status: 503, headers: { 'x-request-id': 'lb-1' } });
      if (state.mode === 'hang') return new Promise((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
      return fetchWithLocalhost(url, init);
    };
    const clock = new TestClock();
    const waits: number[] = [];
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, fetch, maxRetries: 1, random: () => 0, sleep: async (ms) => void waits.push(ms) });
    const handler = createListingsHandler({ client, now: clock.now, freshMs: 1000, upstreamTimeoutMs: 200, onError: (f) => failures.push(f) });
    const get = (path: string) => handler(new Request(`https://www.example.test/api${path}`));

    assert.equal((await get('/v1/listings')).status, 200);
    assert.equal(failures.length, 0, 'a 200 is no failure');
    state.mode = 'down';
    clock.advance(2000);
    assert.equal((await get('/v1/listings')).headers.get('x-listings-cache'), 'stale');
    assert.equal((await get('/v1/listings?page=2')).status, 502);
    state.mode = '503';
    assert.equal((await get('/v1/listings?page=3')).status, 502);
    state.mode = 'hang';
    assert.equal((await get('/v1/listings?page=4')).status, 504);
    state.mode = 'ok';
    // The API's 400 and 404 are answers to the visitor, not failures.
    assert.equal((await get('/v1/listings/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.deepEqual(failures.map((f) => [f.path, f.outcome, f.error.status, f.error.code]), [
      ['/v1/listings', 'retrying', 0, 'network_error'],
      ['/v1/listings', 'stale', 0, 'network_error'],
      ['/v1/listings?page=2', 'retrying', 0, 'network_error'],
      ['/v1/listings?page=2', 'error', 0, 'network_error'],
      ['/v1/listings?page=3', 'retrying', 503, 'internal_error'],
      ['/v1/listings?page=3', 'error', 503, 'internal_error'],
      ['/v1/listings?page=4', 'error', 0, 'timeout'],
    ]);
    assert.equal(failures[5]!.error.requestId, 'lb-1');

    // 429 from the API (a key whose limit is spent): retried after Retry-After, then the visitor's 503.
    // (Without the site's share, which would not ask the API once its last answer said the key is spent.)
    const limited = await api.createKey(accountId, 'sg', 'limited');
    await api.service.store.keys.setRateLimit(limited.id, 1);
    const seen: UpstreamFailure[] = [];
    const busy = createListingsHandler({
      client: new ListingsClient({ apiKey: limited.key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 1, random: () => 0, sleep: async () => {} }),
      siteLookupsPerMinute: Infinity,
      onError: (f) => seen.push(f),
    });
    assert.equal((await busy(new Request('https://www.example.test/api/v1/listings'))).status, 200);
    const refused = await busy(new Request('https://www.example.test/api/v1/listings?page=2'));
    assert.equal(refused.status, 503);
    assert.deepEqual(seen.map((f) => [f.outcome, f.error.status, f.error.code]), [['retrying', 429, 'rate_limited'], ['error', 429, 'rate_limited']]);
    assert.ok(seen[1]!.error.retryAfter! > 0);

    // 401 (a key the API does not know), through the default logger: one line, status and code, no key.
    const unknownKey = 'sg_live_00000000000000000000000000000000aaaaaa';
    const refusedKey = createListingsHandler({ client: new ListingsClient({ apiKey: unknownKey, baseUrl: `http://api.localhost:${api.port}` }) });
    const lines: unknown[][] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void lines.push(args);
    try {
      assert.equal((await refusedKey(new Request('https://www.example.test/api/v1/listings'))).status, 502);
    } finally {
      console.error = original;
    }
    assert.equal(lines.length, 1);
    assert.match(String(lines[0]![0]), /GET \/v1\/listings failed: HTTP 401 unauthorized: .* \(request id [^)]+\); served an error\.$/);
    for (const f of [...failures, ...seen]) assert.ok(!inspect(f, { depth: 10 }).includes(key) && !inspect(f, { depth: 10 }).includes(limited.key));
    assert.ok(!inspect(lines, { depth: 10 }).includes(unknownKey));

    // A logger that throws changes nothing for the visitors.
    const throwing = createListingsHandler({ client: new ListingsClient({ apiKey: unknownKey, baseUrl: `http://api.localhost:${api.port}` }), onError: () => { throw new Error('logger down'); } });
    assert.equal((await throwing(new Request('https://www.example.test/api/v1/listings'))).status, 502);
  });

  it('a key the API refuses is a 502 for the browser that names no key', async () => {
    const client = new ListingsClient({ apiKey: 'sg_live_00000000000000000000000000000000aaaaaa', baseUrl: `http://api.localhost:${api.port}` });
    const s = await site(createListingsHandler({ client, onError: () => {} }));
    try {
      const res = await httpCall(s.port, '/api/v1/listings');
      assert.equal(res.status, 502);
      assert.equal(res.json.error, 'bad_gateway');
      assert.match(res.json.message, /refused this site's key \(unauthorized\)/);
      assert.ok(!res.body.includes('sg_live_'));
    } finally {
      await s.close();
    }
  });

  it('the Fetch API handler works on its own (Request in, Response out), and server code reads the same copy', async () => {
    const { up, handler } = setup();
    const response = await handler(new Request('https://www.example.test/api/v1/listings?per_page=3'));
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { items: unknown[] }).items.length, 3);
    const page = await handler.listings.list({ perPage: 3 });
    assert.equal(page.items.length, 3);
    assert.equal(up.sent.length, 1, 'the server-side read was the browser\'s copy');
    await assert.rejects(handler.listings.get('00000000-0000-4000-8000-000000000000'), { code: 'not_found', status: 404 });
  });

  it('1,000 simulated page views over one minute cost a handful of upstream requests, and only the first read of each URL is counted', async () => {
    const { up, clock, handler } = setup({ freshMs: 10_000 });
    const s = await site(handler);
    // What visitors of a listings site ask for: mostly the first page, some filtering, "load more"
    // (page 2) and listing pages (10 distinct listings).
    const paths = [
      ...Array(50).fill('/api/v1/listings?per_page=12'),
      ...Array(10).fill('/api/v1/listings?per_page=12&page=2'),
      ...Array(10).fill('/api/v1/listings?per_page=12&usage_type=Office'),
      ...ids.slice(0, 10).flatMap((id) => Array(3).fill(`/api/v1/listings/${id}`)),
    ];
    const before = api.logs.lines.length;
    try {
      for (let view = 0; view < 1000; view += 10) {
        // Ten visitors at a time, 600 ms of simulated time apart: 1,000 views in 60 s.
        const batch = await Promise.all(Array.from({ length: 10 }, (_, i) => httpCall(s.port, paths[(view + i) * 7 % paths.length]!, { localAddress: `127.0.0.${10 + i}` })));
        assert.ok(batch.every((r) => r.status === 200));
        clock.advance(600);
      }
    } finally {
      await s.close();
    }
    const lines = api.logs.lines.slice(before).filter((l) => String(l.path).startsWith('/v1/'));
    const counted = lines.filter((l) => l.status === 200).length;
    const free = lines.filter((l) => l.status === 304).length;
    console.log(`# 1,000 page views through the proxy: ${up.sent.length} upstream API requests (${counted} counted 200s, ${free} free 304s) for 13 distinct URLs; proxy stats ${JSON.stringify(handler.stats)}`);
    assert.equal(lines.length, up.sent.length);
    assert.equal(counted, 13, 'one counted request per distinct URL');
    assert.ok(up.sent.length <= 13 * 7, `at most one request per URL per 10 s: ${up.sent.length}`);
    assert.equal(handler.stats.requests, 1000);
    assert.equal(handler.stats.refreshes, up.sent.length);
  });
});
