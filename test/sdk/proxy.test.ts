import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createListingsHandler, fetchWithLocalhost, ListingsClient, type FetchLike, type ListingsHandler } from '@listings-api/sdk';
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

  function setup(options: { freshMs?: number; staleIfErrorMs?: number } = {}) {
    const up = upstream();
    const clock = new TestClock();
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, fetch: up.fetch, maxRetries: 0 });
    const handler = createListingsHandler({ client, basePath: '/api', now: clock.now, ...options });
    return { up, clock, handler };
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
      const bad = await httpCall(s.port, '/api/v1/listings?per_page=abc');
      assert.equal(bad.status, 400);
      assert.equal(bad.json.error, 'bad_request');
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
      assert.equal(up.sent.length, 2, 'one for the 400, one for the 404; the repeats, the junk id and the repeated parameter cost nothing');
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

  it('a key the API refuses is a 502 for the browser that names no key', async () => {
    const client = new ListingsClient({ apiKey: 'sg_live_00000000000000000000000000000000aaaaaa', baseUrl: `http://api.localhost:${api.port}` });
    const s = await site(createListingsHandler({ client }));
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
        const batch = await Promise.all(Array.from({ length: 10 }, (_, i) => httpCall(s.port, paths[(view + i) * 7 % paths.length]!)));
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
