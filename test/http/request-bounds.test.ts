import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MAX_TARGET_LENGTH } from '../../src/http/front.js';
import { MAX_QUERY_PARAMETERS } from '../../src/http/v1/query.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, logLinesOf, rawRequest, tenantLatency } from './helpers.js';

/**
 * What a request may carry is bounded (issue 40 item 2): a request target over MAX_TARGET_LENGTH
 * characters is 414 and a query of more than MAX_QUERY_PARAMETERS parameters 400, on every route
 * and before the key check, each a JSON error (D6) whose message names the bound; and the query is
 * parsed in linear time, so that no anonymous client stalls the other tenants through it.
 */
describe('bounds on the request target and its query (issue 40 item 2; D6)', () => {
  let server: TestServer;
  let key: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // The latency test sends many requests with one key: its limit is not under test.
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000', DASHBOARD_PORT: 'off' });
    const account = await server.createAccount();
    await server.addListings(account, Array.from({ length: 25 }, (_, i) => ({ title: `Listing ${i}` })));
    key = (await server.createKey(account)).key;
  }

  /** `path` padded with a query parameter to exactly `length` characters. */
  const targetOf = (path: string, length: number) => `${path}${path.includes('?') ? '&' : '?'}pad=`.padEnd(length, 'x');

  it(`a request target of ${MAX_TARGET_LENGTH} characters is served; one more is 414, on any route and before the key check`, async (t) => {
    await world(t);
    for (const path of ['/healthz', '/v1/listings?per_page=1']) {
      const fits = await server.get(targetOf(path, MAX_TARGET_LENGTH), { key });
      assert.equal(fits.status, 200, `${path}: ${fits.body}`);
    }
    for (const [path, options] of [['/healthz', {}], ['/v1/listings', {}], ['/v1/listings', { key }], ['/nowhere', {}]] as const) {
      const res = await server.get(targetOf(path, MAX_TARGET_LENGTH + 1), options);
      assertError(res, 414, 'bad_request', path);
      assert.match(res.json.message, new RegExp(`at most ${MAX_TARGET_LENGTH} characters`));
      assert.equal(header(res, 'x-ratelimit-limit'), undefined, `${path}: refused before the key check`);
      // /healthz is logged at debug (load balancers poll it), below this server's level.
      if (path === '/healthz') continue;
      const lines = await logLinesOf(server, header(res, 'x-request-id')!);
      assert.equal(lines.length, 1, 'one log line with its request id (D19)');
      assert.equal(lines[0]!.status, 414);
    }
  });

  it('a request line over Node\'s header size limit is 414 too; headers over it stay 431', async (t) => {
    await world(t);
    const long = await rawRequest(server.port, `GET ${targetOf('/healthz', 20_000)} HTTP/1.1\r\nHost: api.localhost\r\n\r\n`);
    assert.equal(long.status, 414, long.body);
    assert.equal(long.json?.error, 'bad_request');
    assert.match(long.json.message, new RegExp(`at most ${MAX_TARGET_LENGTH} characters`));
    const headers = await rawRequest(server.port, `GET /healthz HTTP/1.1\r\nHost: api.localhost\r\nX-Filler: ${'x'.repeat(20_000)}\r\n\r\n`);
    assert.equal(headers.status, 431, headers.body);
    assert.equal(headers.json?.error, 'bad_request');
  });

  it(`${MAX_QUERY_PARAMETERS} query parameters are read; one more is 400 naming the bound, on any route and before the key check`, async (t) => {
    await world(t);
    const parameters = (n: number) => Array.from({ length: n }, (_, i) => `utm_${i}=${i}`).join('&');
    const fits = await server.get(`/v1/listings?${parameters(MAX_QUERY_PARAMETERS - 1)}&per_page=3`, { key });
    assert.equal(fits.status, 200, fits.body);
    assert.equal(fits.json.per_page, 3, 'the parameters are read');
    for (const [path, options] of [['/healthz', {}], ['/v1/listings', {}], ['/v1/listings', { key }]] as const) {
      const res = await server.get(`${path}?${parameters(MAX_QUERY_PARAMETERS)}&per_page=3`, options);
      assertError(res, 400, 'bad_request', path);
      assert.match(res.json.message, new RegExp(`more than ${MAX_QUERY_PARAMETERS} parameters`));
      assert.equal(header(res, 'x-ratelimit-limit'), undefined, `${path}: refused before the key check`);
    }
    // A repeated name is as many parameters as it is repeated.
    assertError(await server.get(`/healthz?${'a&'.repeat(MAX_QUERY_PARAMETERS)}a`), 400, 'bad_request');
  });

  it('another tenant\'s median latency holds while anonymous clients send URLs of thousands of repeated parameters', async (t) => {
    await world(t);
    // The URLs of the issue: 8,000 repeats (a 16 KB URL, under Node's header limit), and 4,000 (under the target bound).
    const attackUrls = ['/healthz?' + 'a&'.repeat(8_000), '/v1/listings?' + 'a&'.repeat(8_000), '/v1/listings?' + 'a&'.repeat(4_000)];
    const attacks = attackUrls.map((url) => `GET ${url} HTTP/1.1\r\nHost: api.localhost\r\n\r\n`);
    const tenant = { path: '/v1/listings?per_page=20', options: { key } };
    const { alone, attacked, attacks: answered } = await tenantLatency(server.port, tenant, { connections: 4, requests: attacks, intervalMs: 20 });
    t.diagnostic(`tenant median ${alone.toFixed(2)} ms alone, ${attacked.toFixed(2)} ms while 4 clients sent ${answered} attack URLs`);
    assert.ok(answered >= 4, `the attack ran meanwhile (${answered} answered)`);
    // Before: each such URL cost the server 100 ms and more, and this median was about 150 ms.
    const allowed = Math.max(5 * alone, alone + 50);
    assert.ok(attacked <= allowed, `median ${attacked.toFixed(1)} ms under attack, ${alone.toFixed(1)} ms without (allowed ${allowed.toFixed(1)} ms)`);
  });
});
