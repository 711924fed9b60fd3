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

  it('fetch-style: headers are checked and Content-Length capped before the body is read; a body that streams past the cap is 413; a failing body is 400, never a rejection', async () => {
    const errors: unknown[] = [];
    const handler = createWebhookHandler({ secret: SECRET, onChange: () => {}, onError: (e) => void errors.push(e), maxBodyBytes: 1024 });
    const now = Math.floor(Date.now() / 1000);
    let pulled = 0;
    /** A body that counts how often it is read, `size` bytes in chunks of 256, or one that fails. */
    const stream = (size: number, fail = false) => new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (fail) return controller.error(new Error('connection reset'));
        if (size <= 0) return controller.close();
        controller.enqueue(new Uint8Array(Math.min(256, size)).fill(0x20));
        size -= 256;
      },
    }, { highWaterMark: 0 }); // read only when asked
    const post = (headers: Record<string, string>, content: ReadableStream<Uint8Array>) =>
      handler(new Request('http://site.test/hooks', { method: 'POST', headers, body: content, duplex: 'half' } as RequestInit));
    const { 'webhook-signature': _omitted, ...unsigned } = signed(SECRET, now);
    const missing = await post(unsigned, stream(10_000));
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { error: 'missing_headers', message: (errors[0] as Error).message });
    const tooLong = await post({ ...signed(SECRET, now), 'content-length': '5000' }, stream(5000));
    assert.equal(tooLong.status, 413);
    assert.equal(pulled, 0, 'neither body was read');
    assert.equal((await post(signed(SECRET, now), stream(10_000))).status, 413);
    assert.ok(pulled <= 6, `read ${pulled} chunks of 256 bytes for a cap of 1024`);
    assert.equal((await post(signed(SECRET, now), stream(0, true))).status, 400);
    assert.deepEqual(errors.map((e) => (e as WebhookVerificationError).reason), ['missing_headers', 'body_too_large', 'body_too_large', 'incomplete_body']);
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
