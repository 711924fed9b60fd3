import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeOrigin, parseOrigin, validateOriginToRegister } from '../../src/cors/origin.js';

describe('normalizeOrigin (D17)', () => {
  it('lowercases scheme and host', () => {
    assert.equal(normalizeOrigin('HTTPS://WWW.Example.COM'), 'https://www.example.com');
    assert.equal(normalizeOrigin('Http://LocalHost:5173'), 'http://localhost:5173');
    assert.equal(normalizeOrigin('https://www.example.com'), 'https://www.example.com');
  });

  it('drops the default port (80 for http, 443 for https) and keeps any other', () => {
    assert.equal(normalizeOrigin('https://example.com:443'), 'https://example.com');
    assert.equal(normalizeOrigin('http://example.com:80'), 'http://example.com');
    assert.equal(normalizeOrigin('https://example.com:80'), 'https://example.com:80');
    assert.equal(normalizeOrigin('http://example.com:443'), 'http://example.com:443');
    assert.equal(normalizeOrigin('https://example.com:8443'), 'https://example.com:8443');
    assert.equal(normalizeOrigin('http://localhost:5173'), 'http://localhost:5173');
    assert.equal(normalizeOrigin('https://example.com:1'), 'https://example.com:1');
    assert.equal(normalizeOrigin('https://example.com:65535'), 'https://example.com:65535');
  });

  it('accepts IP literals: IPv4 and bracketed IPv6 (lowercased, default port dropped)', () => {
    assert.equal(normalizeOrigin('http://127.0.0.1:3000'), 'http://127.0.0.1:3000');
    assert.equal(normalizeOrigin('http://[::1]:8080'), 'http://[::1]:8080');
    assert.equal(normalizeOrigin('http://[::1]:80'), 'http://[::1]');
    assert.equal(normalizeOrigin('https://[2001:DB8::1]'), 'https://[2001:db8::1]');
    assert.equal(normalizeOrigin('https://[2001:db8::1]:443'), 'https://[2001:db8::1]');
  });

  it('writes an IPv6 literal the way browsers serialise it, so the same address always matches', () => {
    // Browsers send the compressed lowercase form (WHATWG URL); a longhand registration must match it.
    assert.equal(normalizeOrigin('http://[0:0:0:0:0:0:0:1]:3000'), 'http://[::1]:3000');
    assert.equal(normalizeOrigin('https://[2001:0DB8:0000:0000:0000:0000:0000:0001]'), 'https://[2001:db8::1]');
  });

  it('rejects malformed IPv6 literals', () => {
    for (const value of ['http://[::1', 'http://::1', 'http://[zz::1]', 'http://[:]', 'http://[1.2.3.4]', 'http://[::1::2]', 'http://[12345::1]', 'http://[]']) {
      assert.equal(normalizeOrigin(value), undefined, value);
    }
  });

  it('rejects paths, queries, fragments, userinfo, wildcards, "null", other schemes and bad ports', () => {
    const rejected = [
      'https://example.com/', 'https://example.com/path', 'https://example.com/?q=1', 'https://example.com?q=1',
      'https://example.com#top', 'https://user@example.com', 'https://user:pw@example.com', 'https://*.example.com',
      'https://*', '*', 'null', 'NULL', 'ftp://example.com', 'ws://example.com', 'wss://example.com', 'file:///etc/passwd',
      'javascript:alert(1)', 'data:text/html,x', 'chrome-extension://abcdef', 'https://example.com:0',
      'https://example.com:65536', 'https://example.com:99999', 'https://example.com:123456', 'https://example.com:',
      'https://example.com:-1', 'https://example.com:http', 'example.com', '//example.com', 'https://', 'https:example.com',
      '', ' ', ' https://example.com', 'https://example.com ', 'https://exa mple.com', 'https://-bad.example.com',
      'https://bad-.example.com', 'https://exa_mple.com', 'https://example..com', 'https://bücher.de', 'https://example.com\n',
    ];
    for (const value of rejected) assert.equal(normalizeOrigin(value), undefined, JSON.stringify(value));
  });

  it('accepts punycode hosts (what browsers send for IDNs)', () => {
    assert.equal(normalizeOrigin('https://xn--bcher-kva.de'), 'https://xn--bcher-kva.de');
  });

  it('parseOrigin reports scheme, host and the non-default port', () => {
    assert.deepEqual(parseOrigin('HTTPS://Example.com:8443'), { scheme: 'https', host: 'example.com', port: '8443', origin: 'https://example.com:8443' });
    assert.deepEqual(parseOrigin('http://example.com:80'), { scheme: 'http', host: 'example.com', port: undefined, origin: 'http://example.com' });
  });

  it('normalising twice changes nothing', () => {
    for (const value of ['HTTPS://WWW.Example.COM:443', 'http://[::1]:80', 'http://LOCALHOST:5173']) {
      const once = normalizeOrigin(value)!;
      assert.equal(normalizeOrigin(once), once);
    }
  });
});

