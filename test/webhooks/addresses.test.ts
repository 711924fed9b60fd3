import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { neverAllowedReason } from '../../src/webhooks/address.js';
import { sendAttempt } from '../../src/webhooks/send.js';
import { startReceiver, type Receiver, type Received } from '../support/webhook-receiver.js';

/**
 * Issue 40 item 8 (D24): which addresses a webhook connects to, and what a failed attempt tells,
 * through real listening servers. Names resolve through the attempt's injected resolver to the
 * address under test; nothing is looked up in DNS.
 */
describe('webhook addresses (D24, issue 40 item 8)', () => {
  let receiver: Receiver;
  let hookUrl: string;

  before(async () => {
    // On every address of this host (IPv4 too, as IPv4-mapped): whatever address a check lets
    // through to this host reaches it.
    receiver = await startReceiver('::');
    hookUrl = `http://hooks.localhost:${receiver.port}/hooks/listings`;
  });
  after(async () => {
    await receiver.close();
  });

  const attempt = (address: string, allowPrivate: boolean) => sendAttempt(hookUrl, {}, '{}', { allowPrivate, resolve: async () => [address], timeoutMs: 2000 });

  it('shared (100.64.0.0/10), benchmarking, NAT64 and 6to4 of loopback, IPv4-compatible and site-local addresses are refused, in both modes', async () => {
    const everywhere = ['198.18.0.1', '198.19.255.254', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '2002:7f00:1::1', '::7f00:1', 'fec0::1', '240.0.0.1', '192.0.2.1'];
    for (const allowPrivate of [false, true]) {
      for (const address of everywhere) {
        const outcome = await attempt(address, allowPrivate);
        assert.equal(outcome.error, 'refused address', `${address} allowPrivate=${allowPrivate}: ${outcome.detail}`);
        assert.match(outcome.detail ?? '', /special-purpose range/, address);
      }
    }
    for (const address of ['100.64.0.1', '100.127.1.2', '::ffff:100.64.0.1', '::ffff:10.0.0.1']) {
      const outcome = await attempt(address, false);
      assert.equal(outcome.error, 'refused address', `${address}: ${outcome.detail}`);
      assert.match(outcome.detail ?? '', /non-global range "(carrierGradeNat|private)" \(allowed only with WEBHOOK_ALLOW_PRIVATE\)/, address);
    }
    assert.equal(receiver.received.length, 0);
  });

  it('loopback written as IPv4-mapped IPv6: refused unless WEBHOOK_ALLOW_PRIVATE, which delivers to it', async () => {
    const refused = await attempt('::ffff:127.0.0.1', false);
    assert.equal(refused.error, 'refused address');
    assert.equal(receiver.received.length, 0);
    const sent = await attempt('::ffff:127.0.0.1', true);
    assert.equal(sent.status, 204);
    assert.equal(receiver.received.length, 1);
  });

  it('this host\'s own addresses: refused unless WEBHOOK_ALLOW_PRIVATE, which delivers to them', async (t) => {
    // Link-local ones need an interface named to connect; special-purpose ones are refused in both modes.
    const own = Object.values(networkInterfaces()).flatMap((list) => list ?? [])
      .filter((i) => !i.internal && !i.address.startsWith('fe80:') && neverAllowedReason(i.address) === undefined).map((i) => i.address);
    if (own.length === 0) return t.skip('this host has no address but loopback, link-local and special-purpose ones');
    for (const address of own) {
      const before = receiver.received.length;
      const refused = await attempt(address, false);
      assert.equal(refused.error, 'refused address', address);
      assert.match(refused.detail ?? '', /this host's own address/, address);
      assert.equal(receiver.received.length, before, 'nothing sent');
      const sent = await attempt(address, true);
      assert.equal(sent.status, 204, `${address}: ${sent.detail}`);
      assert.equal(receiver.received.length, before + 1);
    }
  });
});

describe('webhooks over TLS: the certificate is checked against the name (D24, issue 40 item 8)', () => {
  let dir: string;
  let ca: string;
  let port: number;
  let plainPort: number;
  const received: Received[] = [];
  let close: () => Promise<void>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    // A self-signed certificate for hooks.localhost, made now (never committed), trusted only when the attempt is given it.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=hooks.localhost',
      '-addext', 'subjectAltName=DNS:hooks.localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
    const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: ca }, (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => void (body += c.toString()));
      req.on('end', () => {
        received.push({ url: req.url ?? '', headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    const plain = await startReceiver();
    plainPort = plain.port;
    close = async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await plain.close();
    };
  });
  after(async () => {
    await close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (url: string, trusted: boolean) => sendAttempt(url, {}, '{"type":"webhook.test"}', { allowPrivate: true, resolve: async () => ['127.0.0.1'], ca: trusted ? ca : undefined });

  it('a trusted certificate for the name: delivered over TLS, Host and SNI the name', async () => {
    const outcome = await send(`https://hooks.localhost:${port}/hooks?x=1`, true);
    assert.equal(outcome.status, 204, outcome.detail);
    assert.equal(received.length, 1);
    assert.equal(received[0]!.headers.host, `hooks.localhost:${port}`);
    assert.equal(received[0]!.body, '{"type":"webhook.test"}');
  });

  it('an untrusted certificate, one for another name, or no TLS at all: "TLS error", nothing sent', async () => {
    const cases: Array<[string, boolean, RegExp]> = [
      [`https://hooks.localhost:${port}/hooks`, false, /SELF_SIGNED/],
      [`https://other.localhost:${port}/hooks`, true, /ALTNAME/],
      [`https://hooks.localhost:${plainPort}/hooks`, true, /SSL|TLS|EPROTO|ECONNRESET/],
    ];
    for (const [url, trusted, detail] of cases) {
      const outcome = await send(url, trusted);
      assert.deepEqual([outcome.status, outcome.error], [undefined, 'TLS error'], url);
      assert.match(outcome.detail ?? '', detail, url);
    }
    assert.equal(received.length, 1, 'only the trusted attempt above');
  });
});
