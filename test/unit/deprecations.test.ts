import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config/index.js';
import { parseDeprecations } from '../../src/config/deprecations.js';
import { checkDeprecations, deprecationHeaders, deprecationOf } from '../../src/http/deprecations.js';
import { ENDPOINTS } from '../../src/http/v1/endpoints/index.js';

/**
 * D29's prefixes against paths (http/deprecations.ts): whole segments, the longest prefix wins,
 * and the header values (RFC 9745 Deprecation, RFC 8594 Sunset, the deprecation Link). The
 * answers of a listening server are test/http/deprecation.test.ts.
 */

const ROUTES = ENDPOINTS.map((endpoint) => endpoint.url);
const LINK = 'https://developers.example.com/changelog';

describe('deprecated prefixes (D29)', () => {
  const deprecations = parseDeprecations(JSON.stringify([
    { prefix: '/v1/listings', since: '2026-12-01', link: `${LINK}#listings` },
    { prefix: '/v1/listings/changes', since: '2026-06-01T12:00:00Z', sunset: '2027-06-02', link: `${LINK}#changes` },
  ]));
  const [listings, changes] = deprecations as [(typeof deprecations)[0], (typeof deprecations)[0]];

  it('a prefix covers whole segments, a query included; where prefixes nest, the longest one that covers a path is its deprecation', () => {
    const cases: Array<[string, unknown]> = [
      ['/v1/listings', listings],
      ['/v1/listings?page=2', listings],
      ['/v1/listings/', listings],
      ['/v1/listings/b0000000-0000-4000-8000-000000000001', listings],
      ['/v1/listings/:id', listings],
      ['/v1/listings/changes', changes],
      ['/v1/listings/changes?cursor=abc', changes],
      ['/v1/listings/changes/extra', changes],
      ['/v1/listings/changesX', listings],
      ['/v1/listingsX', undefined],
      ['/v1', undefined],
      ['/openapi.json', undefined],
    ];
    for (const [path, expected] of cases) assert.equal(deprecationOf(deprecations, path), expected, path);
    // The order of the configuration does not matter.
    assert.equal(deprecationOf([...deprecations].reverse(), '/v1/listings/changes'), changes);
  });

  it('every prefix must cover an endpoint: a typo is a ConfigError naming API_DEPRECATIONS, not a silent no-op', () => {
    checkDeprecations(deprecations, ROUTES);
    checkDeprecations(parseDeprecations(`[{"prefix": "/v1", "since": "2026-12-01", "link": "${LINK}"}]`), ROUTES);
    for (const prefix of ['/v1/listing', '/v1/listings/changes/extra', '/v1/listings/b0000000-0000-4000-8000-000000000001', '/v1/changes']) {
      assert.throws(() => checkDeprecations(parseDeprecations(JSON.stringify([{ prefix, since: '2026-12-01', link: LINK }])), ROUTES), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.message, `API_DEPRECATIONS: prefix "${prefix}" covers no endpoint; the API serves /v1/listings, /v1/listings/facets, /v1/listings/changes, /v1/listings/:id`);
        return true;
      }, prefix);
    }
  });

  it('headers: Deprecation @<Unix seconds> (RFC 9745), Sunset as an HTTP-date (RFC 8594) only when set, Link rel="deprecation"', () => {
    assert.deepEqual(deprecationHeaders(changes), {
      deprecation: `@${Date.parse('2026-06-01T12:00:00Z') / 1000}`,
      sunset: 'Wed, 02 Jun 2027 00:00:00 GMT',
      link: `<${LINK}#changes>; rel="deprecation"`,
    });
    assert.deepEqual(deprecationHeaders(listings), { deprecation: '@1796083200', link: `<${LINK}#listings>; rel="deprecation"` });
    // A link is sent as the URL parser writes it: nothing in it can end the <...> early.
    const [odd] = parseDeprecations(JSON.stringify([{ prefix: '/v1', since: '2026-12-01', link: 'https://developers.example.com/a b>"c' }]));
    assert.equal(deprecationHeaders(odd!).link, '<https://developers.example.com/a%20b%3E%22c>; rel="deprecation"');
  });
});
