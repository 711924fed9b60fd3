import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { Webhook } from 'standardwebhooks';
import { createWebhookHandler, WebhookVerificationError, type WebhookHandler, type WebhookHandlerOptions } from '@listings-api/sdk';
import { until } from '../support/until.js';
import { unendedPost, unfinishedRequest } from './helpers.js';

/**
 * The SDK's webhook receiver mounted on node:http exactly as its README says,
 * `createServer(webhook.node)`, so that whatever `node` returns is dropped by node:http: what one
 * request can do to the process that mounts it (issue 40 item 4). A body cut short, a body too
 * large (by its Content-Length or as it streams), headers missing or malformed: each is answered
 * (or, with the client gone, reported to onError), and nothing rejects into the void. A
 * process-level hook sees every unhandled rejection.
 */
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const message = { type: 'listings.changed', timestamp: '2026-11-21T09:30:01.204Z', data: { country: 'sg', upserted: ['a'], removed: [] } };
const body = JSON.stringify(message);

function signed(text = body, at = Math.floor(Date.now() / 1000)): Record<string, string> {
  return { 'webhook-id': 'msg_1', 'webhook-timestamp': String(at), 'webhook-signature': new Webhook(SECRET).sign('msg_1', new Date(at * 1000), text) };
}

/** A request head: the request line, Host, and the given headers. */
function head(lines: Record<string, string>, method = 'POST'): string {
  return [`${method} /webhooks/listings HTTP/1.1`, 'Host: www.example.test', ...Object.entries(lines).map(([name, value]) => `${name}: ${value}`)].join('\r\n');
}

// A compile-time check: what `node` returns is nothing a server could drop (a promise that may reject).
const nothingToDrop: ReturnType<WebhookHandler['node']> extends PromiseLike<unknown> ? false : true = true;

