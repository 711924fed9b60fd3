import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { sql } from '#kysely';
import type { RequestOptions, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, rawRequest } from './helpers.js';
import { until } from '../support/until.js';

const METHODS = ['POST', 'PUT', 'DELETE', 'PATCH'];

describe('errors (spec 7; D5, D6)', () => {
  let server: TestServer;
  let orgId: string;
  let key: string;
  let limitedKey: string;
  const listingId = 'd0000000-0000-4000-8000-000000000001';
  const missingId = 'd0000000-0000-4000-8000-0000000000ff';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were two thirds of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount();
    key = (await server.createKey(orgId)).key;
    await server.addListings(orgId, [{ id: listingId }]);
    await server.allowOrigin(orgId, 'https://shop.example.com');
    // A key whose limit is used up for the rest of this file (the clock never moves here).
    const limited = await server.createKey(orgId);
    limitedKey = limited.key;
    await server.service.store.keys.setRateLimit(limited.id, 1);
    assert.equal((await server.get('/v1/listings', { key: limitedKey })).status, 200);
    assert.equal((await server.get('/v1/listings', { key: limitedKey })).status, 429);
  }

  it('unknown routes give 404 not_found as JSON, with or without a key (D6)', async (t) => {
    await world(t);
    for (const path of ['/', '/v1', '/v1/', '/v2/listings', '/v1/listing', '/listings', '/listings/x', '/v1/listings/a/b', '/V1/LISTINGS', '/favicon.ico', '/v1/listings/x/y/z?page=1']) {
      assertError(await server.get(path, { key }), 404, 'not_found', path);
      assertError(await server.get(path), 404, 'not_found', `${path} without key`);
    }
  });

  it('POST, PUT, DELETE and PATCH on both paths give 405 method_not_allowed with Allow, before any key check (D5, D6)', async (t) => {
    await world(t);
    for (const path of ['/v1/listings', `/v1/listings/${listingId}`, '/v1/listings?page=2', '/v1/listings/not-a-uuid']) {
      for (const method of METHODS) {
        for (const options of [{ key }, {}, { key: 'sg_live_garbage' }, { key: limitedKey }] as RequestOptions[]) {
          const res = await server.get(path, { ...options, method });
          assertError(res, 405, 'method_not_allowed', `${method} ${path}`);
          const allow = (header(res, 'allow') ?? '').split(',').map((m) => m.trim());
          assert.deepEqual([...allow].sort(), ['GET', 'HEAD', 'OPTIONS'], `${method} ${path} Allow`);
          assert.equal(header(res, 'x-ratelimit-limit'), undefined, '405 is before the limiter');
        }
      }
    }
  });

  it('the unknown-route 404 names every endpoint the API serves, the change feed included (issue 29 item 10)', async (t) => {
    await world(t);
    const res = await server.get('/nope', { key });
    assertError(res, 404, 'not_found');
    for (const path of ['GET /v1/listings', 'GET /v1/listings/{id}', 'GET /v1/listings/changes']) assert.ok(res.json.message.includes(path), `${path} in ${res.json.message}`);
  });

  it('a path GET answers (a trailing slash: the detail route with an empty id) is 405 for other methods, like any other id (D5, issue 29 item 10)', async (t) => {
    await world(t);
    assertError(await server.get('/v1/listings/', { key }), 404, 'not_found', 'GET: an id the key cannot see (D11)');
    for (const method of METHODS) {
      const res = await server.get('/v1/listings/', { key, method });
      assertError(res, 405, 'method_not_allowed', `${method} /v1/listings/`);
      assert.equal(header(res, 'allow'), 'GET, HEAD, OPTIONS');
    }
    assertError(await server.get('/v1/listings/changes/', { key, method: 'DELETE' }), 404, 'not_found', 'a path no route serves stays 404');
  });

  it('the route stage is decided before any body is read or parsed: 405 on a known path, 404 on an unknown one (D5, D6, issue 29 item 10)', async (t) => {
    await world(t);
    const send = (method: string, path: string, type: string, body: string | Buffer) =>
      rawRequest(server.port, Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: api.localhost\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`), Buffer.from(body)]));
    const big = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const cases: Array<[string, string, string, string | Buffer]> = [
      ['POST', '/v1/listings', 'application/json', '{bad'],
      ['PUT', `/v1/listings/${listingId}`, 'application/json', '{"unterminated'],
      ['DELETE', '/v1/listings', 'application/json', big],
      ['DELETE', '/v1/listings', 'application/octet-stream', big],
      ['QUERY', '/v1/listings', 'text/plain', 'page=1'],
      ['PATCH', '/v1/listings/changes', 'application/x-www-form-urlencoded', 'a=%zz'],
    ];
    for (const [method, path, type, body] of cases) {
      const res = await send(method, path, type, body);
      assert.equal(res.status, 405, `${method} ${path} ${type}: ${res.body}`);
      assert.equal(res.json?.error, 'method_not_allowed');
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    }
    // A method the API has no route for at all, without a body either.
    const query = await rawRequest(server.port, `QUERY /v1/listings HTTP/1.1\r\nHost: api.localhost\r\nConnection: close\r\n\r\n`);
    assert.equal(query.status, 405, query.body);
    for (const [method, type, body] of [['POST', 'application/json', '{bad'], ['DELETE', 'application/json', big], ['QUERY', 'text/plain', 'x']] as const) {
      const res = await send(method, '/v2/nothing', type, body);
      assert.equal(res.status, 404, `${method} unknown path: ${res.body}`);
      assert.equal(res.json?.error, 'not_found');
    }
  });

  it('a 405 is answered even when the request has a body', async (t) => {
    await world(t);
    const body = JSON.stringify({ title: 'x' });
    const res = await rawRequest(
      server.port,
      `POST /v1/listings HTTP/1.1\r\nHost: api.localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.equal(res.status, 405);
    assert.match(res.headers['content-type'] ?? '', /^application\/json\b/);
    assert.equal(res.json.error, 'method_not_allowed');
    assert.ok(res.headers.allow);
  });

  it('a malformed percent-encoding in the path is routed like any path: D5 route, then the key (401), then D11 (404), never a 400 before the key', async (t) => {
    await world(t);
    for (const path of ['/v1/listings/%E0%A4%A', '/v1/listings/%', '/v1/listings/%zz', '/v1/listings/%ff', '/v1/listings/%E0%A4%A?page=1']) {
      assertError(await server.get(path, { key }), 404, 'not_found', path);
      assertError(await server.get(path), 401, 'unauthorized', `${path} without key`);
    }
    assertError(await server.get('/v2/%zz/listings', { key }), 404, 'not_found');
    // A malformed query string is a malformed parameter: 400 once the key is checked.
    assertError(await server.get('/v1/listings?page=%zz', { key }), 400, 'bad_request');
    assertError(await server.get('/v1/listings?page=%E0%A4%A', { key }), 400, 'bad_request');
    assertError(await server.get('/v1/listings?page=%zz'), 401, 'unauthorized');
    // Free text too: a broken `q` is refused naming it, not searched for what its raw text spells.
    for (const path of ['/v1/listings?q=%E0%A4%A', '/v1/listings?q=caf%C3', '/v1/listings/facets?q=%ff', '/v1/listings?q=office&bbox=%ff']) {
      const res = await server.get(path, { key });
      assertError(res, 400, 'bad_request', path);
      assert.match(res.json.message, path.includes('bbox') ? /"bbox" is not valid percent-encoded UTF-8/ : /"q" is not valid percent-encoded UTF-8/, path);
    }
    assert.equal((await server.get('/v1/listings?q=50%25', { key })).status, 200, 'a "%" sent as %25');
    assert.equal((await server.get('/v1/listings?q=caf%C3%A9&utm_source=%ff', { key })).status, 200, 'a name the endpoint does not read is not checked');
  });

  it('an error never echoes more than a short, redacted excerpt of the path (issue 8, item 9)', async (t) => {
    await world(t);
    const long = `/v2/${'x'.repeat(1025)}${key}`;
    const res = await server.get(long, { key });
    assertError(res, 404, 'not_found');
    // The path is echoed as a short excerpt; the rest of the message names the endpoints served.
    const echoed = /^No route GET (.*)\. The API serves /.exec(res.json.message)?.[1];
    assert.ok(echoed !== undefined && echoed.length <= 100, `the path echoed in ${JSON.stringify(res.json.message)}`);
    assert.ok(!res.body.includes('x'.repeat(100)));
    const withKey = await server.get(`/v2/${key}`, { key });
    assertError(withKey, 404, 'not_found');
    assert.ok(!withKey.body.includes(key.slice(8)), 'the key is redacted from the echoed path (D20)');
    const badId = await server.get(`/v1/listings/%${'a'.repeat(1025)}`, { key });
    assertError(badId, 404, 'not_found');
    assert.ok(badId.body.length < 300, `body of ${badId.body.length} bytes`);
  });

  it('a malformed HTTP request and oversized headers get a JSON error (D6)', async (t) => {
    await world(t);
    const garbage = await rawRequest(server.port, 'THIS IS NOT HTTP\r\n\r\n');
    assert.equal(garbage.status, 400);
    assert.match(garbage.headers['content-type'] ?? '', /^application\/json\b/);
    assert.equal(garbage.json.error, 'bad_request');
    assert.equal(typeof garbage.json.message, 'string');

    const big = await rawRequest(server.port, `GET /v1/listings HTTP/1.1\r\nHost: api.localhost\r\nAuthorization: Bearer ${key}\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`);
    assert.equal(big.status, 431);
    assert.match(big.headers['content-type'] ?? '', /^application\/json\b/);
    assert.equal(big.json.error, 'bad_request');
    assert.equal(typeof big.json.message, 'string');

    // A request line over Node's header limit is the URL's fault: 414, as a shorter overlong URL (issue 40 item 2).
    const longUrl = await server.get(`/v1/listings?x=${'a'.repeat(70 * 1024)}`, { key });
    assert.equal(longUrl.status, 414);
    assert.match(header(longUrl, 'content-type') ?? '', /^application\/json\b/);
    assert.equal(longUrl.json.error, 'bad_request');

    // The server still answers normally afterwards.
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
  });

  it('every error code of the spec table is sent with its status (spec 7)', async (t) => {
    await world(t);
    const seen = new Map<number, string>();
    const record = async (pending: ReturnType<TestServer['get']>) => {
      const res = await pending;
      assert.match(header(res, 'content-type') ?? '', /^application\/json\b/, String(res.status));
      seen.set(res.status, res.json.error);
    };
    await record(server.get('/v1/listings?page=x', { key }));
    await record(server.get('/v1/listings'));
    await record(server.get('/v1/listings', { key, headers: { origin: 'https://evil.example.com' } }));
    await record(server.get(`/v1/listings/${missingId}`, { key }));
    await record(server.get('/v1/listings', { key: limitedKey }));
    await record(server.get('/v1/listings', { key, method: 'PUT' }));
    assert.deepEqual(Object.fromEntries(seen), {
      400: 'bad_request',
      401: 'unauthorized',
      403: 'origin_not_allowed',
      404: 'not_found',
      405: 'method_not_allowed',
      429: 'rate_limited',
    });
  });

  describe('D5 order of checks, pairwise (first failure wins)', () => {
    const evil = { origin: 'https://evil.example.com' };

    it('404 route before 401', async (t) => {
      await world(t);
      assertError(await server.get('/v1/nothing'), 404, 'not_found');
      assertError(await server.get('/v1/nothing', { key: 'sg_live_bad' }), 404, 'not_found');
    });

    it('405 before 401 and before 429', async (t) => {
      await world(t);
      assertError(await server.get('/v1/listings', { method: 'POST' }), 405, 'method_not_allowed');
      assertError(await server.get('/v1/listings', { method: 'POST', key: limitedKey }), 405, 'method_not_allowed');
    });

    it('401 before 429, 403, 400 and 404 listing', async (t) => {
      await world(t);
      // The limited key sent to another country's host: untrusted there, so 401 rather than 429.
      assertError(await server.get('/v1/listings', { key: limitedKey, host: 'api.my.localhost' }), 401, 'unauthorized');
      assertError(await server.get('/v1/listings?page=x', { key: 'sg_live_bad', headers: evil }), 401, 'unauthorized');
      assertError(await server.get('/v1/listings?page=x'), 401, 'unauthorized');
      assertError(await server.get(`/v1/listings/${missingId}`), 401, 'unauthorized');
      assertError(await server.get('/v1/listings/not-a-uuid', { headers: evil }), 401, 'unauthorized');
    });

    it('429 before 403, 400 and 404 listing', async (t) => {
      await world(t);
      assertError(await server.get('/v1/listings', { key: limitedKey, headers: evil }), 429, 'rate_limited');
      assertError(await server.get('/v1/listings?page=0', { key: limitedKey }), 429, 'rate_limited');
      assertError(await server.get(`/v1/listings/${missingId}`, { key: limitedKey }), 429, 'rate_limited');
      assertError(await server.get('/v1/listings?page=0', { key: limitedKey, headers: evil }), 429, 'rate_limited');
    });

    it('403 before 400 and 404 listing', async (t) => {
      await world(t);
      assertError(await server.get('/v1/listings?page=abc&per_page=0', { key, headers: evil }), 403, 'origin_not_allowed');
      assertError(await server.get(`/v1/listings/${missingId}`, { key, headers: evil }), 403, 'origin_not_allowed');
      assertError(await server.get('/v1/listings/not-a-uuid', { key, headers: { origin: 'null' } }), 403, 'origin_not_allowed');
    });

    it('400 before 200; and a registered origin passes on to the parameter check', async (t) => {
      await world(t);
      assertError(await server.get('/v1/listings?page=abc', { key, headers: { origin: 'https://shop.example.com' } }), 400, 'bad_request');
      // The detail endpoint takes no query parameters, so 400 and 404-listing cannot meet on one
      // request: page/per_page there are unknown parameters, ignored (D7).
      assertError(await server.get(`/v1/listings/${missingId}?page=abc`, { key }), 404, 'not_found');
      assert.equal((await server.get(`/v1/listings/${listingId}?page=abc`, { key })).status, 200);
    });
  });
});

