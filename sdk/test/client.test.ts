import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ListingsApiError, ListingsClient, type FetchLike, type Listing } from '@listings-api/sdk';

/**
 * The client's rules with a fake fetch and a fake clock: every retry and error rule, revalidation,
 * hosts (D3), parameters (D7, D23), paging (spec 4.2) and the change feed (D22). No server, no sleeping.
 */

const KEY = 'sg_live_abcdefghijklmnopqrstuvwxyz123456ABCDEF';
const MY_KEY = 'my_live_abcdefghijklmnopqrstuvwxyz123456ABCDEF';

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | Error | 'hang';

function fake(replies: Reply[]) {
  const calls: Array<{ url: string; headers: Record<string, string> }> = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, headers: { ...init.headers } });
    const reply = replies.shift();
    if (reply === undefined) throw new Error(`unexpected request ${url}`);
    if (reply instanceof Error) throw reply;
    if (reply === 'hang') {
      return new Promise<Response>((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
    }
    const body = reply.status === 304 ? null : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    return new Response(body, { status: reply.status, headers: { 'content-type': 'application/json', ...reply.headers } });
  };
  return { fetch, calls };
}

/** A client whose waits are recorded instead of slept; random() is fixed. */
function client(replies: Reply[], options: { random?: number; maxRetries?: number; timeoutMs?: number } = {}) {
  const { fetch, calls } = fake(replies);
  const waits: number[] = [];
  const c = new ListingsClient({
    apiKey: KEY,
    baseUrl: 'https://api.example.com',
    fetch,
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    random: () => options.random ?? 0.5,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      waits.push(ms);
    },
  });
  return { client: c, calls, waits };
}

