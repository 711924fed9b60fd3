import assert from 'node:assert/strict';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { addWebhook, rotateWebhookSecret } from '../../src/webhooks/endpoints.js';
import { PREVIOUS_SECRET_MS, RETRY_DELAYS_MS } from '../../src/webhooks/deliverer.js';
import { sendAttempt } from '../../src/webhooks/send.js';
import { TestClock, type TestServer } from '../support/server.js';
import { within } from '../support/until.js';
import { atEnd, freshServer } from '../support/world.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/**
 * Issue 43 item 2: the timing rules of an attempt and of its retries mean what they say. The
 * attempt's timeout covers the name's resolution, the connection, TLS and the answer's status line,
 * and nothing after it; retries are counted from the end of the failed attempt; a rotation's
 * previous secret signs for its own 24 hours.
 */

const listen = async (server: Server | ReturnType<typeof createHttpServer>) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};
const close = (server: Server | ReturnType<typeof createHttpServer>) => new Promise((resolve) => server.close(resolve));

describe('one attempt: what the timeout covers (issue 43 item 2)', () => {
  const timeoutMs = 300;

  it('a name that does not resolve within the timeout: timed out, at the timeout', async () => {
    const started = Date.now();
    // A real lookup keeps the process alive (the attempt's own timer does not): so does this one.
    const alive = setTimeout(() => undefined, 10_000);
    const outcome = await sendAttempt('http://hooks.localhost:1/x', {}, '{}', { allowPrivate: true, timeoutMs, resolve: () => new Promise(() => undefined) });
    clearTimeout(alive);
    assert.equal(outcome.error, 'timed out');
    assert.ok(Date.now() - started < timeoutMs + 500);
  });

  it('a connection accepted but never answering TLS: timed out', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => void sockets.push(socket));
    const port = await listen(silent);
    try {
      const outcome = await sendAttempt(`https://hooks.localhost:${port}/x`, {}, '{}', { allowPrivate: true, timeoutMs, resolve: async () => ['127.0.0.1'] });
      assert.deepEqual([outcome.status, outcome.error], [undefined, 'timed out']);
    } finally {
      for (const s of sockets) s.destroy();
      await close(silent);
    }
  });

  it('a status line later than the timeout: timed out, though the headers were on their way', async () => {
    const held: ServerResponse[] = [];
    const late = createHttpServer((req, res) => {
      req.resume();
      held.push(res);
    });
    const port = await listen(late);
    try {
      const outcome = await sendAttempt(`http://127.0.0.1:${port}/x`, {}, '{}', { allowPrivate: true, timeoutMs });
      assert.equal(outcome.error, 'timed out');
    } finally {
      for (const res of held) res.destroy();
      late.closeAllConnections();
      await close(late);
    }
  });

  it('a 2xx status line is a delivery however slowly the body trickles in; the body is read to 16 KB, then dropped', async () => {
    let bodyWritten = 0;
    let closedAfter = 0;
    let hungUp: (at: number) => void = () => {};
    const closedAt = new Promise<number>((resolve) => (hungUp = resolve));
    const trickles: Array<NodeJS.Timeout> = [];
    const slow = createHttpServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      // A kilobyte every 50 ms, for far longer than the timeout, until the sender hangs up.
      const timer = setInterval(() => {
        bodyWritten += 1024;
        res.write(Buffer.alloc(1024, 'x'));
      }, 50);
      trickles.push(timer);
      res.on('close', () => {
        clearInterval(timer);
        closedAfter = bodyWritten;
        hungUp(Date.now());
      });
    });
    const port = await listen(slow);
    try {
      const started = Date.now();
      const outcome = await sendAttempt(`http://127.0.0.1:${port}/x`, {}, '{}', { allowPrivate: true, timeoutMs });
      assert.equal(outcome.status, 200, JSON.stringify(outcome));
      assert.equal(outcome.error, undefined);
      const outcomeAt = Date.now();
      assert.ok(outcomeAt - started < timeoutMs, 'the outcome came with the status line, not after the body');
      // The sender hangs up after 16 KB or at the timeout, whichever first: here the timeout (a kilobyte per 50 ms).
      const hungUpAt = await within(closedAt, 10_000, 'the sender to hang up');
      assert.ok(hungUpAt - outcomeAt < timeoutMs + 200, `hung up ${hungUpAt - outcomeAt} ms after the outcome: at the timeout`);
      assert.ok(closedAfter > 0 && closedAfter <= 16 * 1024, `the connection was closed after ${closedAfter} bytes`);
    } finally {
      for (const t of trickles) clearInterval(t);
      slow.closeAllConnections();
      await close(slow);
    }
  });

  it('a big body is read to 16 KB and the connection closed, not read to its end', async () => {
    let closed = false;
    const big = createHttpServer((req, res) => {
      req.resume();
      res.on('close', () => (closed = true));
      res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) });
      res.write(Buffer.alloc(1024 * 1024, 'x'));
    });
    const port = await listen(big);
    try {
      const outcome = await sendAttempt(`http://127.0.0.1:${port}/x`, {}, '{}', { allowPrivate: true, timeoutMs: 10_000 });
      assert.equal(outcome.status, 200);
      const deadline = Date.now() + 2000;
      while (!closed && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
      assert.ok(closed, 'the sender hung up long before the timeout');
    } finally {
      big.closeAllConnections();
      await close(big);
    }
  });
});

