import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { runCli } from '../support/cli.js';
import type { RequestOptions, TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { WINDOW_SECONDS } from '../../src/ratelimit/limiter.js';
import { assertError, header, ietfRateLimit } from './helpers.js';

interface Limits {
  limit: number;
  remaining: number;
  reset: number;
}

/**
 * The D15 headers of a response, checked for form: integers, Reset never in the past; and D29's
 * IETF fields with them, saying the same: q = Limit, w = 60, r = Remaining, t = Retry-After on a
 * refusal, 0 while a request would be admitted now (Remaining > 0), else the wait (>= 1).
 */
function limits(res: TestResponse, nowMs: number, context = ''): Limits & { t: number } {
  const raw = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((h) => header(res, h));
  for (const [i, v] of raw.entries()) assert.match(v ?? '', /^[0-9]+$/, `${context} header ${i} is an integer: ${v} (status ${res.status})`);
  const [limit, remaining, reset] = raw.map(Number) as [number, number, number];
  assert.ok(reset * 1000 >= nowMs, `${context} Reset ${reset} is not in the past (now ${nowMs / 1000})`);
  assert.ok(remaining <= limit, context);
  const ietf = ietfRateLimit(res);
  assert.ok(ietf !== undefined, `${context} RateLimit and RateLimit-Policy come with X-RateLimit-* (D29, status ${res.status})`);
  assert.deepEqual([ietf.q, ietf.w, ietf.r], [limit, WINDOW_SECONDS, remaining], `${context} D29 fields agree with X-RateLimit-*`);
  const wait = header(res, 'retry-after');
  if (wait !== undefined) assert.equal(ietf.t, Number(wait), `${context} t is Retry-After (D29)`);
  else if (remaining > 0) assert.equal(ietf.t, 0, `${context} t=0 while a request would be admitted now (D29)`);
  else assert.ok(ietf.t >= 1 && ietf.t <= WINDOW_SECONDS, `${context} t is the wait when nothing is left: ${ietf.t}`);
  return { limit, remaining, reset, t: ietf.t };
}

function retryAfter(res: TestResponse): number {
  const value = header(res, 'retry-after');
  assert.match(value ?? '', /^[0-9]+$/, `Retry-After is an integer: ${value}`);
  const seconds = Number(value);
  assert.ok(seconds >= 1, `Retry-After ${seconds} >= 1`);
  return seconds;
}

function assertNoLimitHeaders(res: TestResponse, context: string): void {
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after', 'ratelimit', 'ratelimit-policy']) {
    assert.equal(header(res, h), undefined, `${context}: no ${h}`);
  }
}