function listing(n: number, overrides: Partial<Listing> = {}): Listing {
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    building_id: '11111111-1111-4111-8111-111111111111',
    org_id: null,
    title: `Listing ${n}`,
    size_sqft: 1000,
    usage_types: ['Office'],
    price: 5.5,
    price_basis: 'per_sqft_per_month',
    currency: 'SGD',
    is_takeover: false,
    is_featured: false,
    status: 'active',
    expiry_date: null,
    available_from: null,
    min_lease_tenure: null,
    view_count: 0,
    inquiry_count: 0,
    building_name: null,
    street_address: null,
    location: null,
    images: [],
    cover_image_index: 0,
    url: `https://www.example.com/l/${n}`,
    created_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

const page = (items: Listing[], p: number, pages: number, total = items.length) => ({ items, page: p, per_page: 100, total, pages });
const apiError = (status: number, error: string, headers: Record<string, string> = {}) => ({
  status,
  body: { error, message: `${error} happened` },
  headers: { 'x-request-id': `req-${status}`, ...headers },
});
const limitHeaders = (remaining: number) => ({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': String(remaining), 'x-ratelimit-reset': '1790000000' });

describe('ListingsClient: hosts (D3) and options', () => {
  it('takes the host from the key\'s country and apiDomain: https, api.<domain> for sg, api.<cc>.<domain> otherwise', () => {
    assert.equal(new ListingsClient({ apiKey: KEY, apiDomain: 'example.com' }).baseUrl, 'https://api.example.com');
    assert.equal(new ListingsClient({ apiKey: MY_KEY, apiDomain: 'example.com' }).baseUrl, 'https://api.my.example.com');
  });

  it('uses http for a local domain, port included', () => {
    assert.equal(new ListingsClient({ apiKey: KEY, apiDomain: 'localhost:3000' }).baseUrl, 'http://api.localhost:3000');
    assert.equal(new ListingsClient({ apiKey: MY_KEY, apiDomain: 'localhost:3000' }).baseUrl, 'http://api.my.localhost:3000');
  });

  it('uses baseUrl as given (without a trailing slash), whatever the key\'s country', () => {
    assert.equal(new ListingsClient({ apiKey: MY_KEY, baseUrl: 'http://api.localhost:3000/' }).baseUrl, 'http://api.localhost:3000');
    assert.equal(new ListingsClient({ baseUrl: 'https://www.example.com/api' }).baseUrl, 'https://www.example.com/api');
  });

  it('refuses a missing key, a key of no known shape (without echoing it), and a missing apiDomain', () => {
    assert.throws(() => new ListingsClient({}), /needs an apiKey/);
    assert.throws(() => new ListingsClient({ apiKey: 'xx_live_secretsecret', apiDomain: 'example.com' }), (e: Error) => e instanceof TypeError && !e.message.includes('secretsecret'));
    assert.throws(() => new ListingsClient({ apiKey: KEY }), /apiDomain/);
  });
});

describe('ListingsClient: requests', () => {
  it('sends the key as a bearer token and the filters as the API names them (D7, D23)', async () => {
    const { client: c, calls } = client([{ status: 200, body: page([], 1, 1) }]);
    await c.listings.list({ page: 2, perPage: 50, usageType: ['F&B', 'Shared Office'], minSizeSqft: 1000, maxPrice: 1e-7, featured: true, takeover: false, sort: '-price' });
    const url = new URL(calls[0]!.url);
    assert.equal(url.pathname, '/v1/listings');
    assert.equal(calls[0]!.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      page: '2', per_page: '50', usage_type: 'F&B,Shared Office', min_size_sqft: '1000', max_price: '0.0000001', featured: 'true', takeover: 'false', sort: '-price',
    });
    // & encoded, spaces as %20 (D23)
    assert.match(calls[0]!.url, /usage_type=F%26B%2CShared%20Office/);
  });

  it('sends q, near with radius_m, bbox and sort=distance as the API writes them (D26, D28)', async () => {
    const { client: c, calls } = client([{ status: 200, body: page([], 1, 1) }, { status: 200, body: page([], 1, 1) }]);
    await c.listings.list({ q: 'café marina', near: { lat: -1.5, lng: 1e-7 }, radiusM: 2000, sort: 'distance' });
    assert.deepEqual(Object.fromEntries(new URL(calls[0]!.url).searchParams), { q: 'café marina', near: '-1.5,0.0000001', radius_m: '2000', sort: 'distance' });
    await c.listings.list({ bbox: [179.5, -17, -179.5, -16] });
    assert.deepEqual(Object.fromEntries(new URL(calls[1]!.url).searchParams), { bbox: '179.5,-17,-179.5,-16' });
  });

  it('facets asks GET /v1/listings/facets with the selection only: no page, per_page or sort (D27)', async () => {
    const counts = {
      total: 0, usage_types: [], featured: { true: 0, false: 0 }, takeover: { true: 0, false: 0 }, price: [], size_sqft: { min: null, max: null, count: 0 },
    };
    const { client: c, calls } = client([{ status: 200, body: counts }]);
    const params = { usageType: 'Office', q: 'bay', page: 3, sort: 'price' } as Parameters<typeof c.listings.facets>[0];
    assert.deepEqual(await c.listings.facets(params), counts);
    const url = new URL(calls[0]!.url);
    assert.equal(url.pathname, '/v1/listings/facets');
    assert.deepEqual(Object.fromEntries(url.searchParams), { usage_type: 'Office', q: 'bay' });
  });

  it('get encodes the id into the path and returns the bare listing', async () => {
    const { client: c, calls } = client([{ status: 200, body: listing(1) }]);
    assert.deepEqual(await c.listings.get('a/b'), listing(1));
    assert.equal(new URL(calls[0]!.url).pathname, '/v1/listings/a%2Fb');
  });

  it('iterate walks page 1, 2, ... until page equals pages (spec 4.2 rule 1), 100 a page by default', async () => {
    const { client: c, calls } = client([
      { status: 200, body: page([listing(1), listing(2)], 1, 3, 5) },
      { status: 200, body: page([listing(3), listing(4)], 2, 3, 5) },
      { status: 200, body: page([listing(5)], 3, 3, 5) },
    ]);
    const ids: string[] = [];
    for await (const l of c.listings.iterate({ usageType: 'Office' })) ids.push(l.id);
    assert.deepEqual(ids, [1, 2, 3, 4, 5].map((n) => listing(n).id));
    assert.deepEqual(calls.map((call) => new URL(call.url).search), ['?page=1&per_page=100&usage_type=Office', '?page=2&per_page=100&usage_type=Office', '?page=3&per_page=100&usage_type=Office']);
  });

  it('iterate over an empty set makes one request (pages is never 0, D8)', async () => {
    const { client: c, calls } = client([{ status: 200, body: page([], 1, 1, 0) }]);
    for await (const _ of c.listings.iterate()) assert.fail('no listing expected');
    assert.equal(calls.length, 1);
  });

  it('keeps the last body and ETag per URL and reads a 304 as that body (D21)', async () => {
    const { client: c, calls } = client([
      { status: 200, body: listing(1), headers: { etag: '"v1"', ...limitHeaders(59) } },
      { status: 304, headers: { etag: '"v1"', ...limitHeaders(59) } },
      { status: 200, body: listing(1, { title: 'Changed' }), headers: { etag: '"v2"' } },
    ]);
    const first = await c.listings.get(listing(1).id);
    const second = await c.listings.get(listing(1).id);
    assert.equal(calls[0]!.headers['if-none-match'], undefined);
    assert.equal(calls[1]!.headers['if-none-match'], '"v1"');
    assert.deepEqual(second, first);
    assert.notEqual(second, first, 'each read gets its own object, so a caller changing one cannot change the kept copy');
    const third = await c.listings.get(listing(1).id);
    assert.equal(third.title, 'Changed');
    assert.equal(calls[2]!.headers['if-none-match'], '"v1"');
  });

  it('revalidates per URL: another page or filter is another copy', async () => {
    const { client: c, calls } = client([
      { status: 200, body: page([], 1, 1), headers: { etag: '"a"' } },
      { status: 200, body: page([], 2, 1), headers: { etag: '"b"' } },
      { status: 304, headers: { etag: '"a"' } },
    ]);
    await c.listings.list({ page: 1 });
    await c.listings.list({ page: 2 });
    assert.equal((await c.listings.list({ page: 1 })).page, 1);
    assert.deepEqual(calls.map((call) => call.headers['if-none-match']), [undefined, undefined, '"a"']);
  });

  it('exposes the last rate-limit state (D15)', async () => {
    const { client: c } = client([{ status: 200, body: page([], 1, 1), headers: limitHeaders(41) }]);
    assert.equal(c.rateLimit, undefined);
    await c.listings.list();
    assert.deepEqual(c.rateLimit, { limit: 60, remaining: 41, reset: 1790000000 });
  });

  /** The state a client reports after one 200 with these headers, and the Unix seconds around the call. */
  const stateAfter = async (headers: Record<string, string>) => {
    const { client: c } = client([{ status: 200, body: page([], 1, 1), headers }]);
    const before = Math.floor(Date.now() / 1000);
    await c.listings.list();
    return { state: c.rateLimit, before, after: Math.floor(Date.now() / 1000) };
  };
  const ietf = (remaining: number, t: number) => ({ 'ratelimit-policy': '"key";q=60;w=60', 'ratelimit': `"key";r=${remaining};t=${t}` });

  it('reads the IETF RateLimit fields when X-RateLimit-* are not there (D29): limit q, remaining r, reset now + t', async () => {
    const { state, before, after } = await stateAfter(ietf(0, 12));
    assert.ok(state !== undefined);
    assert.equal(state.limit, 60);
    assert.equal(state.remaining, 0);
    assert.ok(state.reset >= before + 12 && state.reset <= after + 12, `reset ${state.reset} is now + 12 s`);
    const now = await stateAfter(ietf(41, 0));
    assert.deepEqual({ ...now.state, reset: undefined }, { limit: 60, remaining: 41, reset: undefined });
    assert.ok(now.state!.reset >= now.before && now.state!.reset <= now.after, 't=0: reset is now');
  });

  it('prefers X-RateLimit-* when both are there, as the API sends them (D15, D29)', async () => {
    const { state } = await stateAfter({ ...limitHeaders(41), ...ietf(7, 30) });
    assert.deepEqual(state, { limit: 60, remaining: 41, reset: 1790000000 });
    // An incomplete or malformed X-RateLimit-* set gives way to the IETF fields.
    for (const partial of [{ 'x-ratelimit-limit': '60' }, { ...limitHeaders(41), 'x-ratelimit-reset': 'soon' }, { ...limitHeaders(41), 'x-ratelimit-remaining': '' }]) {
      const read = await stateAfter({ ...partial, ...ietf(7, 0) });
      assert.deepEqual([read.state?.limit, read.state?.remaining], [60, 7], JSON.stringify(partial));
    }
  });

  it('reads the IETF fields as structured fields: whitespace, tokens, other parameters and policies; the policy with the fewest requests left', async () => {
    const read = async (policy: string, state: string) => (await stateAfter({ 'ratelimit-policy': policy, 'ratelimit': state })).state;
    const extra = await read('"key";q=60;w=60;qu="requests"', '"key" ;r=5;t=0;pk=:cHJvdGVjdA==:');
    assert.equal(extra, undefined, 'no space before a parameter: not a structured field');
    const more = await read('"key";q=60;w=60;qu="requests", "other";q=1.5', ' "key";r=5;t=0;pk=:cHJvdGVjdA==:, ("a" "b");x');
    assert.deepEqual([more?.limit, more?.remaining], [60, 5], 'other parameters, members and an inner list are passed over');
    const noT = await read('"key";q=60', '"key";r=5');
    assert.deepEqual([noT?.limit, noT?.remaining], [60, 5], 'no t: a request is admitted now');
    assert.equal((await read('key;q=10;w=60', 'key;r=3;t=0'))?.remaining, 3, 'a token names the policy as well');
    assert.equal((await read('"burst";q=100;w=1,  "key";q=60;w=60', '"burst";r=90;t=0, "key";r=2;t=0'))?.remaining, 2, 'the policy that holds the client back');
    const chosen = await read('"day";q=1000;w=86400, "key";q=60;w=60', '"key";r=40, "day";r=12;t=0');
    assert.deepEqual([chosen?.limit, chosen?.remaining], [1000, 12]);
    assert.equal((await read('"key";q=60;w=60', '"other";r=1;t=0')), undefined, 'a state of no known policy says nothing');
  });

  it('ignores malformed IETF fields: the state stays what it was (D29)', async () => {
    const malformed: Array<[string, string]> = [
      ['"key";q=60;w=60', ''],
      ['', '"key";r=5;t=0'],
      ['"key";w=60', '"key";r=5;t=0'],
      ['"key";q=60;w=60', '"key";t=0'],
      ['"key";q=60;w=60', '"key";r=-1;t=0'],
      ['"key";q=60;w=60', '"key";r=1.5;t=0'],
      ['"key";q=60;w=60', '"key";r=5;t=?1'],
      ['"key";q=60;w=60', '"key;r=5;t=0'],
      ['"key";q=60;w=60', '"key";r=5;t=0,'],
      ['"key";q=60;w=60', '"key";r=5;t=0 junk'],
      ['"key";q=sixty;w=60', '"key";r=5;t=0'],
      ['"key";Q=60', '"key";r=5;t=0'],
    ];
    for (const [policy, state] of malformed) {
      const headers: Record<string, string> = {};
      if (policy !== '') headers['ratelimit-policy'] = policy;
      if (state !== '') headers['ratelimit'] = state;
      const { client: c } = client([
        { status: 200, body: page([], 1, 1), headers: limitHeaders(41) },
        { status: 200, body: page([], 2, 1), headers },
      ]);
      await c.listings.list({ page: 1 });
      await c.listings.list({ page: 2 });
      assert.deepEqual(c.rateLimit, { limit: 60, remaining: 41, reset: 1790000000 }, `${policy} / ${state}`);
    }
  });

  it('a 429 that carried only the IETF fields reports them on the error (D29)', async () => {
    const { client: c } = client([apiError(429, 'rate_limited', { 'retry-after': '9', ...ietf(0, 9) })], { maxRetries: 0 });
    const error = await c.listings.list().catch((e: unknown) => e);
    assert.ok(error instanceof ListingsApiError);
    assert.equal(error.retryAfter, 9);
    assert.deepEqual([error.rateLimit?.limit, error.rateLimit?.remaining], [60, 0]);
    assert.ok(error.rateLimit!.reset >= Math.floor(Date.now() / 1000) + 8);
  });
});

describe('ListingsClient: errors and retries', () => {
  for (const [status, code] of [[400, 'bad_request'], [401, 'unauthorized'], [403, 'origin_not_allowed'], [404, 'not_found']] as const) {
    it(`${status} ${code} is never retried and carries status, code, message and request id`, async () => {
      const { client: c, calls, waits } = client([apiError(status, code)]);
      const error = await c.listings.get('x').catch((e: unknown) => e);
      assert.ok(error instanceof ListingsApiError);
      assert.equal(error.status, status);
      assert.equal(error.code, code);
      assert.equal(error.message, `${code} happened`);
      assert.equal(error.requestId, `req-${status}`);
      assert.equal(error.retryable, false);
      assert.equal(calls.length, 1);
      assert.deepEqual(waits, []);
    });
  }

  it('429 waits Retry-After plus a little jitter, then retries', async () => {
    const { client: c, calls, waits } = client(
      [apiError(429, 'rate_limited', { 'retry-after': '7', ...limitHeaders(0) }), apiError(429, 'rate_limited', { 'retry-after': '2' }), { status: 200, body: listing(1), headers: limitHeaders(0) }],
      { random: 0.4 },
    );
    assert.equal((await c.listings.get('x')).id, listing(1).id);
    assert.equal(calls.length, 3);
    assert.deepEqual(waits, [7000 + 100, 2000 + 100]);
  });

  it('429 jitter stays small: at most a quarter second over Retry-After', async () => {
    const { client: c, waits } = client([apiError(429, 'rate_limited', { 'retry-after': '1' }), { status: 200, body: listing(1) }], { random: 0.999999 });
    await c.listings.get('x');
    assert.ok(waits[0]! >= 1000 && waits[0]! <= 1250, String(waits[0]));
  });

  it('429 past maxRetries (default 3) throws rate_limited with retryAfter', async () => {
    const storm = Array.from({ length: 4 }, () => apiError(429, 'rate_limited', { 'retry-after': '3', ...limitHeaders(0) }));
    const { client: c, calls, waits } = client(storm, { random: 0 });
    const error = await c.listings.list().catch((e: unknown) => e);
    assert.ok(error instanceof ListingsApiError);
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.retryAfter, 3);
    assert.deepEqual(error.rateLimit, { limit: 60, remaining: 0, reset: 1790000000 });
    assert.equal(calls.length, 4);
    assert.deepEqual(waits, [3000, 3000, 3000]);
  });

  it('maxRetries: 0 retries nothing', async () => {
    const { client: c, calls } = client([apiError(429, 'rate_limited', { 'retry-after': '3' })], { maxRetries: 0 });
    await assert.rejects(c.listings.list(), { code: 'rate_limited' });
    assert.equal(calls.length, 1);
  });

  it('5xx retries with exponential backoff and full jitter (random x min(10 s, 500 ms x 2^attempt))', async () => {
    const { client: c, waits } = client([apiError(500, 'internal_error'), apiError(502, 'internal_error'), apiError(503, 'internal_error'), { status: 200, body: listing(1) }], { random: 0.5 });
    await c.listings.get('x');
    assert.deepEqual(waits, [250, 500, 1000]);
  });

  it('full jitter means any wait from 0 up to the cap', async () => {
    const zero = client([apiError(500, 'internal_error'), { status: 200, body: listing(1) }], { random: 0 });
    await zero.client.listings.get('x');
    assert.deepEqual(zero.waits, [0]);
    const errors = Array.from({ length: 8 }, () => apiError(500, 'internal_error'));
    const capped = client(errors, { random: 0.999, maxRetries: 7 });
    await assert.rejects(capped.client.listings.get('x'), { status: 500, code: 'internal_error' });
    assert.deepEqual(capped.waits, [500, 1000, 2000, 4000, 8000, 10_000, 10_000].map((ms) => Math.round(ms * 0.999)));
  });

  it('a 5xx without the API\'s JSON (a proxy\'s HTML page) is internal_error, and retried', async () => {
    const { client: c, calls } = client([{ status: 502, body: '<html>Bad gateway</html>', headers: { 'content-type': 'text/html' } }, { status: 200, body: listing(1) }]);
    await c.listings.get('x');
    assert.equal(calls.length, 2);
  });

  it('a 4xx or a 200 that is not the API\'s JSON is invalid_response, not retried', async () => {
    const html = client([{ status: 200, body: '<html>captive portal</html>' }]);
    await assert.rejects(html.client.listings.get('x'), { code: 'invalid_response', status: 200 });
    assert.equal(html.calls.length, 1);
  });

  it('network errors retry with backoff, then throw network_error (status 0) with the cause', async () => {
    const failure = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:3000') });
    const { client: c, calls, waits } = client([failure, failure, failure, failure], { random: 0.5 });
    const error = await c.listings.list().catch((e: unknown) => e);
    assert.ok(error instanceof ListingsApiError);
    assert.equal(error.code, 'network_error');
    assert.equal(error.status, 0);
    assert.equal(error.cause, failure);
    assert.match(error.message, /ECONNREFUSED/);
    assert.equal(calls.length, 4);
    assert.deepEqual(waits, [250, 500, 1000]);
  });

  it('a network error then an answer: the answer wins', async () => {
    const { client: c } = client([new TypeError('fetch failed'), { status: 200, body: listing(1) }]);
    assert.equal((await c.listings.get('x')).id, listing(1).id);
  });

  it('an attempt past timeoutMs is a timeout, retried like a network error', async () => {
    const { client: c, calls } = client(['hang', 'hang'], { timeoutMs: 20, maxRetries: 1 });
    await assert.rejects(c.listings.list(), { code: 'timeout', status: 0 });
    assert.equal(calls.length, 2);
  });

  it('the caller\'s signal aborts a wait before a retry: the call rejects with its reason, and nothing more is sent', async () => {
    const { fetch, calls } = fake([apiError(429, 'rate_limited', { 'retry-after': '30' }), { status: 200, body: listing(1) }]);
    const c = new ListingsClient({ apiKey: KEY, baseUrl: 'https://api.example.com', fetch }); // the real timer
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('page closed')), 30);
    await assert.rejects(c.listings.get('x', { signal: controller.signal }), /page closed/);
    assert.ok(Date.now() - started < 5000, 'did not wait the 30 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.length, 1);
  });

  it('the caller\'s signal aborts a request in flight', async () => {
    const { client: c } = client(['hang']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 10);
    await assert.rejects(c.listings.list({}, { signal: controller.signal }), /stop/);
  });

  it('an already aborted signal sends nothing', async () => {
    const { client: c, calls } = client([{ status: 200, body: listing(1) }]);
    await assert.rejects(c.listings.get('x', { signal: AbortSignal.abort(new Error('no')) }), /no/);
    assert.equal(calls.length, 0);
  });
});