describe('retries and rotations on the injected clock (issue 43 item 2)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server with its own clock, a receiver, and an account. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { WEBHOOK_ALLOW_PRIVATE: '1' }, { clock: new TestClock(Date.now()), manualWebhooks: true });
    receiver = await startReceiver();
    atEnd(t, () => receiver.close());
    accountId = await server.createAccount();
  }
  const tick = () => server.service.webhooks.tick();

  it('the next attempt is counted from the end of the failed one, not its start', async (t) => {
    await world(t);
    const endpoint = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: receiver.url });
    // The attempt takes 9 s of the clock, then fails.
    receiver.answerWith(() => {
      server.clock.advance(9000);
      return 503;
    });
    await server.addListings(accountId, [{}]);
    const started = server.clock.now();
    await tick();
    assert.equal(receiver.received.length, 1);
    const row = (await server.service.store.webhooks.get(endpoint.id))!;
    assert.equal(Date.parse(row.next_attempt_at!), started + 9000 + RETRY_DELAYS_MS[0], 'five seconds after the attempt ended');
    receiver.answerWith(204);
    server.clock.advance(RETRY_DELAYS_MS[0] - 1);
    await tick();
    assert.equal(receiver.received.length, 1, 'not 5 s after the attempt started');
    server.clock.advance(1);
    await tick();
    assert.equal(receiver.received.length, 2);
    await server.service.store.webhooks.remove(endpoint.id);
  });

  it('a second rotation within 24 h: the secret it replaces signs for its own 24 h; the first one stops (two signatures at most)', async (t) => {
    await world(t);
    const endpoint = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: receiver.url });
    const first = endpoint.secret;
    const second = (await rotateWebhookSecret(server.service.store, server.clock.now, endpoint.id))!;
    server.clock.advance(6 * 3600_000);
    const third = (await rotateWebhookSecret(server.service.store, server.clock.now, endpoint.id))!;
    // Signed by the secret: one of the header's signatures is what standardwebhooks makes with it
    // (its verify() would also refuse the timestamps of this clock, hours from the real time).
    const verifies = (secret: string, index: number) => {
      const r = receiver.received[index]!;
      const signed = new Webhook(secret).sign(r.headers['webhook-id'] as string, new Date(Number(r.headers['webhook-timestamp']) * 1000), r.body);
      return (r.headers['webhook-signature'] as string).split(' ').includes(signed);
    };
    const send = async () => {
      receiver.received.length = 0;
      await server.addListings(accountId, [{}]);
      await tick();
      assert.equal(receiver.received.length, 1);
    };
    await send();
    assert.deepEqual([verifies(third, 0), verifies(second, 0), verifies(first, 0)], [true, true, false]);
    assert.equal((receiver.received[0]!.headers['webhook-signature'] as string).split(' ').length, 2);
    // 24 h after the first rotation the second secret still signs: its own 24 h run from the second rotation.
    server.clock.advance(PREVIOUS_SECRET_MS - 6 * 3600_000);
    await send();
    assert.deepEqual([verifies(third, 0), verifies(second, 0)], [true, true]);
    server.clock.advance(6 * 3600_000);
    await send();
    assert.deepEqual([verifies(third, 0), verifies(second, 0)], [true, false], 'then the new secret alone');
    await server.service.store.webhooks.remove(endpoint.id);
  });
});