describe('rate limiting over HTTP (spec 8; D5, D14, D15)', () => {
  let server: TestServer;
  let orgId: string;
  const listingId = 'b0000000-0000-4000-8000-000000000001';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount();
    await server.addListings(orgId, [{ id: listingId }]);
    await server.allowOrigin(orgId, 'https://shop.example.com');
  }

  const newKey = async () => server.createKey(orgId);
  const get = (key: string, path = '/v1/listings', options: RequestOptions = {}) => server.get(path, { ...options, key });
  const now = () => server.clock.now();

  it('default 60 per minute: a burst of 60 is admitted with Remaining counting down, the 61st is 429 (D14, D15)', async (t) => {
    await world(t);
    const { key } = await newKey();
    for (let i = 0; i < 60; i++) {
      const res = await get(key);
      assert.equal(res.status, 200, `request ${i + 1}`);
      const l = limits(res, now(), `request ${i + 1}`);
      assert.equal(l.limit, 60);
      assert.equal(l.remaining, 59 - i);
      assert.equal(header(res, 'retry-after'), undefined);
    }
    const refused = await get(key);
    assertError(refused, 429, 'rate_limited');
    const l = limits(refused, now(), '429');
    assert.equal(l.limit, 60);
    assert.equal(l.remaining, 0);
    const wait = retryAfter(refused);
    assert.ok(wait <= 60, `Retry-After ${wait} <= 60`);
    // After waiting Retry-After seconds, a request is admitted (D15).
    server.clock.advance(wait * 1000);
    const admitted = await get(key);
    assert.equal(admitted.status, 200);
  });

  it('the window is rolling: no fixed boundary lets more than the limit through in 60 s (D14)', async (t) => {
    await world(t);
    const { key } = await newKey();
    server.clock.ms = Math.ceil(now() / 60_000) * 60_000 + 30_000; // half a minute into a clock minute
    for (let i = 0; i < 30; i++) assert.equal((await get(key)).status, 200);
    server.clock.advance(29_500); // just before the clock minute turns
    for (let i = 0; i < 30; i++) assert.equal((await get(key)).status, 200);
    server.clock.advance(1_000); // the clock minute has turned: a fixed window would start afresh
    const refused = await get(key);
    assertError(refused, 429, 'rate_limited', 'still 60 in the last 60 s');
    // Retry-After: the first 30 leave the window about 30 s after they were sent.
    const wait = retryAfter(refused);
    assert.ok(wait <= 30, `Retry-After ${wait}`);
    server.clock.advance(28_000);
    assertError(await get(key), 429, 'rate_limited', 'well before the first 30 leave');
    server.clock.advance(wait * 1000 - 28_000);
    for (let i = 0; i < 30; i++) assert.equal((await get(key)).status, 200, `after Retry-After, request ${i + 1}`);
    assertError(await get(key), 429, 'rate_limited', 'the second 30 are still in the window');
  });

  it('429s do not count: a client retrying too early is not locked out (D5)', async (t) => {
    await world(t);
    const { key } = await newKey();
    for (let i = 0; i < 60; i++) assert.equal((await get(key)).status, 200);
    const first = await get(key);
    assertError(first, 429, 'rate_limited');
    const firstWait = retryAfter(first);
    server.clock.advance(30_000);
    let wait = 0;
    for (let i = 0; i < 20; i++) {
      const res = await get(key);
      assertError(res, 429, 'rate_limited');
      wait = retryAfter(res);
    }
    assert.equal(wait, firstWait - 30, 'the refused retries did not push Retry-After back');
    server.clock.advance(wait * 1000);
    // The whole limit is back: none of the 21 refused requests was counted.
    for (let i = 0; i < 60; i++) assert.equal((await get(key)).status, 200, `request ${i + 1} after the wait`);
    assertError(await get(key), 429, 'rate_limited');
  });

  it('Reset is an integer, never in the past, and at Reset the full limit is available again (D15)', async (t) => {
    await world(t);
    const { key } = await newKey();
    server.clock.advance(123); // not on a whole second
    let last: Limits | undefined;
    for (let i = 0; i < 10; i++) {
      last = limits(await get(key), now());
      server.clock.advance(1_700);
    }
    const refusedAt = now();
    for (let i = 0; i < 50; i++) limits(await get(key), now());
    const refused = await get(key);
    assert.equal(refused.status, 429);
    const l = limits(refused, refusedAt);
    assert.ok(l.reset >= last!.reset, 'Reset does not move back');
    server.clock.ms = l.reset * 1000;
    for (let i = 0; i < 60; i++) {
      const res = await get(key);
      assert.equal(res.status, 200, `at Reset, request ${i + 1}`);
      limits(res, now());
    }
  });

  it('headers are on every response past the 401 stage (200, 400, 403, 404) and absent on 401 (D15)', async (t) => {
    await world(t);
    const { key } = await newKey();
    const cases: Array<[number, Promise<TestResponse>]> = [
      [200, get(key)],
      [200, get(key, `/v1/listings/${listingId}`)],
      [400, get(key, '/v1/listings?page=abc')],
      [403, get(key, '/v1/listings', { headers: { origin: 'https://evil.example.com' } })],
      [404, get(key, '/v1/listings/b0000000-0000-4000-8000-0000000000ff')],
      [404, get(key, '/v1/listings/not-a-uuid')],
    ];
    const seen: number[] = [];
    for (const [status, pending] of cases) {
      const res = await pending;
      assert.equal(res.status, status, res.body);
      const l = limits(res, now(), `status ${status}`);
      assert.equal(l.limit, 60);
      seen.push(l.remaining);
    }
    assert.deepEqual([...seen].sort((a, b) => b - a), [59, 58, 57, 56, 55, 54], 'each counted once');

    const unauthorized: TestResponse[] = [
      await server.get('/v1/listings'),
      await server.get('/v1/listings', { key: 'sg_live_nope' }),
      await server.get('/v1/listings', { key, host: 'api.my.localhost' }),
      await server.get('/v1/listings', { headers: { origin: 'https://shop.example.com' } }),
    ];
    for (const res of unauthorized) {
      assert.equal(res.status, 401);
      assertNoLimitHeaders(res, '401');
    }
    // ... and the 401s did not count against the key either.
    assert.equal(limits(await get(key), now()).remaining, 53);
  });

  it('400, 403 and 404 count against the limit like 200s (D5)', async (t) => {
    await world(t);
    const { key, id } = await newKey();
    await server.service.store.keys.setRateLimit(id, 5);
    assert.equal((await get(key, '/v1/listings?page=0')).status, 400);
    assert.equal((await get(key, '/v1/listings', { headers: { origin: 'https://evil.example.com' } })).status, 403);
    assert.equal((await get(key, '/v1/listings/b0000000-0000-4000-8000-0000000000ff')).status, 404);
    assert.equal((await get(key, '/v1/listings?per_page=x')).status, 400);
    const fifth = await get(key);
    assert.equal(fifth.status, 200);
    assert.equal(limits(fifth, now()).remaining, 0);
    const refused = await get(key);
    assertError(refused, 429, 'rate_limited');
    // Once limited, a request that would be 400/403/404 is a 429 (D5 order).
    assertError(await get(key, '/v1/listings?page=0'), 429, 'rate_limited');
    assertError(await get(key, '/v1/listings', { headers: { origin: 'https://evil.example.com' } }), 429, 'rate_limited');
  });

  it('a per-key limit set by an operator applies at once (store and real CLI `key set-limit`) (D14)', async (t) => {
    await world(t);
    const { key, id } = await newKey();
    assert.equal(limits(await get(key), now()).limit, 60);
    await server.service.store.keys.setRateLimit(id, 3);
    const after1 = await get(key);
    assert.equal(limits(after1, now()).limit, 3);
    assert.equal(limits(after1, now()).remaining, 1, 'the request made before the change still counts');
    assert.equal((await get(key)).status, 200);
    const refused = await get(key);
    assertError(refused, 429, 'rate_limited');
    assert.equal(limits(refused, now()).limit, 3);

    const raised = runCli(['key', 'set-limit', id, '120'], { DATABASE_URL: server.databaseUrl });
    assert.equal(raised.status, 0, raised.stderr);
    const res = await get(key);
    assert.equal(res.status, 200);
    const l = limits(res, now());
    assert.equal(l.limit, 120);
    assert.equal(l.remaining, 116);
    for (let i = 0; i < 116; i++) assert.equal((await get(key)).status, 200);
    assert.equal((await get(key)).status, 429);
  });

  it('keys are limited independently, within one account and across accounts (D14)', async (t) => {
    await world(t);
    const a = await newKey();
    const b = await newKey();
    const otherOrg = await server.createAccount();
    const c = await server.createKey(otherOrg);
    for (let i = 0; i < 60; i++) assert.equal((await get(a.key)).status, 200);
    assert.equal((await get(a.key)).status, 429);
    for (const other of [b.key, c.key]) {
      const res = await get(other);
      assert.equal(res.status, 200);
      assert.equal(limits(res, now()).remaining, 59);
    }
    assert.equal((await get(a.key)).status, 429);
  });

  it('preflights count against no limit and are answered while the key is limited (D16)', async (t) => {
    await world(t);
    const { key } = await newKey();
    const preflight = () =>
      server.get('/v1/listings', {
        method: 'OPTIONS',
        headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
    for (let i = 0; i < 100; i++) {
      const res = await preflight();
      assert.equal(res.status, 204);
      assertNoLimitHeaders(res, 'preflight');
    }
    const first = await get(key, '/v1/listings', { headers: { origin: 'https://shop.example.com' } });
    assert.equal(first.status, 200);
    assert.equal(limits(first, now()).remaining, 59);
    for (let i = 0; i < 59; i++) assert.equal((await get(key)).status, 200);
    assert.equal((await get(key)).status, 429);
    assert.equal((await preflight()).status, 204);
  });
});

describe('the IETF RateLimit fields with X-RateLimit-* (D29, D15)', () => {
  let server: TestServer;
  let orgId: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount();
    await server.addListings(orgId, [{}]);
  }

  const keyLimitedTo = async (limit: number) => {
    const { key, id } = await server.createKey(orgId);
    await server.service.store.keys.setRateLimit(id, limit);
    return key;
  };
  const get = (key: string, options: RequestOptions = {}) => server.get('/v1/listings', { ...options, key });
  const now = () => server.clock.now();
  /** The two fields as a standard structured-field parser reads them. */
  const fields = (res: TestResponse) => {
    const ietf = ietfRateLimit(res);
    assert.ok(ietf, `status ${res.status}: RateLimit and RateLimit-Policy`);
    return ietf;
  };

  it('on 200s, on the 200 that takes the last request, and on 429s: r is Remaining, t the seconds until one is admitted (Retry-After on a 429)', async (t) => {
    await world(t);
    const key = await keyLimitedTo(3);
    server.clock.ms = Math.ceil(now() / 1000) * 1000 + 300;
    const start = now();
    const first = await get(key);
    assert.equal(first.status, 200);
    assert.equal(header(first, 'ratelimit-policy'), '"key";q=3;w=60');
    assert.equal(header(first, 'ratelimit'), '"key";r=2;t=0');
    server.clock.advance(10_000);
    assert.deepEqual(fields(await get(key)), { q: 3, w: 60, r: 1, t: 0 });
    server.clock.advance(5_000);
    // The last request of the window: admitted, and t says when the next one will be (the first
    // request leaves the window 60 s after it was sent, 45 s from now), where Remaining says 0.
    const last = await get(key);
    assert.equal(last.status, 200);
    assert.deepEqual(fields(last), { q: 3, w: 60, r: 0, t: 45 });
    limits(last, now());
    const refused = await get(key);
    assertError(refused, 429, 'rate_limited');
    assert.equal(header(refused, 'retry-after'), '45');
    assert.equal(header(refused, 'ratelimit'), '"key";r=0;t=45');
    server.clock.ms = start + 59_000;
    const early = await get(key);
    assert.equal(early.status, 429);
    assert.deepEqual(fields(early), { q: 3, w: 60, r: 0, t: 1 });
    assert.equal(header(early, 'retry-after'), '1');
    server.clock.ms = start + 60_000;
    // Admitted once t has passed; the second request now leaves in 10 s.
    const again = await get(key);
    assert.equal(again.status, 200);
    assert.deepEqual(fields(again), { q: 3, w: 60, r: 0, t: 10 });
  });

  it('on a free 304: r unchanged and t=0 while requests are left; r=0 and t the wait, with no Retry-After, once the key is spent (D21)', async (t) => {
    await world(t);
    const key = await keyLimitedTo(2);
    const ok = await get(key);
    assert.equal(ok.status, 200);
    const etag = header(ok, 'etag')!;
    assert.deepEqual(fields(ok), { q: 2, w: 60, r: 1, t: 0 });
    for (let i = 0; i < 3; i++) {
      const free = await get(key, { headers: { 'if-none-match': etag } });
      assert.equal(free.status, 304);
      assert.equal(header(free, 'ratelimit'), '"key";r=1;t=0', 'a 304 takes nothing');
      assert.equal(header(free, 'ratelimit-policy'), '"key";q=2;w=60');
      limits(free, now());
    }
    server.clock.advance(20_000);
    const spent = await get(key);
    assert.equal(spent.status, 200);
    assert.deepEqual(fields(spent), { q: 2, w: 60, r: 0, t: 40 });
    const free = await get(key, { headers: { 'if-none-match': etag } });
    assert.equal(free.status, 304, 'given even with no request left');
    assert.equal(header(free, 'retry-after'), undefined);
    assert.deepEqual(fields(free), { q: 2, w: 60, r: 0, t: 40 });
    limits(free, now());
    const refused = await get(key);
    assert.equal(refused.status, 429);
    assert.equal(header(refused, 'retry-after'), '40', 'the 304\'s t is the wait a request is told');
  });

  it('on 400, 403 and 404 after the key check, agreeing with X-RateLimit-*; absent exactly where X-RateLimit-* is (401, preflight, unknown host or route, 405)', async (t) => {
    await world(t);
    const key = await keyLimitedTo(10);
    await server.allowOrigin(orgId, 'https://shop.example.com');
    const counted: Array<[number, TestResponse]> = [
      [400, await server.get('/v1/listings?per_page=x', { key })],
      [400, await server.get('/v1/listings/changes?cursor=nonsense', { key })],
      [403, await get(key, { headers: { origin: 'https://evil.example.com' } })],
      [404, await server.get('/v1/listings/b0000000-0000-4000-8000-0000000000ff', { key })],
      [404, await server.get('/v1/listings/not-an-id', { key })],
    ];
    for (const [i, [status, res]] of counted.entries()) {
      assert.equal(res.status, status, res.body);
      const l = limits(res, now(), `status ${status}`);
      assert.deepEqual(fields(res), { q: 10, w: 60, r: 9 - i, t: 0 }, 'each counted once');
      assert.equal(l.remaining, 9 - i);
    }
    const uncounted: Array<[number, TestResponse]> = [
      [401, await server.get('/v1/listings')],
      [401, await server.get('/v1/listings', { key: 'sg_live_nope' })],
      [204, await server.get('/v1/listings', { method: 'OPTIONS', headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'GET' } })],
      [404, await server.get('/v1/listings', { key, host: 'api.nowhere.localhost' })],
      [404, await server.get('/v1/nothing-here', { key })],
      [405, await server.get('/v1/listings', { key, method: 'DELETE' })],
    ];
    for (const [status, res] of uncounted) {
      assert.equal(res.status, status, res.body);
      assertNoLimitHeaders(res, `status ${status}`);
    }
  });
});