describe('500 internal_error (spec 7, D6)', () => {
  let server: TestServer;
  let warmKey: string;
  let key: string;
  const listingId = 'e0000000-0000-4000-8000-000000000001';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were two thirds of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    const warm = await server.createAccount();
    warmKey = (await server.createKey(warm)).key;
    const org = await server.createAccount();
    key = (await server.createKey(org)).key;
    await server.addListings(org, [{ id: listingId }]);
  }

  it('a real database failure gives 500 internal_error as JSON without a stack trace or internals', async (t) => {
    await world(t);
    assert.equal((await server.get('/v1/listings', { key: warmKey })).status, 200);
    const { store } = server.service;
    // Under a tenant whose listings this process has not read yet, so nothing of it is in memory.
    await sql`drop table listings`.execute(store.db);
    for (const path of ['/v1/listings', '/v1/listings?page=2&per_page=5', `/v1/listings/${listingId}`]) {
      const res = await server.get(path, { key });
      assertError(res, 500, 'internal_error', path);
      assert.deepEqual(Object.keys(res.json).sort(), ['error', 'message']);
      assert.doesNotMatch(res.body, /\bat .*\.(js|ts)|node:internal|SqliteError|no such table|relation .* does not exist|listings\b.*table|stack/i, 'no internals');
      assert.ok(header(res, 'x-request-id'));
      // The rate-limit headers are there: the request passed the 401 stage (D15).
      assert.ok(header(res, 'x-ratelimit-limit'));
    }
    // The failure is logged for the operator: the request's line, with its id (not sent to the
    // client) and status; and the database's outage, once, as a warning with the error's message
    // (issue 30 item 5: not an error line with a stack trace per request).
    const failing = await server.get('/v1/listings?page=3', { key });
    const reqId = header(failing, 'x-request-id');
    await new Promise((r) => setImmediate(r));
    const lines = server.logs.lines.filter((l) => l.reqId === reqId);
    assert.ok(lines.some((l) => l.status === 500), 'the request line');
    const outage = () => server.logs.lines.filter((l) => l.level === 40 && /^database unavailable/.test(String(l.msg)));
    await until(() => outage().length > 0, { what: 'the outage warning', timeoutMs: 5000 });
    assert.equal(outage().length, 1);
    assert.match(String(outage()[0]!.error), /listings/);
    // /healthz still answers: the process is alive.
    assert.equal((await server.get('/healthz')).status, 200);
  });
});
