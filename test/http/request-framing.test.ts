import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, logLinesOf, rawRequest, type RawResponse } from './helpers.js';

/**
 * Requests a proxy in front could read differently from us are refused, not guessed (issue 8,
 * item 8), and every answer is JSON with a request id, even those Node would give itself (D6, D19;
 * issue 8, item 9).
 */
describe('request framing: ambiguous and unusual requests (D5, D6, D19)', () => {
  let server: TestServer;
  let key: string;
  let otherKey: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    const account = await server.createAccount();
    await server.addListings(account, [{ title: 'One' }]);
    key = (await server.createKey(account)).key;
    otherKey = (await server.createKey(account)).key;
  }

  const raw = (lines: string[]) => rawRequest(server.port, `${lines.join('\r\n')}\r\n\r\n`);

  /** A raw answer is a D6 error with a request id that has its own log line (D19). */
  async function assertRawError(res: RawResponse, status: number, code: string): Promise<void> {
    assert.equal(res.status, status, res.body);
    assert.match(res.headers['content-type'] ?? '', /^application\/json\b/);
    assert.equal(res.json?.error, code, res.body);
    assert.equal(typeof res.json?.message, 'string');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    const id = res.headers['x-request-id'];
    assert.match(id ?? '', /^req_/);
    const lines = await logLinesOf(server, id!);
    assert.equal(lines.length, 1, 'one log line with the request id');
    assert.equal(lines[0]!.status, status);
  }

  it('two Authorization headers: 401, even when both hold the same valid key', async (t) => {
    await world(t);
    for (const second of [key, otherKey]) {
      const res = await raw(['GET /v1/listings HTTP/1.1', 'Host: api.localhost', `Authorization: Bearer ${key}`, `Authorization: Bearer ${second}`, 'Connection: close']);
      await assertRawError(res, 401, 'unauthorized');
      assert.match(res.json.message, /more than once/);
      assert.equal(res.headers['x-ratelimit-limit'], undefined, 'refused at the 401 stage, before the limiter');
    }
    // D5: the route comes first.
    const unknown = await raw(['GET /v2/x HTTP/1.1', 'Host: api.localhost', `Authorization: Bearer ${key}`, `Authorization: Bearer ${key}`, 'Connection: close']);
    await assertRawError(unknown, 404, 'not_found');
    // One header is fine.
    assert.equal((await raw(['GET /v1/listings HTTP/1.1', 'Host: api.localhost', `Authorization: Bearer ${key}`, 'Connection: close'])).status, 200);
  });

  it('two Host headers: 400, whichever comes first', async (t) => {
    await world(t);
    for (const hosts of [['api.localhost', 'api.my.localhost'], ['api.my.localhost', 'api.localhost'], ['api.localhost', 'api.localhost']]) {
      const res = await raw(['GET /v1/listings HTTP/1.1', ...hosts.map((h) => `Host: ${h}`), `Authorization: Bearer ${key}`, 'Connection: close']);
      await assertRawError(res, 400, 'bad_request');
      assert.match(res.json.message, /Host header was sent more than once/);
    }
  });

  it('an absolute-form target: used when it names the Host, 400 when it names another host', async (t) => {
    await world(t);
    const same = await raw([`GET http://api.localhost/v1/listings?per_page=1 HTTP/1.1`, 'Host: api.localhost', `Authorization: Bearer ${key}`, 'Connection: close']);
    assert.equal(same.status, 200, same.body);
    assert.equal(same.json.per_page, 1);
    const other = await raw([`GET http://api.my.localhost/v1/listings HTTP/1.1`, 'Host: api.localhost', `Authorization: Bearer ${key}`, 'Connection: close']);
    await assertRawError(other, 400, 'bad_request');
    assert.match(other.json.message, /another host than the Host header/);
  });

  it('no Host header on HTTP/1.1: a JSON 400 with a request id instead of Node\'s empty 400', async (t) => {
    await world(t);
    const res = await raw(['GET /v1/listings HTTP/1.1', `Authorization: Bearer ${key}`, 'Connection: close']);
    await assertRawError(res, 400, 'bad_request');
    assert.match(res.json.message, /Host header is missing/);
  });

  it('no Host header on HTTP/1.0 (where it is optional): no host, so no country: 404 not_found as JSON (D3, issue 29 item 10)', async (t) => {
    await world(t);
    for (const path of ['/v1/listings', '/v1/listings/changes', '/nope']) {
      const res = await raw([`GET ${path} HTTP/1.0`, `Authorization: Bearer ${key}`]);
      await assertRawError(res, 404, 'not_found');
    }
    // The route stage still comes first (D5).
    await assertRawError(await raw(['DELETE /v1/listings HTTP/1.0']), 405, 'method_not_allowed');
  });

  it('an Expect the server cannot meet: a JSON 417 with a request id and a log line, not Node\'s bare 417 (D6, D19, issue 29 item 9)', async (t) => {
    await world(t);
    for (const expect of ['foo', 'bar=baz', `${key}`]) {
      const res = await raw(['GET /v1/listings HTTP/1.1', 'Host: api.localhost', `Authorization: Bearer ${key}`, `Expect: ${expect}`, 'Connection: close']);
      await assertRawError(res, 417, 'bad_request');
      assert.match(res.json.message, /Expect/);
      assert.ok(!res.body.includes(key.slice(8)), 'no key echoed (D20)');
    }
    // With an Origin, the browser can read it (D18).
    const res = await raw(['GET /v1/listings HTTP/1.1', 'Host: api.localhost', 'Origin: https://shop.example.com', 'Expect: foo', 'Connection: close']);
    assert.equal(res.status, 417);
    assert.equal(res.headers['access-control-allow-origin'], 'https://shop.example.com');
    // 100-continue itself is met as before.
    const ok = await server.get('/v1/listings', { key, headers: { expect: '100-continue' } });
    assert.equal(ok.status, 200, ok.body);
  });

  it('CONNECT: answered with a JSON 405, Allow and a request id, not dropped', async (t) => {
    await world(t);
    const res = await raw(['CONNECT api.localhost:443 HTTP/1.1', 'Host: api.localhost:443']);
    assert.equal(res.status, 405, res.body);
    assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    await assertRawError(res, 405, 'method_not_allowed');
  });

  it('X-Content-Type-Options: nosniff on every answer', async (t) => {
    await world(t);
    for (const res of [
      await server.get('/v1/listings', { key }),
      await server.get('/v1/listings'),
      await server.get('/nowhere'),
      await server.get('/v1/listings', { key, method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' } }),
      await server.get('/healthz'),
    ]) {
      assert.equal(header(res, 'x-content-type-options'), 'nosniff', `${res.status} ${res.body}`);
    }
    const garbage = await rawRequest(server.port, 'NOT HTTP\r\n\r\n');
    assert.equal(garbage.headers['x-content-type-options'], 'nosniff');
    assertError(await server.get('/v1/listings?page=x', { key }), 400, 'bad_request');
  });
});
