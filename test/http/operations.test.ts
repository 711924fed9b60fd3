import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { generateKey } from '../../src/auth/key-format.js';
import { runCli } from '../support/cli.js';
import { startTestServer, type RequestOptions, type TestResponse, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, logLinesOf, rawRequest } from './helpers.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;
/** The fields of every request line (issue 30 item 5), in their order, between pino's own and `msg`. */
const LINE_FIELDS = ['reqId', 'method', 'route', 'path', 'status', 'ms', 'key_prefix', 'client_address', 'host', 'country', 'origin', 'key_id', 'account_id', 'error', 'reason'];

describe('operations: request ids, logs, health, HEAD (D19, D20)', () => {
  let server: TestServer;
  let orgId: string;
  let key: string;
  const listingId = 'f0000000-0000-4000-8000-000000000001';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // The serving processes' logger: request lines from the template of core/logger.ts (D19, D20).
    server = await freshServer(t, {}, { servingLogger: true });
    orgId = await server.createAccount();
    key = (await server.createKey(orgId)).key;
    await server.addListings(orgId, [{ id: listingId }]);
    await server.allowOrigin(orgId, 'https://shop.example.com');
  }

  /** Requests of every kind of outcome. */
  const variety = (): Array<[string, string, RequestOptions]> => [
    ['200 list', '/v1/listings', { key }],
    ['200 detail', `/v1/listings/${listingId}`, { key }],
    ['200 browser', '/v1/listings', { key, headers: { origin: 'https://shop.example.com' } }],
    ['400', '/v1/listings?page=abc', { key }],
    ['401', '/v1/listings', {}],
    ['401 wrong country', '/v1/listings', { key, host: 'api.my.localhost' }],
    ['403', '/v1/listings', { key, headers: { origin: 'https://evil.example.com' } }],
    ['404 listing', '/v1/listings/f0000000-0000-4000-8000-0000000000ff', { key }],
    ['404 malformed id', '/v1/listings/nope', { key }],
    ['404 route', '/nothing/here', {}],
    ['404 host', '/v1/listings', { key, host: 'api.xx.localhost' }],
    ['405', '/v1/listings', { key, method: 'DELETE' }],
    ['204 preflight', '/v1/listings', { method: 'OPTIONS', headers: { origin: 'https://x.example.com', 'access-control-request-method': 'GET' } }],
    ['HEAD', '/v1/listings', { key, method: 'HEAD' }],
    ['healthz', '/healthz', {}],
    ['readyz', '/readyz', {}],
  ];

  it('D19: every response carries an X-Request-Id, unique per request, equal to reqId in the one log line of that request', async (t) => {
    await world(t);
    const ids = new Set<string>();
    for (const [name, path, options] of variety()) {
      const res = await server.get(path, options);
      const id = header(res, 'x-request-id');
      assert.ok(id !== undefined, `${name}: X-Request-Id`);
      assert.match(id, REQUEST_ID, name);
      assert.ok(!ids.has(id), `${name}: a new id`);
      ids.add(id);
      if (path === '/healthz' || path === '/readyz') {
        // Health checks are logged at debug (issue 30 item 5): nothing at LOG_LEVEL=info.
        await logLinesOf(server, id);
        assert.equal(server.logs.lines.filter((l) => l.reqId === id).length, 0, `${name}: no line at info`);
        continue;
      }
      const lines = await logLinesOf(server, id);
      assert.equal(lines.length, 1, `${name}: exactly one log line for ${id}: ${JSON.stringify(lines)}`);
      const line = lines[0]!;
      assert.equal(line.status, res.status, name);
      assert.equal(line.method, options.method ?? 'GET', name);
      assert.equal(line.path, path.split('?')[0], name);
      // The API's lines come from core/logger.ts's template: pino's fields, in pino's order.
      assert.deepEqual(Object.keys(line), ['level', 'time', 'pid', 'hostname', ...LINE_FIELDS, 'msg'], name);
      assert.equal(line.client_address, '127.0.0.1', name);
      assert.equal(line.level, 30, name);
      assert.equal(typeof line.ms, 'number', name);
    }
  });

  it('issue 30 item 5: each field of the line, for a 200, a 401 on a revoked key and on another country\'s, a 403, each kind of 404, a 400, a 405 and requests answered outside the app', async (t) => {
    await world(t);
    const logged = await server.createKey(orgId, 'sg', 'logged');
    const revoked = await server.createKey(orgId, 'sg', 'revoked for the log');
    const cli = runCli(['key', 'revoke', revoked.id, '--json'], { DATABASE_URL: server.databaseUrl });
    assert.equal(cli.status, 0, cli.stderr);
    const ofKey = (k: { id: string; key: string }) => ({ key_id: k.id, account_id: orgId, key_prefix: k.key.slice(0, 12) });
    const noKey = { key_id: null, account_id: null, key_prefix: null };
    const sg = { host: 'api.localhost', country: 'sg' };
    const ok = { error: null, reason: null };
    const cases: Array<[string, string, RequestOptions, Record<string, unknown>]> = [
      ['200', '/v1/listings', { key: logged.key }, { status: 200, route: '/v1/listings', ...sg, origin: null, ...ofKey(logged), ...ok }],
      ['200 detail, from a browser', `/v1/listings/${listingId}`, { key: logged.key, headers: { origin: 'https://shop.example.com' } },
        { status: 200, route: '/v1/listings/:id', ...sg, origin: 'https://shop.example.com', ...ofKey(logged), ...ok }],
      ['401 revoked key', '/v1/listings', { key: revoked.key }, { status: 401, route: '/v1/listings', ...sg, ...ofKey(revoked), error: 'unauthorized', reason: 'revoked_key' }],
      ['401 another country\'s host', '/v1/listings', { key: logged.key, host: 'api.my.localhost' },
        { status: 401, host: 'api.my.localhost', country: 'my', ...ofKey(logged), error: 'unauthorized', reason: 'wrong_country' }],
      ['401 unknown key', '/v1/listings', { key: generateKey('sg') }, { status: 401, ...sg, ...noKey, error: 'unauthorized', reason: 'unknown_key' }],
      ['401 malformed key', '/v1/listings', { key: `${logged.key.slice(0, -1)}${logged.key.endsWith('a') ? 'b' : 'a'}` },
        { status: 401, ...sg, ...noKey, error: 'unauthorized', reason: 'malformed_key' }],
      ['401 no key', '/v1/listings', {}, { status: 401, ...sg, ...noKey, error: 'unauthorized', reason: 'missing_key' }],
      ['403', '/v1/listings', { key: logged.key, headers: { origin: 'https://evil.example.com' } },
        { status: 403, ...sg, origin: 'https://evil.example.com', ...ofKey(logged), error: 'origin_not_allowed', reason: 'origin_not_registered' }],
      ['404 listing', '/v1/listings/f0000000-0000-4000-8000-0000000000ff', { key: logged.key },
        { status: 404, route: '/v1/listings/:id', ...sg, ...ofKey(logged), error: 'not_found', reason: 'listing_not_found' }],
      ['404 route', '/nothing/here', { key: logged.key }, { status: 404, route: null, host: 'api.localhost', country: null, ...noKey, error: 'not_found', reason: 'unknown_route' }],
      ['404 host', '/v1/listings', { key: logged.key, host: 'api.xx.localhost' }, { status: 404, host: 'api.xx.localhost', country: null, ...noKey, error: 'not_found', reason: 'unknown_host' }],
      ['400', '/v1/listings?page=abc', { key: logged.key }, { status: 400, ...sg, ...ofKey(logged), error: 'bad_request', reason: 'bad_parameter' }],
      ['405', '/v1/listings', { key: logged.key, method: 'DELETE' }, { status: 405, route: null, host: 'api.localhost', country: null, ...noKey, error: 'method_not_allowed', reason: 'method_not_allowed' }],
    ];
    for (const [name, path, options, expected] of cases) {
      const res = await server.get(path, options);
      const id = header(res, 'x-request-id')!;
      const [line] = await logLinesOf(server, id);
      assert.ok(line !== undefined, `${name}: a line`);
      const want = { reqId: id, method: options.method ?? 'GET', path: path.split('?')[0], client_address: '127.0.0.1', origin: null, route: '/v1/listings', ...expected };
      const got = Object.fromEntries(Object.keys(want).map((k) => [k, line[k]]));
      assert.deepEqual(got, want, name);
      assert.equal(typeof line.ms, 'number', name);
    }
    // Answered outside the app (front.ts): a request Node cannot parse, and CONNECT. The same fields.
    const unrouted = { route: null, path: null, ms: 0, key_prefix: null, client_address: '127.0.0.1', country: null, origin: null, key_id: null, account_id: null };
    const raws: Array<[string, Record<string, unknown>]> = [
      ['NOT HTTP AT ALL\r\n\r\n', { ...unrouted, method: null, status: 400, host: null, error: 'bad_request', reason: 'malformed_request', parse_error: 'HPE_INVALID_METHOD' }],
      ['CONNECT api.localhost:443 HTTP/1.1\r\nHost: api.localhost:443\r\n\r\n', { ...unrouted, method: 'CONNECT', status: 405, host: 'api.localhost:443', error: 'method_not_allowed', reason: 'method_not_allowed' }],
    ];
    for (const [text, expected] of raws) {
      const res = await rawRequest(server.port, text);
      const id = res.headers['x-request-id']!;
      const [line] = await logLinesOf(server, id);
      assert.ok(line !== undefined, text);
      const { level, time, pid, hostname, msg, ...fields } = line;
      assert.deepEqual([level, msg, typeof time, typeof pid, typeof hostname], [30, 'request', 'number', 'number', 'string']);
      assert.deepEqual(fields, { reqId: id, ...expected }, text);
      assert.deepEqual(Object.keys(fields).slice(0, LINE_FIELDS.length), LINE_FIELDS, 'the keys of every line, in order');
    }
  });

  it('request ids count nothing: random, so one tenant cannot read the others\' traffic from them (issue 29 item 8)', async (t) => {
    await world(t);
    const ids: string[] = [];
    // Without a key (a 401) and the health route: ids without spending this file's rate limit.
    for (let i = 0; i < 50; i++) ids.push(header(await server.get(i % 2 === 0 ? '/v1/listings' : '/healthz'), 'x-request-id')!);
    const common = (a: string, b: string) => {
      let n = 0;
      while (n < a.length && a[n] === b[n]) n++;
      return n;
    };
    // `req_` is shared; a per-process prefix or a counter would share far more between neighbours.
    const longest = Math.max(...ids.slice(1).map((id, i) => common(id, ids[i]!)));
    assert.ok(longest <= 'req_'.length + 4, `consecutive ids share ${longest} characters: ${ids.slice(0, 3).join(', ')}`);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('D19: requests with a malformed path, and requests rejected before routing (malformed HTTP, oversized headers), carry an X-Request-Id that is logged', async (t) => {
    await world(t);
    const bad = await server.get('/v1/listings/%E0%A4%A', { key });
    assert.equal(bad.status, 404);
    const garbage = await rawRequest(server.port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.equal(garbage.status, 400);
    const big = await rawRequest(server.port, `GET /v1/listings HTTP/1.1\r\nHost: api.localhost\r\nX-Big: ${'b'.repeat(40_000)}\r\nConnection: close\r\n\r\n`);
    assert.equal(big.status, 431);
    const ids = [header(bad, 'x-request-id'), garbage.headers['x-request-id'], big.headers['x-request-id']];
    for (const [i, id] of ids.entries()) {
      assert.match(id ?? '', REQUEST_ID, `response ${i}`);
      const lines = await logLinesOf(server, id!);
      assert.equal(lines.length, 1, `response ${i}: one log line with its id`);
      assert.equal(lines[0]!.status, [404, 400, 431][i]);
    }
  });

  it('D19: without TRUST_PROXY a client\'s X-Request-Id and X-Forwarded-Host are ignored', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key, headers: { 'x-request-id': 'client-chosen-id-123' } });
    assert.equal(res.status, 200);
    assert.notEqual(header(res, 'x-request-id'), 'client-chosen-id-123');
    assert.equal(server.logs.lines.filter((l) => l.reqId === 'client-chosen-id-123').length, 0);
    // The Host header decides, not X-Forwarded-Host.
    const myKey = (await server.createKey(orgId, 'my')).key;
    assertError(await server.get('/v1/listings', { key: myKey, headers: { 'x-forwarded-host': 'api.my.localhost' } }), 401, 'unauthorized');
    assertError(await server.get('/v1/listings', { key, host: '127.0.0.1', headers: { 'x-forwarded-host': 'api.localhost' } }), 404, 'not_found');
    assert.equal((await server.get('/v1/listings', { key, headers: { 'x-forwarded-host': 'api.my.localhost' } })).status, 200);
  });

  it('issue 29 item 3: without TRUST_PROXY the log line\'s client_address is the connection\'s peer, whatever X-Forwarded-For says', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key, headers: { 'x-forwarded-for': '203.0.113.9, 10.0.0.10' }, localAddress: '127.0.0.3' });
    assert.equal(res.status, 200);
    const [line] = await logLinesOf(server, header(res, 'x-request-id')!);
    assert.equal(line!.client_address, '127.0.0.3');
  });

  it('D20: no log line and no response carries the full key or its hash; logs show the key by its display prefix', async (t) => {
    await world(t);
    const hashHex = createHash('sha256').update(key).digest('hex');
    const hashB64 = createHash('sha256').update(key).digest('base64');
    const secret = key.slice('sg_live_'.length);
    const responses: TestResponse[] = [];
    const before = server.logs.raw.length;
    for (const [, path, options] of variety()) responses.push(await server.get(path, options));
    // Keys where they do not belong: in the path, the query, other headers, a wrong country.
    responses.push(await server.get(`/v1/listings/${key}`, { key }));
    responses.push(await server.get(`/v1/listings?api_key=${key}&page=${key}`, { key }));
    responses.push(await server.get(`/${key}`, {}));
    responses.push(await server.get('/v1/listings', { key: `${key}x` }));
    responses.push(await server.get('/v1/listings', { headers: { authorization: `Basic ${key}` } }));
    responses.push(await server.get('/v1/listings', { key, headers: { 'x-api-key': key, origin: 'https://evil.example.com' } }));
    responses.push(await server.get(`/v1/listings?page=${key}`, { key, host: 'api.my.localhost' }));
    // Error messages that echo what the client sent must not echo a key in it either.
    responses.push(await server.get(`/v1/listings?per_page=x${key}`, { key }));
    responses.push(await server.get('/v1/listings', { key, headers: { origin: key } }));
    responses.push(await server.get('/v1/listings', { key, headers: { origin: `https://${key}.example.com` } }));
    responses.push(await server.get('/v1/listings', { key, host: `${key}.example.com` }));
    responses.push(await server.get(`/v1/listings/${key}%`, { key }));
    responses.push(await server.get(`/x${key}`, { key }));
    responses.push(await server.get(`/v1/listings/${key.replaceAll('_', '%5F')}`, { key }));
    responses.push(await server.get(`/v1/listings/${key.replaceAll('_', '%5f')}%`, { key }));
    // Any character percent-encoded: the secret's first (so that the rest follows it as sent), the l of live.
    const percent = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`;
    responses.push(await server.get(`/v1/listings/sg_live_${percent(secret[0]!)}${secret.slice(1)}`, { key }));
    responses.push(await server.get(`/v1/listings/sg_${percent('l')}ive_${secret}`, { key }));
    responses.push(await server.get(`/v1/listings?page=${[...key].map(percent).join('')}`, { key }));
    // A revoked key, then a request with it.
    const revoked = await server.createKey(orgId, 'sg', 'to revoke');
    assert.equal((await server.get('/v1/listings', { key: revoked.key })).status, 200);
    const cli = runCli(['key', 'revoke', revoked.id, '--json'], { DATABASE_URL: server.databaseUrl });
    assert.equal(cli.status, 0, cli.stderr);
    responses.push(await server.get('/v1/listings', { key: revoked.key }));
    assert.equal(responses.at(-1)!.status, 401);

    const lastId = header(responses.at(-1)!, 'x-request-id')!;
    await logLinesOf(server, lastId);
    const logged = server.logs.raw.slice(before).join('\n');
    assert.ok(logged.length > 0);
    // The key without its checksum is as good as the key: the checksum is computed from it (D2).
    // Nor the secret less its first character (sent percent-encoded above): 61 guesses from the key.
    const secrets = [key, key.slice(0, -6), secret.slice(0, -6), secret.slice(1, -6), hashHex, hashB64, revoked.key, revoked.key.slice(0, -6), createHash('sha256').update(revoked.key).digest('hex')];
    for (const s of secrets) {
      assert.ok(!logged.includes(s), `a secret (${s.slice(0, 10)}...) is in the log`);
      for (const res of responses) {
        assert.ok(!res.body.includes(s), `a secret is in a response body: ${res.body.slice(0, 200)}`);
        assert.ok(!JSON.stringify(res.headers).includes(s), 'a secret is in a response header');
      }
    }
    // Authenticated requests are logged by the display prefix: a short start of the key.
    const prefixes = server.logs.lines.slice(before).map((l) => l.key_prefix).filter((p): p is string => typeof p === 'string');
    assert.ok(prefixes.length > 0, 'some lines carry key_prefix');
    for (const p of prefixes) {
      assert.ok(key.startsWith(p) || revoked.key.startsWith(p), `${p} is the start of a key`);
      assert.ok(p.length <= 16, `${p} is short`);
      assert.match(p, /^sg_live_/);
    }
  });

  it('/healthz and /readyz answer 200 JSON on any host, without a key', async (t) => {
    await world(t);
    for (const host of ['api.localhost', 'api.my.localhost', '127.0.0.1', 'anything.example.com']) {
      for (const path of ['/healthz', '/readyz']) {
        const res = await server.get(path, { host });
        assert.equal(res.status, 200, `${host}${path}`);
        assert.match(header(res, 'content-type') ?? '', /^application\/json\b/);
        assert.equal(typeof res.json, 'object');
      }
    }
  });

  it('HEAD returns the headers of the GET and no body', async (t) => {
    await world(t);
    for (const path of ['/v1/listings', `/v1/listings/${listingId}`, '/v1/listings?per_page=1']) {
      const get = await server.get(path, { key });
      const head = await server.get(path, { key, method: 'HEAD' });
      assert.equal(head.status, 200, path);
      assert.equal(head.body, '', path);
      assert.equal(header(head, 'content-type'), header(get, 'content-type'));
      assert.equal(header(head, 'content-length'), String(Buffer.byteLength(get.body)), path);
      assert.ok(header(head, 'x-request-id'));
      assert.ok(header(head, 'x-ratelimit-limit'));
    }
    const missing = await server.get('/v1/listings/f0000000-0000-4000-8000-0000000000ff', { key, method: 'HEAD' });
    assert.equal(missing.status, 404);
    assert.equal(missing.body, '');
    const unauthorized = await server.get('/v1/listings', { method: 'HEAD' });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.body, '');
  });
});

describe('issue 30 item 5: health checks are logged at debug', () => {
  it('at LOG_LEVEL=debug, /healthz and /readyz have their line at level 20, with the fields of every line; a not-ready answer its error code', async () => {
    const server = await startTestServer({ LOG_LEVEL: 'debug' }, undefined, { servingLogger: true });
    let closing: Promise<void> | undefined;
    try {
      for (const path of ['/healthz', '/readyz']) {
        const res = await server.get(path);
        assert.equal(res.status, 200);
        const lines = await logLinesOf(server, header(res, 'x-request-id')!);
        assert.equal(lines.length, 1, path);
        const line = lines[0]!;
        assert.deepEqual(Object.keys(line), ['level', 'time', 'pid', 'hostname', ...LINE_FIELDS, 'msg'], path);
        assert.equal(line.level, 20, path);
        assert.deepEqual([line.route, line.status, line.host, line.country, line.key_id, line.error], [path, 200, 'api.localhost', null, null, null], path);
      }
      // Any other request is logged at info.
      const api = await server.get('/v1/listings');
      assert.equal((await logLinesOf(server, header(api, 'x-request-id')!))[0]!.level, 30);
      // A draining instance is not ready (503 internal_error): the line says so, still at debug.
      closing = server.close();
      const notReady = await server.service.app.inject({ method: 'GET', url: '/readyz', headers: { host: 'api.localhost' } });
      assert.equal(notReady.statusCode, 503, notReady.body);
      const lines = await logLinesOf(server, String(notReady.headers['x-request-id']), 2);
      const line = lines.find((l) => l.msg === 'request');
      assert.deepEqual([line?.level, line?.status, line?.error], [20, 503, 'internal_error'], JSON.stringify(lines));
    } finally {
      await (closing ?? server.close());
    }
  });
});

describe('behind a trusted proxy: TRUST_PROXY=1 (OPERATIONS, D3, D19)', () => {
  let server: TestServer;
  let sgKey: string;
  let myKey: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { TRUST_PROXY: '1' });
    const org = await server.createAccount();
    sgKey = (await server.createKey(org)).key;
    myKey = (await server.createKey(org, 'my')).key;
    await server.addListings(org, [{ country: 'my', currency: 'MYR' }]);
  }

  it('the proxy\'s X-Request-Id is reused in the response and the log line', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key: sgKey, headers: { 'x-request-id': 'proxy-req-4711.a:b_c' } });
    assert.equal(res.status, 200);
    assert.equal(header(res, 'x-request-id'), 'proxy-req-4711.a:b_c');
    const lines = await logLinesOf(server, 'proxy-req-4711.a:b_c');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.status, 200);
    // Without one, the service makes its own.
    const own = await server.get('/v1/listings', { key: sgKey });
    assert.match(header(own, 'x-request-id') ?? '', REQUEST_ID);
  });

  it("a proxy's X-Request-Id that holds a key is not reused: the id is logged, stored and shown (D20, issue 29 item 7)", async (t) => {
    await world(t);
    for (const id of [sgKey, `x-${sgKey}`, `sg-live-${sgKey.slice(8)}`]) {
      const res = await server.get('/v1/listings', { key: sgKey, headers: { 'x-request-id': id } });
      assert.equal(res.status, 200);
      assert.match(header(res, 'x-request-id') ?? '', REQUEST_ID, 'a new id instead');
      assert.equal((await logLinesOf(server, header(res, 'x-request-id')!)).length, 1);
      assert.ok(!server.logs.raw.join('\n').includes(sgKey.slice(8)), 'the key is in no log line');
    }
  });

  it('X-Forwarded-Host picks the country', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key: myKey, host: '127.0.0.1', headers: { 'x-forwarded-host': 'api.my.localhost' } });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.total, 1);
    assertError(await server.get('/v1/listings', { key: sgKey, host: 'api.localhost', headers: { 'x-forwarded-host': 'api.my.localhost' } }), 401, 'unauthorized');
    assert.equal((await server.get('/v1/listings', { key: sgKey, host: 'internal:8080', headers: { 'x-forwarded-host': 'API.LOCALHOST' } })).status, 200);
    assertError(await server.get('/v1/listings', { key: sgKey, host: 'api.localhost', headers: { 'x-forwarded-host': 'evil.example.com' } }), 404, 'not_found');
  });

  it('issue 29 item 3: the log line\'s client_address is the X-Forwarded-For entry the one proxy appended, not the client\'s own', async (t) => {
    await world(t);
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-forwarded-for': '203.0.113.9, 10.0.0.10' }, '10.0.0.10'],
      [{ 'x-forwarded-for': '198.51.100.4' }, '198.51.100.4'],
      [{ 'x-forwarded-for': '2001:db8::7' }, '2001:db8::7'],
      [{ 'x-forwarded-for': '198.51.100.4:61234' }, '198.51.100.4'],
      // Not an address: not believed, nor anything left of it.
      [{ 'x-forwarded-for': `198.51.100.4, ${'x'.repeat(80)}` }, '127.0.0.1'],
      // Nothing forwarded: the peer itself.
      [{}, '127.0.0.1'],
    ];
    for (const [headers, expected] of cases) {
      const res = await server.get('/v1/listings', { key: sgKey, headers });
      assert.equal(res.status, 200);
      const [line] = await logLinesOf(server, header(res, 'x-request-id')!);
      assert.equal(line!.client_address, expected, JSON.stringify(headers));
    }
  });
});

describe('issue 29 item 3: TRUST_PROXY as the proxies\' addresses: forwarded headers count only from them', () => {
  let server: TestServer;
  let sgKey: string;
  let myKey: string;
  // The test connects from 127.0.0.2 as the proxy; 127.0.0.1 is a client that reached the service directly.
  const PROXY = '127.0.0.2';

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { TRUST_PROXY: `${PROXY},10.0.0.0/8` });
    const org = await server.createAccount();
    sgKey = (await server.createKey(org)).key;
    myKey = (await server.createKey(org, 'my')).key;
    await server.addListings(org, [{ country: 'my', currency: 'MYR' }]);
  }

  const forwarded = { 'x-forwarded-for': '203.0.113.9, 10.0.0.10', 'x-forwarded-host': 'api.my.localhost', 'x-request-id': 'proxy-req-42' };

  it('from a listed proxy: its X-Request-Id, X-Forwarded-Host and X-Forwarded-For are believed, through every listed hop', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key: myKey, host: 'lb.internal', headers: forwarded, localAddress: PROXY });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.total, 1, 'X-Forwarded-Host picked the country');
    assert.equal(header(res, 'x-request-id'), 'proxy-req-42');
    const lines = await logLinesOf(server, 'proxy-req-42');
    assert.equal(lines.length, 1);
    // 10.0.0.10 is listed too: the client is the entry before it.
    assert.equal(lines[0]!.client_address, '203.0.113.9');
    // The host the proxy forwarded, and its country (issue 30 item 5).
    assert.deepEqual([lines[0]!.host, lines[0]!.country], ['api.my.localhost', 'my']);
  });

  it('from any other peer: the same headers are ignored (Host decides, a new request id, the peer is the client)', async (t) => {
    await world(t);
    // A request of the listed proxy with that id first: the one request that uses it.
    assert.equal((await server.get('/v1/listings', { key: myKey, host: 'lb.internal', headers: forwarded, localAddress: PROXY })).status, 200);
    assert.equal((await logLinesOf(server, 'proxy-req-42')).length, 1);
    const res = await server.get('/v1/listings', { key: sgKey, headers: forwarded });
    assert.equal(res.status, 200, 'the sg host of Host, not the my host of X-Forwarded-Host');
    assert.equal(res.json.total, 0);
    const id = header(res, 'x-request-id')!;
    assert.notEqual(id, 'proxy-req-42');
    assert.match(id, REQUEST_ID);
    const [line] = await logLinesOf(server, id);
    assert.equal(line!.client_address, '127.0.0.1');
    assert.deepEqual([line!.host, line!.country], ['api.localhost', 'sg']);
    assertError(await server.get('/v1/listings', { key: myKey, headers: forwarded }), 401, 'unauthorized');
    assert.equal(server.logs.lines.filter((l) => l.reqId === 'proxy-req-42').length, 1, 'only the proxied request used that id');
  });
});
