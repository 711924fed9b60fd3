import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { RequestOptions, TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { header } from './helpers.js';

/**
 * D29 on a listening server: an operator marks `/v1/listings/changes` deprecated (API_DEPRECATIONS),
 * and every answer under it carries `Deprecation: @<seconds>` (RFC 9745), `Sunset: <HTTP-date>`
 * (RFC 8594) and `Link: <url>; rel="deprecation"`, whatever its status, while the other endpoints
 * carry none; the OpenAPI document the server serves marks that operation, and only it,
 * `deprecated: true`, with the headers each of its answers carries. Browsers may read them.
 */

const FEED = '/v1/listings/changes';
const SINCE = '2026-11-01T08:00:00Z';
const SUNSET = '2027-12-01';
const LINK = 'https://developers.example.com/changelog#changes-feed';
const SENT = {
  deprecation: `@${Date.parse(SINCE) / 1000}`,
  sunset: 'Wed, 01 Dec 2027 00:00:00 GMT',
  link: `<${LINK}>; rel="deprecation"`,
};
const NAMES = { deprecation: 'Deprecation', sunset: 'Sunset', link: 'Link' } as const;

function assertDeprecated(res: TestResponse, context: string): void {
  for (const name of Object.keys(SENT) as Array<keyof typeof SENT>) assert.equal(header(res, name), SENT[name], `${context} (status ${res.status}): ${name}`);
}

function assertNotDeprecated(res: TestResponse, context: string): void {
  for (const name of Object.keys(SENT)) assert.equal(header(res, name), undefined, `${context} (status ${res.status}): no ${name}`);
}

describe('a deprecated path prefix over HTTP (D29)', () => {
  let server: TestServer;
  let key: string;
  let limitedKey: string;
  const origin = 'https://shop.example.com';
  /** Answers of the feed seen by the tests, by documented status, for the OpenAPI check. */
  const feedAnswers: Array<[string, TestResponse]> = [];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { API_DEPRECATIONS: JSON.stringify([{ prefix: FEED, since: SINCE, sunset: SUNSET, link: LINK }]), DASHBOARD_PORT: 'off' });
    const org = await server.createAccount();
    await server.addListings(org, [{ id: 'b0000000-0000-4000-8000-000000000001' }]);
    await server.allowOrigin(org, origin);
    key = (await server.createKey(org)).key;
    const limited = await server.createKey(org);
    await server.service.store.keys.setRateLimit(limited.id, 1);
    limitedKey = limited.key;
  }

  const feed = async (path: string, options: RequestOptions, status: number, documentedAs = String(status)) => {
    const res = await server.get(path, options);
    assert.equal(res.status, status, `${path}: ${res.body}`);
    feedAnswers.push([documentedAs, res]);
    return res;
  };

  it('every answer of the deprecated endpoint carries Deprecation, Sunset and Link: 200, 304, HEAD, 400, 401, 403, 404, 405, 429, preflight', async (t) => {
    await world(t);
    const ok = await feed(FEED, { key }, 200);
    assertDeprecated(ok, '200');
    assert.ok(header(ok, 'ratelimit'), 'with the rate-limit fields, as any answer past the key check');
    assertDeprecated(await feed(FEED, { key, headers: { 'if-none-match': header(ok, 'etag')! } }, 304), '304');
    assertDeprecated(await feed(`${FEED}?limit=5`, { key, method: 'HEAD' }, 200), 'HEAD');
    assertDeprecated(await feed(`${FEED}?cursor=not-a-cursor`, { key }, 400), 'a bad cursor');
    // A client must learn that it calls something deprecated even while its key is wrong.
    assertDeprecated(await feed(FEED, {}, 401), 'no key');
    assertDeprecated(await feed(FEED, { key: 'sg_live_nope' }, 401), 'an unknown key');
    assertDeprecated(await feed(FEED, { key, headers: { origin: 'https://evil.example.com' } }, 403), 'an origin not registered');
    assertDeprecated(await feed(FEED, { key, host: 'api.nowhere.localhost' }, 404), 'a host that serves no country');
    assertDeprecated(await feed(`${FEED}/more`, { key }, 404), 'no route below the prefix');
    assertDeprecated(await feed(FEED, { key, method: 'DELETE' }, 405, 'default'), 'another method');
    assertDeprecated(await feed(FEED, { key: limitedKey }, 200), 'the limited key\'s one request');
    const refused = await feed(FEED, { key: limitedKey }, 429);
    assertDeprecated(refused, '429');
    assert.ok(header(refused, 'retry-after'));
    const preflight = await server.get(FEED, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
    assert.equal(preflight.status, 204);
    assertDeprecated(preflight, 'preflight');
  });

  it('the route decides, not the spelling of the path: a percent-encoded path that reaches the feed is deprecated too', async (t) => {
    await world(t);
    const encoded = await server.get('/v1/listings/%63hanges', { key });
    assert.equal(encoded.status, 200, encoded.body);
    assert.ok(Array.isArray(encoded.json.items), 'it is the feed');
    assertDeprecated(encoded, 'percent-encoded');
  });

  it('nothing else is deprecated: /v1/listings, a listing (even one whose id starts like the feed), /openapi.json', async (t) => {
    await world(t);
    const cases: Array<[string, RequestOptions, number]> = [
      ['/v1/listings', { key }, 200],
      ['/v1/listings?per_page=x', { key }, 400],
      ['/v1/listings', {}, 401],
      ['/v1/listings/b0000000-0000-4000-8000-000000000001', { key }, 200],
      ['/v1/listings/changesX', { key }, 404],
      ['/v1/listingsX', { key }, 404],
      ['/v1/listings', { key, method: 'DELETE' }, 405],
      ['/openapi.json', {}, 200],
    ];
    for (const [path, options, status] of cases) {
      const res = await server.get(path, options);
      assert.equal(res.status, status, `${path}: ${res.body}`);
      assertNotDeprecated(res, path);
    }
  });

  it('the served OpenAPI document marks the feed, and only it, deprecated, and documents the very headers each of its answers carries', async (t) => {
    await world(t);
    const res = await server.get('/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.json;
    const operations = Object.entries<any>(doc.paths).map(([path, item]) => [path, item.get.deprecated] as const);
    assert.deepEqual(operations, [['/v1/listings', undefined], ['/v1/listings/facets', undefined], [FEED, true], ['/v1/listings/{id}', undefined]]);
    const operation = doc.paths[FEED].get;
    assert.match(operation.description, /\*\*Deprecated\*\* since 2026-11-01T08:00:00Z: .* It may be removed after 2027-12-01 \(`Sunset`\)\. What to use instead: https:\/\/developers\.example\.com\/changelog#changes-feed$/);
    for (const [status, documented] of Object.entries<any>(operation.responses)) {
      assert.equal(documented.$ref, undefined, `${status}: a deprecated operation's answers are its own, with the headers`);
      for (const name of Object.keys(SENT) as Array<keyof typeof SENT>) {
        const h = documented.headers[NAMES[name]];
        assert.ok(h, `${status}: ${NAMES[name]} documented`);
        assert.equal(h.schema.const, SENT[name], `${status}: ${NAMES[name]} is documented with the value sent`);
        // The default answer also stands for 431, refused before the request is read, without them.
        assert.equal(h.required, status !== 'default', `${status}: ${NAMES[name]} required`);
      }
    }
    // The other operations' answers document none of them, and still share the common answers.
    for (const path of ['/v1/listings', '/v1/listings/facets', '/v1/listings/{id}']) {
      const responses = doc.paths[path].get.responses;
      assert.equal(responses[304].$ref, '#/components/responses/NotModified');
      assert.equal(responses[200].headers.Deprecation, undefined, path);
    }
    // Every answer of the feed seen above is one the document announces, with those headers.
    assert.ok(feedAnswers.length >= 10);
    for (const [status, answer] of feedAnswers) {
      const documented = operation.responses[status];
      assert.ok(documented, `status ${status} is documented`);
      for (const name of Object.keys(SENT) as Array<keyof typeof SENT>) assert.equal(header(answer, name), documented.headers[NAMES[name]].schema.const, `${status}: ${name}`);
    }
    // The committed document (no configuration) marks nothing: test/http/openapi.test.ts.
  });

  it('browser code may read them: Access-Control-Expose-Headers lists Deprecation, Sunset and Link (and the D29 rate-limit fields)', async (t) => {
    await world(t);
    const res = await server.get(FEED, { key, headers: { origin } });
    assert.equal(res.status, 200);
    assertDeprecated(res, 'a browser call');
    assert.equal(header(res, 'access-control-allow-origin'), origin);
    const exposed = (header(res, 'access-control-expose-headers') ?? '').split(',').map((h) => h.trim());
    for (const name of ['Deprecation', 'Sunset', 'Link', 'RateLimit', 'RateLimit-Policy']) assert.ok(exposed.includes(name), `exposes ${name}: ${exposed.join(', ')}`);
  });
});

describe('a deprecation without a sunset, covering every endpoint (D29)', () => {
  let server: TestServer;
  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { API_DEPRECATIONS: JSON.stringify([{ prefix: '/v1', since: '2026-12-01', link: 'https://developers.example.com/v2' }]), DASHBOARD_PORT: 'off' });
  }

  it('Deprecation and Link on every /v1 answer, no Sunset; the document marks every operation and documents no Sunset', async (t) => {
    await world(t);
    for (const path of ['/v1/listings', FEED, '/v1/listings/b0000000-0000-4000-8000-000000000001', '/v1/nothing']) {
      const res = await server.get(path);
      assert.equal(header(res, 'deprecation'), '@1796083200', path);
      assert.equal(header(res, 'link'), '<https://developers.example.com/v2>; rel="deprecation"', path);
      assert.equal(header(res, 'sunset'), undefined, path);
    }
    const doc = (await server.get('/openapi.json')).json;
    for (const item of Object.values<any>(doc.paths)) {
      assert.equal(item.get.deprecated, true);
      assert.match(item.get.description, /No removal date is set yet\./);
      for (const response of Object.values<any>(item.get.responses)) assert.equal(response.headers.Sunset, undefined);
    }
    assert.equal(doc.components.responses, undefined, 'no shared answer is left to refer to');
  });
});