describe('RATE_LIMIT_PER_MINUTE sets the default per-key limit (OPERATIONS, D14)', () => {
  let server: TestServer;
  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '5', DASHBOARD_PORT: 'off' });
  }

  it('keys without their own limit get the configured default; a per-key limit overrides it', async (t) => {
    await world(t);
    const org = await server.createAccount();
    const { key } = await server.createKey(org);
    for (let i = 0; i < 5; i++) {
      const res = await server.get('/v1/listings', { key });
      assert.equal(res.status, 200);
      assert.equal(header(res, 'x-ratelimit-limit'), '5');
      assert.equal(header(res, 'x-ratelimit-remaining'), String(4 - i));
    }
    const refused = await server.get('/v1/listings', { key });
    assertError(refused, 429, 'rate_limited');
    assert.equal(header(refused, 'x-ratelimit-remaining'), '0');
    retryAfter(refused);

    const raised = await server.createKey(org);
    await server.service.store.keys.setRateLimit(raised.id, 8);
    for (let i = 0; i < 8; i++) assert.equal((await server.get('/v1/listings', { key: raised.key })).status, 200);
    const res = await server.get('/v1/listings', { key: raised.key });
    assert.equal(res.status, 429);
    assert.equal(header(res, 'x-ratelimit-limit'), '8');
  });
});
