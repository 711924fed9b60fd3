import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';

const SECRET = 'S3cr3t-Pa55w0rd';

/** Asserts loadConfig fails with a ConfigError naming `variable`, and returns its message. */
function refuses(env: Record<string, string>, variable: string): string {
  let message = '';
  assert.throws(() => loadConfig(env), (error: unknown) => {
    assert.ok(error instanceof ConfigError, `${JSON.stringify(env)}: expected a ConfigError, got ${String(error)}`);
    assert.equal(error.variable, variable);
    assert.ok(error.message.startsWith(`${variable}: `), `the message names the variable: ${error.message}`);
    assert.ok(!error.message.includes('\n'), 'one line');
    message = error.message;
    return true;
  }, JSON.stringify(env));
  return message;
}

describe('configuration (OPERATIONS "Configuration")', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.apiDomain, 'localhost');
    assert.deepEqual(config.countries, ['sg', 'my', 'uk', 'in', 'us', 'ca', 'au', 'nz']);
    assert.equal(config.databaseUrl, 'file:./data/listings.db');
    assert.equal(config.redisUrl, undefined);
    assert.equal(config.rateLimitPerMinute, 60);
    assert.equal(config.trustProxy, false);
    assert.equal(config.logLevel, 'info');
  });

  it('treats an empty or blank variable as unset', () => {
    const config = loadConfig({ PORT: '', HOST: '  ', API_DOMAIN: '', COUNTRIES: ' ', DATABASE_URL: '', REDIS_URL: '', RATE_LIMIT_PER_MINUTE: '', TRUST_PROXY: '', LOG_LEVEL: '' });
    assert.deepEqual(config, loadConfig({}));
  });

  it('reads good values, normalising case and whitespace', () => {
    const config = loadConfig({
      PORT: '8080', HOST: '0.0.0.0', API_DOMAIN: 'Example.COM', COUNTRIES: ' SG, my,,uk,sg ',
      DATABASE_URL: 'postgres://listings:pw@db.internal:5432/listings', REDIS_URL: 'redis://cache:6379',
      RATE_LIMIT_PER_MINUTE: '600', TRUST_PROXY: 'true', LOG_LEVEL: 'DEBUG',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.apiDomain, 'example.com');
    assert.deepEqual(config.countries, ['sg', 'my', 'uk']);
    assert.equal(config.databaseUrl, 'postgres://listings:pw@db.internal:5432/listings');
    assert.equal(config.redisUrl, 'redis://cache:6379');
    assert.equal(config.rateLimitPerMinute, 600);
    assert.deepEqual(config.trustProxy, { hops: 1 });
    assert.equal(config.logLevel, 'debug');
    assert.equal(loadConfig({ DATABASE_URL: 'file:/tmp/x.db' }).databaseUrl, 'file:/tmp/x.db');
    assert.equal(loadConfig({ DATABASE_URL: 'postgresql://h/db' }).databaseUrl, 'postgresql://h/db');
    assert.equal(loadConfig({ REDIS_URL: 'rediss://u:p@cache:6380/0' }).redisUrl, 'rediss://u:p@cache:6380/0');
    assert.equal(loadConfig({ PORT: '0' }).port, 0, 'port 0: any free port');
    assert.equal(loadConfig({ PORT: '65535' }).port, 65535);
    assert.equal(loadConfig({ RATE_LIMIT_PER_MINUTE: '1' }).rateLimitPerMinute, 1);
    for (const v of ['0', 'false', 'No', 'off']) assert.equal(loadConfig({ TRUST_PROXY: v }).trustProxy, false, v);
    for (const v of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) assert.equal(loadConfig({ LOG_LEVEL: v }).logLevel, v);
  });

  it('refuses a bad PORT', () => {
    for (const v of ['abc', '-1', '65536', '80.5', '0x50', '1e3', '3000abc', '+3000', '99999999999999999999']) refuses({ PORT: v }, 'PORT');
  });

  it('refuses a bad API_DOMAIN', () => {
    for (const v of ['bad_domain', 'http://example.com', '-x.com', 'x-.com', 'a..b', '.example.com', 'example.com.', 'exa mple.com', 'example.com:80']) {
      refuses({ API_DOMAIN: v }, 'API_DOMAIN');
    }
  });

  it('refuses COUNTRIES with an unknown country or none', () => {
    refuses({ COUNTRIES: 'xx' }, 'COUNTRIES');
    refuses({ COUNTRIES: 'sg,zz' }, 'COUNTRIES');
    refuses({ COUNTRIES: 'gb' }, 'COUNTRIES');
    refuses({ COUNTRIES: ',' }, 'COUNTRIES');
    refuses({ COUNTRIES: 'sg;my' }, 'COUNTRIES');
  });

  it('refuses a bad DATABASE_URL', () => {
    for (const v of ['sqlite.db', './data/listings.db', 'file:', 'mysql://u@h/db', 'postgres://', 'http://h/db']) refuses({ DATABASE_URL: v }, 'DATABASE_URL');
  });

  it('refuses a bad REDIS_URL', () => {
    for (const v of ['localhost:6379', 'not a url', 'http://cache:6379', 'redis//cache']) refuses({ REDIS_URL: v }, 'REDIS_URL');
  });

  it('refuses a bad RATE_LIMIT_PER_MINUTE', () => {
    for (const v of ['0', '-5', 'ten', '1.5', '60/min', '1000000001']) refuses({ RATE_LIMIT_PER_MINUTE: v }, 'RATE_LIMIT_PER_MINUTE');
  });

  it('issue 29 item 3: TRUST_PROXY is off, a number of proxy hops (1, true, yes, on: the one proxy in front), or the proxies\' addresses', () => {
    for (const v of ['1', 'true', 'YES', 'on', ' 1 ']) assert.deepEqual(loadConfig({ TRUST_PROXY: v }).trustProxy, { hops: 1 }, v);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '2' }).trustProxy, { hops: 2 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '16' }).trustProxy, { hops: 16 });
    // As Fastify's trustProxy string (proxy-addr): addresses, CIDR ranges, netmasks, named ranges, IPv6.
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.1' }).trustProxy, { addresses: ['10.0.0.1'] });
    assert.deepEqual(
      loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, 192.168.0.0/255.255.0.0,Loopback , fd00::/8,2001:DB8::1,10.0.0.0/8' }).trustProxy,
      { addresses: ['10.0.0.0/8', '192.168.0.0/255.255.0.0', 'loopback', 'fd00::/8', '2001:db8::1'] },
    );
    for (const v of ['uniquelocal', 'linklocal', '::1', '::ffff:10.0.0.1']) assert.deepEqual(loadConfig({ TRUST_PROXY: v }).trustProxy, { addresses: [v] }, v);
  });

  it('refuses a bad TRUST_PROXY, saying which forms it takes', () => {
    for (const v of ['maybe', 'enabled', '17', '99999999999999999999', '-1', '1.5e2', '10.0.0.256', '10.0.0.0/33', '10.0.0.0/0', '10.0.0.0/x', 'fe80::/129', '10.0.0.1,,10.0.0.2', '10.0.0.1,', 'loopback,2', '10.0.0.1 10.0.0.2', 'localhost']) {
      const message = refuses({ TRUST_PROXY: v }, 'TRUST_PROXY');
      assert.match(message, /number of proxy hops/, v);
      assert.match(message, /addresses\/CIDR ranges/, v);
    }
    assert.match(refuses({ TRUST_PROXY: '10.0.0.1,proxy.internal' }, 'TRUST_PROXY'), /invalid IP address: proxy\.internal/);
    assert.match(refuses({ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'), /invalid range on address: 10\.0\.0\.0\/33/);
  });

  it('refuses a bad LOG_LEVEL', () => {
    for (const v of ['verbose', 'information', '30']) refuses({ LOG_LEVEL: v }, 'LOG_LEVEL');
  });

  it('refuses bad values of the extra tuning variables', () => {
    for (const v of ['0', 'x', '1001']) refuses({ DATABASE_POOL_SIZE: v }, 'DATABASE_POOL_SIZE');
    for (const v of ['99', 'x', '600001']) refuses({ DATABASE_STATEMENT_TIMEOUT_MS: v }, 'DATABASE_STATEMENT_TIMEOUT_MS');
    for (const v of ['-1', 'x', '1.5', '86400001']) refuses({ IMPORT_STATEMENT_TIMEOUT_MS: v }, 'IMPORT_STATEMENT_TIMEOUT_MS');
    for (const v of ['-1', 'x', '3600001']) refuses({ READ_CACHE_TTL_MS: v }, 'READ_CACHE_TTL_MS');
    for (const v of ['0', 'x', '1.5', '65537']) refuses({ READ_CACHE_MAX_MB: v }, 'READ_CACHE_MAX_MB');
  });

  it('an import has no statement timeout of its own unless IMPORT_STATEMENT_TIMEOUT_MS gives one (issue 29, item 4)', () => {
    assert.equal(loadConfig({}).importStatementTimeoutMs, 0);
    assert.equal(loadConfig({}).databaseStatementTimeoutMs, 5000);
    assert.equal(loadConfig({ IMPORT_STATEMENT_TIMEOUT_MS: '600000' }).importStatementTimeoutMs, 600_000);
  });

  it('bounds the cached answers at 64 MiB unless told otherwise', () => {
    assert.equal(loadConfig({}).readCacheMaxMb, 64);
    assert.equal(loadConfig({ READ_CACHE_MAX_MB: '16' }).readCacheMaxMb, 16);
  });

  describe('API_DEPRECATIONS (D29)', () => {
    const LINK = 'https://developers.example.com/changelog#changes';
    const entry = (fields: Record<string, unknown>) => JSON.stringify([{ prefix: '/v1/listings/changes', since: '2026-12-01', link: LINK, ...fields }]);
    const refusal = (value: string) => refuses({ API_DEPRECATIONS: value }, 'API_DEPRECATIONS');

    it('is empty unless set: nothing in v1 is deprecated', () => {
      assert.deepEqual(loadConfig({}).apiDeprecations, []);
      assert.deepEqual(loadConfig({ API_DEPRECATIONS: '  ' }).apiDeprecations, []);
      assert.deepEqual(loadConfig({ API_DEPRECATIONS: '[]' }).apiDeprecations, []);
    });

    it('reads prefixes with since (Unix seconds), an optional sunset (epoch ms) and a link', () => {
      const config = loadConfig({
        API_DEPRECATIONS: JSON.stringify([
          { prefix: '/v1/listings/changes', since: '2026-12-01', sunset: '2027-12-01', link: LINK },
          { prefix: '/v1', since: '2026-12-01T09:30:00+08:00', link: 'https://Developers.Example.com/v2' },
        ]),
      });
      assert.deepEqual(config.apiDeprecations, [
        { prefix: '/v1/listings/changes', since: Date.parse('2026-12-01T00:00:00Z') / 1000, sunset: Date.parse('2027-12-01T00:00:00Z'), link: LINK },
        { prefix: '/v1', since: Date.parse('2026-12-01T01:30:00Z') / 1000, sunset: undefined, link: 'https://developers.example.com/v2' },
      ]);
      // Fractions of a second are dropped from the Unix seconds; a sunset exactly twelve months on is enough.
      assert.equal(loadConfig({ API_DEPRECATIONS: entry({ since: '2026-12-01T00:00:00.999Z', sunset: '2027-12-01T00:00:00.999Z' }) }).apiDeprecations[0]!.since, 1796083200);
    });

    it('refuses what is not a JSON array of objects, with one line that shows the format', () => {
      assert.match(refusal('{"prefix": "/v1/listings/changes"'), /^API_DEPRECATIONS: is not JSON \(.+\); expected e\.g\. \[\{"prefix": "\/v1\/listings\/changes", "since": "2026-12-01", "sunset": "2027-12-01", "link": "https:/);
      assert.match(refusal('/v1/listings/changes'), /^API_DEPRECATIONS: is not JSON/);
      assert.match(refusal('{"prefix": "/v1/listings/changes"}'), /^API_DEPRECATIONS: expected a JSON array of \{"prefix", "since", "sunset", "link"\} objects, e\.g\. /);
      assert.equal(refusal('["/v1/listings/changes"]'), 'API_DEPRECATIONS: entry 1: expected an object {"prefix", "since", "sunset", "link"}');
      assert.equal(refusal(entry({ until: '2027-12-01' })), 'API_DEPRECATIONS: entry 1: unknown field "until" (expected prefix, since, sunset, link)');
    });

    it('refuses a prefix outside /v1, or not a plain path of whole segments', () => {
      assert.equal(refusal(entry({ prefix: undefined })), 'API_DEPRECATIONS: entry 1: "prefix" is required, a path such as "/v1/listings/changes"');
      for (const prefix of ['/v2/listings', 'v1/listings', '/v10', '/openapi.json', '', '/']) {
        assert.equal(refusal(entry({ prefix })), `API_DEPRECATIONS: entry 1: prefix "${prefix}" must be /v1 or a path below it (e.g. /v1/listings/changes)`);
      }
      assert.match(refusal(entry({ prefix: '/v1/listings/' })), /: prefix "\/v1\/listings\/" has an empty segment \(no trailing or double slash\)$/);
      assert.match(refusal(entry({ prefix: '/v1//listings' })), /has an empty segment/);
      for (const [prefix, segment] of [['/v1/listings/:id', ':id'], ['/v1/listings/{id}', '{id}'], ['/v1/listings?sort=price', 'listings?sort=price'], ['/v1/*', '*'], ['/v1/../admin', '..']]) {
        assert.equal(refusal(entry({ prefix })), `API_DEPRECATIONS: entry 1: prefix "${prefix}" has the segment "${segment}"; use letters, digits and - . _ ~ (no parameters, query or wildcards)`);
      }
      const twice = JSON.stringify([JSON.parse(entry({}))[0], { ...JSON.parse(entry({}))[0], since: '2027-01-01' }]);
      assert.equal(refusal(twice), 'API_DEPRECATIONS: entry 2 (/v1/listings/changes): the prefix is given twice');
    });

    it('refuses a since or sunset that is not a real ISO 8601 date or date-time with a zone', () => {
      const form = 'is not an ISO 8601 date (2026-12-01) or date-time with a zone (2026-12-01T09:00:00Z)';
      assert.equal(refusal(entry({ since: undefined })), 'API_DEPRECATIONS: entry 1 (/v1/listings/changes): since is required, an ISO 8601 date (2026-12-01) or date-time (2026-12-01T09:00:00Z)');
      for (const since of ['2026-02-30', '2026-13-01', '01/12/2026', '2026-12-01T09:00:00', '2026-12-01T24:00:00Z', '2026-12-01 09:00:00Z', 'Tue, 01 Dec 2026 00:00:00 GMT', '2026-12-01T09:00:00+25:00']) {
        assert.equal(refusal(entry({ since })), `API_DEPRECATIONS: entry 1 (/v1/listings/changes): since "${since}" ${form}`);
      }
      assert.equal(refusal(entry({ since: 1796083200 })), `API_DEPRECATIONS: entry 1 (/v1/listings/changes): since "1796083200" ${form}`);
      assert.equal(refusal(entry({ sunset: '2027-11-31' })), `API_DEPRECATIONS: entry 1 (/v1/listings/changes): sunset "2027-11-31" ${form}`);
    });

    it('refuses a sunset less than twelve months after since: the versioning policy\'s promise', () => {
      assert.equal(
        refusal(entry({ sunset: '2027-11-30' })),
        'API_DEPRECATIONS: entry 1 (/v1/listings/changes): sunset 2027-11-30 is less than 12 months after since 2026-12-01; the versioning policy promises at least that',
      );
      assert.match(refusal(entry({ sunset: '2025-01-01' })), /sunset 2025-01-01 is less than 12 months after since/);
    });

    it('refuses a link that is not an absolute https URL, without echoing credentials', () => {
      assert.equal(refusal(entry({ link: undefined })), 'API_DEPRECATIONS: entry 1 (/v1/listings/changes): "link" is required, the https URL of a page saying what to use instead');
      assert.equal(refusal(entry({ link: '/changelog' })), 'API_DEPRECATIONS: entry 1 (/v1/listings/changes): link "/changelog" is not an absolute URL');
      assert.equal(refusal(entry({ link: 'http://developers.example.com/changelog' })), 'API_DEPRECATIONS: entry 1 (/v1/listings/changes): link "http://developers.example.com/changelog" must be an https URL');
      const withPassword = refusal(entry({ link: `https://user:${SECRET}@developers.example.com/` }));
      assert.equal(withPassword, 'API_DEPRECATIONS: entry 1 (/v1/listings/changes): link must not carry a user name or password');
    });
  });

  it('names the bad variable even when others are fine', () => {
    refuses({ PORT: '8080', LOG_LEVEL: 'loud', RATE_LIMIT_PER_MINUTE: '100' }, 'LOG_LEVEL');
  });

  it('never echoes a password of DATABASE_URL or REDIS_URL in an error (D20)', () => {
    const bad: Array<[string, string]> = [
      ['DATABASE_URL', `mysql://listings:${SECRET}@db.internal/listings`],
      ['DATABASE_URL', `postgres://listings:${SECRET}@db.internal:notaport/listings`],
      ['DATABASE_URL', `postgres://listings:${SECRET}@[db.internal/listings`],
      ['DATABASE_URL', `listings:${SECRET}@db.internal`],
      ['REDIS_URL', `http://default:${SECRET}@cache:6379`],
      ['REDIS_URL', `redis://default:${SECRET}@cache:notaport`],
      ['REDIS_URL', `default:${SECRET}@cache`],
      ['REDIS_URL', `memcached://:${SECRET}@cache:11211`],
    ];
    for (const [variable, value] of bad) {
      const message = refuses({ [variable]: value }, variable);
      assert.ok(!message.includes(SECRET), `${variable} error echoes the password: ${message}`);
    }
    // A good secret-bearing URL next to a bad variable does not appear in that variable's error.
    const message = refuses({ DATABASE_URL: `postgres://u:${SECRET}@h/db`, REDIS_URL: `redis://:${SECRET}@c:6379`, PORT: 'x' }, 'PORT');
    assert.ok(!message.includes(SECRET));
  });
});