describe('the webhook receiver on node:http, mounted as the README says (issue 40 item 4)', () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => void unhandled.push(reason);
  before(() => process.on('unhandledRejection', record));
  after(() => process.off('unhandledRejection', record));

  const servers: Server[] = [];
  after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  async function receiver(options: Partial<WebhookHandlerOptions> = {}) {
    const changes: unknown[] = [];
    const errors: unknown[] = [];
    const webhook = createWebhookHandler({
      secret: SECRET,
      onChange: (change) => void changes.push(change),
      onError: (error) => void errors.push(error),
      ...options,
    });
    const server = createServer(webhook.node);
    const open = new Set<Socket>();
    server.on('connection', (socket: Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    /** A whole, well-signed message: the receiver still works. */
    const deliver = async () => (await fetch(`http://127.0.0.1:${port}/webhooks/listings`, { method: 'POST', headers: signed(), body })).status;
    /** Resolves once the server has seen each of its connections close, and the event loop has run what that set off. */
    const settled = async () => {
      await until(() => open.size === 0, { what: 'the receiver to see its connections close', timeoutMs: 5000 });
      await afterTurn();
    };
    return { port, changes, errors, deliver, settled };
  }
  /** One turn of the event loop: rejections left unhandled by what ran before are told by then. */
  const afterTurn = () => new Promise((resolve) => setImmediate(resolve));
  const reasons = (errors: unknown[]) => errors.map((e) => (e instanceof WebhookVerificationError ? e.reason : String(e)));

  it('`node` returns nothing (compile time and run time), so a server cannot drop a rejection', async () => {
    assert.equal(nothingToDrop, true);
    const webhook = createWebhookHandler({ secret: SECRET, onChange: () => {} });
    const returned: unknown[] = [];
    const server = createServer((req, res) => void returned.push(webhook.node(req, res)));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { method: 'POST', headers: signed(), body });
    assert.equal(res.status, 204);
    assert.deepEqual(returned, [undefined]);
  });

  it('a body cut short (the client gives up mid-body) is reported, and the process carries on', async () => {
    const { port, errors, deliver, settled } = await receiver();
    // Headers that pass, a Content-Length of 1000, two bytes, then the client is gone.
    const cut = await unfinishedRequest(port, head({ ...signed(), 'Content-Type': 'application/json', 'Content-Length': '1000' }), '{}', 200);
    assert.equal(cut.status, undefined, 'nothing to answer before the body is whole');
    await settled();
    assert.deepEqual(reasons(errors), ['incomplete_body']);
    // An onError that throws changes nothing either.
    const throwing = await receiver({ onError: () => { throw new Error('a logger that fails'); } });
    await unfinishedRequest(throwing.port, head({ ...signed(), 'Content-Length': '1000' }), '{}', 200);
    await throwing.settled();
    assert.deepEqual(unhandled, []);
    assert.equal(await deliver(), 204);
    assert.equal(await throwing.deliver(), 204);
  });

  it('the issue\'s curl (Content-Length 1000, 2 bytes sent, no signature headers) is a 400 at once, before the body', async () => {
    const { port, errors, changes, deliver, settled } = await receiver();
    const curl = await unfinishedRequest(port, head({ 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': '1000' }), '{}', 1000);
    assert.equal(curl.status, 400, curl.text);
    assert.ok(curl.answeredAfterMs! < 1000, 'answered while the body was still coming');
    assert.match(curl.text, /"error":"missing_headers"/);
    await settled();
    assert.deepEqual(reasons(errors), ['missing_headers']);
    assert.deepEqual(unhandled, []);
    assert.equal(await deliver(), 204);
    assert.equal(changes.length, 1);
  });

  it('missing or malformed signature headers, a stale timestamp or another method: refused before the body is read', async () => {
    const { port, errors, settled } = await receiver();
    const good = signed();
    const cases: Array<[Record<string, string>, string, number, string]> = [
      [{ 'webhook-id': good['webhook-id']!, 'webhook-timestamp': good['webhook-timestamp']! }, 'POST', 400, 'missing_headers'],
      [{ ...good, 'webhook-signature': 'v2,c2lnbmF0dXJl' }, 'POST', 400, 'bad_signature'],
      [{ ...good, 'webhook-signature': 'v1,not-base64!' }, 'POST', 400, 'bad_signature'],
      [{ ...good, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) }, 'POST', 400, 'stale_timestamp'],
      [{ ...good, 'webhook-timestamp': 'soon' }, 'POST', 400, 'stale_timestamp'],
      [good, 'PUT', 405, 'method_not_allowed'],
    ];
    for (const [headers, method, status, code] of cases) {
      // A Content-Length of 1 MB and no body at all: an answer can only come before reading it.
      const answer = await unfinishedRequest(port, head({ ...headers, 'Content-Length': '1000000' }, method), '', 1000);
      assert.equal(answer.status, status, `${code}: ${answer.text}`);
      assert.match(answer.text, new RegExp(`"error":"${code}"`));
      assert.match(answer.text, /\r\nconnection: close\r\n/i, 'the unread body is not waited for');
    }
    assert.equal(errors.length, 5, 'each refused message is reported (not the 405)');
    await settled();
    assert.deepEqual(unhandled, []);
  });

  it('a body over the cap: 413 from its Content-Length before reading (700 MB), or as it streams; the cap is configurable', async () => {
    const { port, errors, deliver, settled } = await receiver();
    const huge = await unfinishedRequest(port, head({ ...signed(), 'Content-Length': String(700 * 1024 * 1024) }), '{"type":', 1000);
    assert.equal(huge.status, 413, huge.text);
    assert.match(huge.text, /"error":"body_too_large"/);
    // No Content-Length (chunked): read up to the default cap, 1 MiB, then refused with the body
    // still unfinished (it never ends: a receiver that waited for its end would not answer).
    assert.equal(await unendedPost(port, '/webhooks/listings', signed(), 1024 * 1024 + 64 * 1024, 10_000), 413);
    await settled();
    assert.deepEqual(reasons(errors), ['body_too_large', 'body_too_large']);
    assert.equal(await deliver(), 204);

    // maxBodyBytes: a message of exactly the cap is taken, one byte more is refused.
    const exact = await receiver({ maxBodyBytes: Buffer.byteLength(body) });
    assert.equal(await exact.deliver(), 204);
    const under = await receiver({ maxBodyBytes: Buffer.byteLength(body) - 1 });
    assert.equal(await under.deliver(), 413);
    assert.throws(() => createWebhookHandler({ secret: SECRET, onChange: () => {}, maxBodyBytes: 0 }), /maxBodyBytes/);
    await until(() => under.errors.length === 1, { what: 'the refusal of one byte over the cap to be reported', timeoutMs: 5000 });
    await afterTurn();
    assert.deepEqual(unhandled, []);
  });

  it('Express: after express.text({ type: \'application/json\' }) it takes the raw text; after express.json() it says why it cannot verify (500, never a hang)', async () => {
    const errors: unknown[] = [];
    const changes: unknown[] = [];
    const webhook = createWebhookHandler({ secret: SECRET, onChange: (change) => void changes.push(change), onError: (error) => void errors.push(error) });
    const app = express();
    app.post('/raw', express.text({ type: 'application/json' }), webhook.node);
    app.post('/parsed', express.json(), webhook.node);
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const port = (server.address() as AddressInfo).port;
    const post = (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { ...signed(), 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(5000) });
    assert.equal((await post('/raw')).status, 204);
    assert.equal(changes.length, 1);
    const parsed = await post('/parsed');
    assert.equal(parsed.status, 500);
    assert.match(String(errors[0]), /body parser such as express\.json\(\) ran first/);
    assert.deepEqual(unhandled, []);
  });

  it('a body that arrives in pieces split inside a character verifies as sent', async () => {
    const text = JSON.stringify({ ...message, note: 'Café, 咖啡 ☕' });
    const bytes = Buffer.from(text);
    const split = bytes.indexOf(Buffer.from('咖')) + 1;
    const { port, changes } = await receiver();
    const status = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString('latin1');
        if (answer.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(answer.slice(9, 12));
        }
      });
      socket.write(`${head({ ...signed(text), 'Content-Length': String(bytes.length) })}\r\n\r\n`);
      socket.write(bytes.subarray(0, split));
      // Two reads on the server's side: the first ends one byte into a three-byte character.
      // A deliberate gap between the two writes, so that they arrive as two reads.
      setTimeout(() => socket.write(bytes.subarray(split)), 100);
    });
    assert.equal(status, '204');
    assert.equal(changes.length, 1);
  });
});
