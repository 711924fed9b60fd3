import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { forbiddenAddress } from '../../src/webhooks/address.js';
import { newWebhookSecret, signatureHeaders, signWith } from '../../src/webhooks/signature.js';
import { webhookUrlProblem } from '../../src/webhooks/url.js';

describe('webhook signatures (D24, Standard Webhooks)', () => {
  const body = JSON.stringify({ type: 'listings.changed', timestamp: '2026-11-27T10:00:00.000Z', data: { country: 'sg', upserted: ['a'], removed: [] } });

  it('a secret is whsec_ and the base64 of 32 random bytes', () => {
    const secret = newWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
    assert.notEqual(newWebhookSecret(), secret);
  });

  it('the standardwebhooks package verifies every message, and refuses an edited one', () => {
    const secret = newWebhookSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders([secret], 'msg_1', now, body);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(secret).verify(body.replace('"a"', '"b"'), headers));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), 'another secret');
    assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_2' }), 'another id');
  });

  it('during a rotation both secrets sign, and either verifies', () => {
    const [next, previous] = [newWebhookSecret(), newWebhookSecret()];
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders([next, previous], 'msg_9', now, body);
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    assert.ok(new Webhook(next).verify(body, headers));
    assert.ok(new Webhook(previous).verify(body, headers));
  });

  it('a signature is v1, and the base64 HMAC-SHA256 of id.timestamp.body under the decoded secret', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const expected = createHmac('sha256', Buffer.alloc(32, 7)).update('msg_x.1700000000.{}').digest('base64');
    assert.equal(signWith(secret, 'msg_x', 1700000000, '{}'), `v1,${expected}`);
  });
});

describe('webhook URL rules (D24)', () => {
  const refused: Array<[string, RegExp]> = [
    ['not a url', /not an absolute URL/],
    ['/relative/path', /not an absolute URL/],
    ['ftp://example.com/hook', /scheme is "ftp"; use https/],
    ['http://example.com/hook', /uses http; use https/],
    ['http://10.0.0.5/hook', /uses http; use https/],
    ['https://user:pass@example.com/hook', /user name or password/],
    ['https://user@example.com/hook', /user name or password/],
    ['https://example.com/hook#part', /fragment/],
    ['https://example.com/hook#', /fragment/],
    [`https://example.com/${'a'.repeat(2000)}`, /at most 2000/],
  ];
  for (const [url, message] of refused) {
    it(`refuses ${url.slice(0, 60)}`, () => {
      assert.match(webhookUrlProblem(url) ?? '', message);
    });
  }
  it('accepts https anywhere, and http for loopback hosts only', () => {
    for (const url of ['https://example.com/hook', 'https://hooks.example.com:8443/a?b=c', 'http://localhost:3000/hook', 'http://site.localhost/hook', 'http://127.0.0.1:9/x', 'http://127.8.9.10/x', 'http://[::1]:8080/x']) {
      assert.equal(webhookUrlProblem(url), undefined, url);
    }
    assert.equal(webhookUrlProblem(`https://example.com/${'a'.repeat(2000 - 'https://example.com/'.length)}`), undefined, 'exactly 2000');
  });
});

describe('webhook address check (D24)', () => {
  it('refuses loopback, private, link-local (cloud metadata) and unspecified addresses, IPv4 written as IPv6 too', () => {
    for (const address of ['127.0.0.1', '127.255.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '0.0.0.0', '0.1.2.3', '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '::FFFF:10.0.0.1']) {
      assert.ok(forbiddenAddress(address), address);
    }
  });
  it('allows public addresses', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '172.15.255.255', '192.169.0.1', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8']) {
      assert.equal(forbiddenAddress(address), undefined, address);
    }
  });
});
