import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { refusedAddressReason } from '../../src/webhooks/address.js';
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

describe('webhook address check (D24, issue 40 item 8)', () => {
  // Refused whatever WEBHOOK_ALLOW_PRIVATE says: none is one host on the internet.
  const never = [
    '0.0.0.0', '0.1.2.3', '255.255.255.255', '224.0.0.1', '239.255.255.250', '240.0.0.1', '192.0.0.8', '192.0.2.1', '198.51.100.7', '203.0.113.9',
    '198.18.0.1', '198.19.255.255', '192.88.99.1', '::', 'ff02::1', 'ff05::1:3', '::7f00:1', '::a00:1', 'fec0::1', '2001:db8::1', '3fff::1', '2001::1',
    '2002:7f00:1::1', '2002:5db8:d822::1', '64:ff9b:1::a00:1', '::ffff:0:7f00:1', '100::1', '5f00::1', '::ffff:255.255.255.255', '64:ff9b::e000:1',
    '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::a00:1',
  ];
  // Refused unless WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local (cloud metadata), shared address space.
  const privateOnly = [
    '127.0.0.1', '127.255.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '100.127.255.254',
    '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '::FFFF:10.0.0.1',
  ];
  const global = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '172.15.255.255', '192.169.0.1', '100.128.0.1', '198.20.0.1', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8', '64:ff9b::808:808', '2a00:1450:4001:82a::200e'];

  it('refuses unspecified, broadcast, multicast, reserved, documentation, benchmarking, IPv4-compatible, site-local, 6to4 and NAT64 local-use in both modes', () => {
    for (const address of never) {
      assert.match(refusedAddressReason(address, false) ?? '', /special-purpose range/, address);
      assert.match(refusedAddressReason(address, true) ?? '', /special-purpose range/, address);
    }
  });
  it('refuses loopback, private, link-local and shared addresses, however written, unless WEBHOOK_ALLOW_PRIVATE', () => {
    for (const address of privateOnly) {
      assert.match(refusedAddressReason(address, false) ?? '', /allowed only with WEBHOOK_ALLOW_PRIVATE/, address);
      assert.equal(refusedAddressReason(address, true), undefined, address);
    }
  });
  it('allows global addresses, an IPv4 one written as IPv6 (mapped, NAT64) too', () => {
    for (const address of global) {
      assert.equal(refusedAddressReason(address, false), undefined, address);
      assert.equal(refusedAddressReason(address, true), undefined, address);
    }
  });
  it('refuses this host\'s own addresses unless WEBHOOK_ALLOW_PRIVATE', () => {
    const own = Object.values(networkInterfaces()).flatMap((list) => list ?? []).map((i) => i.address);
    for (const address of own) {
      const reason = refusedAddressReason(address, false) ?? '';
      assert.match(reason, /this host's own address|special-purpose range/, address);
      if (!/special-purpose/.test(reason)) assert.equal(refusedAddressReason(address, true), undefined, address);
    }
  });
  it('a URL whose host is an address no deployment may send to is refused when it is added', () => {
    for (const host of ['255.255.255.255', '224.0.0.1', '[ff02::1]', '0.0.0.0', '[::]', '192.0.2.1', '240.0.0.1', '4294967295']) {
      assert.match(webhookUrlProblem(`https://${host}/hook`) ?? '', /special-purpose range "[^"]+", not one host on the internet/, host);
    }
    for (const url of ['https://10.0.0.5/hook', 'https://93.184.216.34/hook', 'http://127.0.0.1:8080/hook', 'https://[2606:2800:220:1::1]/hook']) assert.equal(webhookUrlProblem(url), undefined, url);
  });
});