describe('ListingsClient: the change feed (D22)', () => {
  it('changes sends cursor and limit', async () => {
    const { client: c, calls } = client([{ status: 200, body: { items: [], next_cursor: 'c1', has_more: false } }]);
    await c.listings.changes({ cursor: 'c0', limit: 500 });
    assert.equal(new URL(calls[0]!.url).search, '?cursor=c0&limit=500');
  });

  it('sync puts upserts and deletes removals in order, follows has_more, and ends on an answer with nothing new', async () => {
    const { client: c, calls } = client([
      { status: 200, body: { items: [{ type: 'listing.upserted', id: listing(1).id, at: 'a', listing: listing(1) }, { type: 'listing.upserted', id: listing(2).id, at: 'b', listing: listing(2) }], next_cursor: 'c1', has_more: true } },
      { status: 200, body: { items: [{ type: 'listing.removed', id: listing(1).id, at: 'c' }, { type: 'listing.future', id: 'x', at: 'd' }], next_cursor: 'c2', has_more: false } },
      { status: 200, body: { items: [], next_cursor: 'c2', has_more: false }, headers: { etag: '"c2"' } },
    ]);
    const store = new Map<string, Listing>();
    const cursor = await c.listings.sync({ put: async (l) => void store.set(l.id, l), delete: (id) => store.delete(id) });
    assert.equal(cursor, 'c2');
    assert.deepEqual([...store.keys()], [listing(2).id]);
    // The last poll is the one whose ETag makes the next sync a free 304.
    assert.deepEqual(calls.map((call) => new URL(call.url).search), ['?limit=1000', '?cursor=c1&limit=1000', '?cursor=c2&limit=1000']);
  });

  it('sync polls once more after an answer that moved the cursor, never more (a busy feed does not keep it from returning)', async () => {
    const upsert = (n: number) => ({ type: 'listing.upserted', id: listing(n).id, at: 'a', listing: listing(n) });
    const { client: c, calls } = client([
      { status: 200, body: { items: [upsert(1)], next_cursor: 'c1', has_more: false } },
      { status: 200, body: { items: [upsert(2)], next_cursor: 'c2', has_more: false } },
    ]);
    const store = new Map<string, Listing>();
    assert.equal(await c.listings.sync(store, { cursor: 'c0', limit: undefined }), 'c2');
    assert.equal(calls.length, 2);
    assert.equal(store.size, 2);
  });

  it('sync with a state store: the cursor and the caught-up answer\'s ETag carry over to another client (another run)', async () => {
    const state = new Map<string, string>();
    const body = { items: [], next_cursor: 'c1', has_more: false };
    const first = client([
      { status: 200, body: { items: [{ type: 'listing.removed', id: listing(1).id, at: 'a' }], next_cursor: 'c1', has_more: false } },
      { status: 200, body, headers: { etag: '"e1"' } },
    ]);
    assert.equal(await first.client.listings.sync(new Map(), { state }), 'c1');
    assert.deepEqual([...state.keys()], ['listings-sync:https://api.example.com']);
    assert.ok(!state.get('listings-sync:https://api.example.com')!.includes('sg_live_'), 'the key is never stored');

    const second = client([{ status: 304, headers: { etag: '"e1"' } }]);
    assert.equal(await second.client.listings.sync(new Map(), { state, cursor: undefined }), 'c1');
    assert.equal(second.calls[0]!.headers['if-none-match'], '"e1"');
    assert.equal(new URL(second.calls[0]!.url).search, '?cursor=c1&limit=1000');

    // Another stateKey is another mirror; a cursor and a state together are a mistake.
    const third = client([{ status: 200, body: { items: [], next_cursor: 'x1', has_more: false }, headers: { etag: '"x"' } }, { status: 200, body: { items: [], next_cursor: 'x1', has_more: false }, headers: { etag: '"x"' } }]);
    assert.equal(await third.client.listings.sync(new Map(), { state, stateKey: 'other' }), 'x1');
    assert.equal(third.calls[0]!.headers['if-none-match'], undefined);
    await assert.rejects(third.client.listings.sync(new Map(), { state, cursor: 'c1' }), TypeError);
    state.set('bad', 'not json');
    await assert.rejects(third.client.listings.sync(new Map(), { state, stateKey: 'bad' }), /not a sync state/);
  });

  it('a poll with nothing new is a 304 read as the kept answer (free, D21)', async () => {
    const body = { items: [], next_cursor: 'c2', has_more: false };
    const { client: c, calls } = client([{ status: 200, body, headers: { etag: '"f"' } }, { status: 304, headers: { etag: '"f"' } }]);
    assert.equal(await c.listings.sync(new Map(), { cursor: 'c2' }), 'c2');
    assert.equal(await c.listings.sync(new Map(), { cursor: 'c2' }), 'c2');
    assert.equal(calls[1]!.headers['if-none-match'], '"f"');
  });
});