describe('validateOriginToRegister', () => {
  const ok = (input: string, origin: string) => assert.deepEqual(validateOriginToRegister(input), { origin }, input);
  const bad = (input: string, words: RegExp) => {
    const result = validateOriginToRegister(input);
    assert.ok('error' in result, `${JSON.stringify(input)} should be refused, got ${JSON.stringify(result)}`);
    assert.match(result.error, words, `${JSON.stringify(input)}: ${result.error}`);
    assert.ok(!result.error.includes('\n'), 'one line');
  };

  it('accepts https origins, normalised', () => {
    ok('https://www.example.com', 'https://www.example.com');
    ok('HTTPS://Shop.Example.COM:443', 'https://shop.example.com');
    ok('https://staging.example.com:8443', 'https://staging.example.com:8443');
    ok('https://203.0.113.5', 'https://203.0.113.5');
  });

  it('accepts plain http only for loopback hosts: localhost, *.localhost, 127.0.0.1, [::1]', () => {
    ok('http://localhost:5173', 'http://localhost:5173');
    ok('http://localhost', 'http://localhost');
    ok('http://LOCALHOST:80', 'http://localhost');
    ok('http://app.localhost:3000', 'http://app.localhost:3000');
    ok('http://127.0.0.1:8080', 'http://127.0.0.1:8080');
    ok('http://[::1]:3000', 'http://[::1]:3000');
    ok('http://[0:0:0:0:0:0:0:1]:3000', 'http://[::1]:3000');
    ok('https://localhost:5173', 'https://localhost:5173');
  });

  it('refuses plain http elsewhere, saying https is required', () => {
    for (const value of ['http://www.example.com', 'http://example.com:8080', 'http://localhost.example.com', 'http://mylocalhost',
      'http://127.0.0.2', 'http://10.0.0.1', 'http://[::2]', 'http://localhost-evil.com']) {
      bad(value, /must use https/);
    }
  });

  it('forgives one trailing slash and surrounding whitespace', () => {
    ok('https://www.example.com/', 'https://www.example.com');
    ok('http://localhost:5173/', 'http://localhost:5173');
    ok('  https://www.example.com/  ', 'https://www.example.com');
    bad('https://www.example.com//', /path, query or fragment/);
  });

  it('explains what is wrong: path, query, fragment, wildcard, null, empty, not an origin', () => {
    bad('https://www.example.com/shop', /path, query or fragment/);
    bad('https://www.example.com/?a=1', /path, query or fragment/);
    bad('https://www.example.com?a=1', /path, query or fragment/);
    bad('https://www.example.com#x', /path, query or fragment/);
    bad('https://*.example.com', /wildcard/);
    bad('*', /wildcard/);
    bad('null', /"null" can never be allowed/);
    bad('', /empty/);
    bad('   ', /empty/);
    bad('/', /not an origin/);
    bad('ftp://files.example.com', /not an origin/);
    bad('www.example.com', /not an origin.*scheme:\/\/host\[:port\]/);
    bad('https://user:secret@example.com', /no user name or password/);
    bad('https://example.com:0', /not an origin/);
    bad('https://example.com:70000', /not an origin/);
    bad('http://[::1', /not an origin/);
    bad('https://[1.2.3.4]', /not an origin/);
  });

  it('quotes the input in its error so the operator sees which origin was refused', () => {
    const result = validateOriginToRegister('http://shop.example.com');
    assert.ok('error' in result && result.error.includes('"http://shop.example.com"'));
  });

  it('refuses an origin with credentials without echoing them (D20)', () => {
    const result = validateOriginToRegister('https://bob:s3cret-pass@shop.example.com');
    assert.ok('error' in result, 'refused');
    assert.doesNotMatch(result.error, /s3cret-pass|bob/);
  });
});
