import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createWebhookHandler, verifyWebhook, WebhookVerificationError, type WebhookMessage } from '@listings-api/sdk';

/** verifyWebhook and createWebhookHandler against messages signed by the standardwebhooks package (what the API's signatures are tested against). */

const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
const NOW = 1_795_341_600;
const message = { type: 'listings.changed', timestamp: '2026-11-21T09:30:01.204Z', data: { country: 'sg', upserted: ['a'], removed: ['b'] } };
const body = JSON.stringify(message);

function signed(secret = SECRET, at = NOW, id = 'msg_1', text = body): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': new Webhook(secret).sign(id, new Date(at * 1000), text) };
}

async function refused(promise: Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => error instanceof WebhookVerificationError && error.reason === reason);
}

describe('verifyWebhook', () => {
  it('returns the typed message of a valid signature, from a string, bytes, or a Headers object', async () => {
    assert.deepEqual(await verifyWebhook(body, signed(), SECRET, { now: NOW }), message);
    assert.deepEqual(await verifyWebhook(new TextEncoder().encode(body), new Headers(signed()), SECRET, { now: NOW + 299 }), message);
    const typed: WebhookMessage = await verifyWebhook(body, signed(), SECRET, { now: NOW });
    if (typed.type === 'listings.changed') assert.deepEqual(typed.data.upserted, ['a']);
  });

  it('accepts either of two signatures (the API signs with both after a rotation), and any of several secrets', async () => {
    const both = { ...signed(OTHER), 'webhook-signature': `${signed(OTHER)['webhook-signature']} ${signed(SECRET)['webhook-signature']}` };
    assert.deepEqual(await verifyWebhook(body, both, SECRET, { now: NOW }), message);
    assert.deepEqual(await verifyWebhook(body, signed(OTHER), [SECRET, OTHER], { now: NOW }), message);
  });

  it('refuses an edited body, another id, another secret, a missing header, a stale or future timestamp, a malformed secret', async () => {
    await refused(verifyWebhook(body.replace('"a"', '"c"'), signed(), SECRET, { now: NOW }), 'bad_signature');
    await refused(verifyWebhook(body, { ...signed(), 'webhook-id': 'msg_2' }, SECRET, { now: NOW }), 'bad_signature');
    await refused(verifyWebhook(body, signed(OTHER), SECRET, { now: NOW }), 'bad_signature');
    await refused(verifyWebhook(body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW) }, SECRET, { now: NOW }), 'missing_headers');
    await refused(verifyWebhook(body, signed(), SECRET, { now: NOW + 301 }), 'stale_timestamp');
    await refused(verifyWebhook(body, signed(), SECRET, { now: NOW - 301 }), 'stale_timestamp');
    await refused(verifyWebhook(body, signed(), 'not-a-secret', { now: NOW }), 'bad_secret');
  });
});

describe('createWebhookHandler', () => {
  it('fetch-style: calls onChange with the ids and answers 204; a bad signature is 400 and calls nothing; GET is 405', async () => {
    const changes: unknown[] = [];
    const errors: unknown[] = [];
    const handler = createWebhookHandler({ secret: SECRET, onChange: (change) => void changes.push(change), onError: (e) => void errors.push(e) });
    const now = Math.floor(Date.now() / 1000);
    const post = (headers: Record<string, string>) => handler(new Request('http://site.test/hooks', { method: 'POST', headers, body }));
    assert.equal((await post(signed(SECRET, now))).status, 204);
    assert.deepEqual(changes, [{ country: 'sg', upserted: ['a'], removed: ['b'] }]);
    assert.equal((await post(signed(OTHER, now))).status, 400);
    assert.equal(changes.length, 1);
    assert.ok(errors[0] instanceof WebhookVerificationError);
    assert.equal((await handler(new Request('http://site.test/hooks'))).status, 405);
  });

  it('a failing onChange is 500, so that the API sends the message again', async () => {
    const handler = createWebhookHandler({ secret: SECRET, onChange: () => { throw new Error('rebuild failed'); } });
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await handler(new Request('http://site.test/hooks', { method: 'POST', headers: signed(SECRET, now), body }))).status, 500);
  });

  it('node:http: reads the raw body itself', async () => {
    const changes: unknown[] = [];
    const handler = createWebhookHandler({ secret: SECRET, onChange: (change) => void changes.push(change) });
    const server = createServer((req, res) => void handler.node(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const now = Math.floor(Date.now() / 1000);
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, { method: 'POST', headers: signed(SECRET, now), body });
      assert.equal(response.status, 204);
      assert.deepEqual(changes, [{ country: 'sg', upserted: ['a'], removed: ['b'] }]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