describe('types from openapi.json', () => {
  it('src/openapi.ts is what scripts/generate-types.mjs makes of openapi.json', () => {
    const script = fileURLToPath(new URL('../scripts/generate-types.mjs', import.meta.url));
    const result = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
  });

  it('the parameter rules come from standard OpenAPI constructs: $ref, style, explode, enum, bounds; anything else is refused', async () => {
    const { generate } = (await import(new URL('../scripts/generate-types.mjs', import.meta.url).href)) as { generate(document: unknown): string };
    const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'));
    const rulesOf = (text: string) => /export const LIST_LISTINGS_RULES = \{\n([\s\S]*?)\n\}/.exec(text)![1]!;
    const rules = rulesOf(generate(document));
    assert.match(rules, /page: \{ type: 'integer', minimum: 1, maximum: 2147483647 \}/);
    assert.match(rules, /usage_type: \{ type: 'array', separator: ',', minItems: 1, items: \{ type: 'string', enum: \['Office', 'Shared Office', 'F&B', /);
    // The names as a schema of their own, referenced (as route schemas often are): the same rules.
    const moved = structuredClone(document);
    moved.components.schemas.UsageName = moved.components.parameters.usage_type.schema.items;
    moved.components.parameters.usage_type.schema.items = { $ref: '#/components/schemas/UsageName' };
    const text = generate(moved);
    assert.equal(rulesOf(text), rules);
    assert.match(text, /export type UsageName = 'Office' \| 'Shared Office' \| /);
    // The taxonomy as components.schemas.UsageType, referenced by the parameter and by
    // Listing.usage_types: the listing's field is typed by the union too, declared once.
    const named = structuredClone(document);
    named.components.schemas.UsageType = named.components.parameters.usage_type.schema.items;
    named.components.parameters.usage_type.schema.items = { $ref: '#/components/schemas/UsageType' };
    named.components.schemas.Listing.properties.usage_types.items = { $ref: '#/components/schemas/UsageType' };
    const namedText = generate(named);
    assert.equal(rulesOf(namedText), rules);
    assert.match(namedText, /usage_types: UsageType\[\];/);
    assert.equal(namedText.match(/export type UsageType = /g)!.length, 1);
    assert.match(namedText, /export type UsageType = 'Office' \| 'Shared Office' \| /);
    // Another delimiter style is another separator.
    const piped = structuredClone(document);
    piped.components.parameters.usage_type.style = 'pipeDelimited';
    assert.match(rulesOf(generate(piped)), /usage_type: \{ type: 'array', separator: '\|'/);
    // What the proxy could not check breaks the generation rather than being checked wrongly.
    const exploded = structuredClone(document);
    exploded.components.parameters.usage_type.explode = true;
    assert.throws(() => generate(exploded), /usage_type: only style form/);
    const multiple = structuredClone(document);
    multiple.components.parameters.page.schema.multipleOf = 2;
    assert.throws(() => generate(multiple), /page: the proxy cannot check the keyword "multipleOf"/);
  });
});
