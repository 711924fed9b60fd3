import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { createServer, type RequestListener, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { coalesceWrites, dispatchCoalesced } from '../../src/http/write-batch.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Coalesced socket writes (src/http/write-batch.ts): the answers made while their request is
 * dispatched (cached answers) are written together at the end of the turn; later answers at once.
 * What must not change with it: every byte arrives, in order, with backpressure; an answer written
 * just before its connection is closed is still sent.
 */

/** A bare server set up as front.ts sets up the API's. */
async function listen(handler: RequestListener): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => dispatchCoalesced(handler, req, res));
  server.on('connection', coalesceWrites);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends raw bytes and reads until the server closes the connection. */
function exchange(port: number, text: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.write(text);
  });
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));

describe('coalesced socket writes (write-batch.ts)', () => {
  it('an answer ended during a turn reaches the socket at the end of that turn, not at once', async () => {
    const seen: Array<{ pendingAfterEnd: number; pendingNextTurn: number }> = [];
    const { server, port } = await listen((_req, res) => {
      res.end('hello');
      const socket = res.socket!;
      const pendingAfterEnd = socket.writableLength;
      setImmediate(() => {
        seen.push({ pendingAfterEnd, pendingNextTurn: socket.writableLength });
      });
    });
    try {
      const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.match(answer.toString(), /\r\n\r\nhello$/);
      assert.equal(seen.length, 1);
      // Written inline, the bytes would have left the stream's buffer inside end().
      assert.ok(seen[0]!.pendingAfterEnd > 0, 'the write waits for the end of the turn');
      assert.equal(seen[0]!.pendingNextTurn, 0, 'and is made then');
    } finally {
      await close(server);
    }
  });

  it('an answer ended after its dispatch (a database read, say) is written at once', async () => {
    const seen: number[] = [];
    const { server, port } = await listen((_req, res) => {
      setImmediate(() => {
        res.end('later');
        seen.push(res.socket!.writableLength);
      });
    });
    try {
      const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.match(answer.toString(), /\r\n\r\nlater$/);
      assert.deepEqual(seen, [0]);
    } finally {
      await close(server);
    }
  });

  it('an answer written just before its connection is destroyed is still sent, with what the stream buffered behind it', async () => {
    const { server, port } = await listen((_req, res) => {
      // Two writes: the headers (queued) and the body (buffered by the stream behind them).
      res.flushHeaders();
      res.end('last words');
      res.socket!.destroy();
    });
    try {
      const answer = (await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n')).toString();
      assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(answer, /last words/);
    } finally {
      await close(server);
    }
  });

  it('a large answer ended during dispatch arrives whole (its write completes later, in pieces)', async () => {
    const body = randomBytes(8 * 1024 * 1024); // far more than a socket's buffer
    let queuedAtEnd = 0;
    const { server, port } = await listen((_req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      res.end(body);
      queuedAtEnd = res.socket!.writableLength;
    });
    try {
      const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.ok(queuedAtEnd >= body.length, 'the write was queued');
      const head = answer.indexOf('\r\n\r\n');
      const got = answer.subarray(head + 4);
      assert.equal(got.length, body.length);
      assert.equal(createHash('sha256').update(got).digest('hex'), createHash('sha256').update(body).digest('hex'));
    } finally {
      await close(server);
    }
  });

  it('an error thrown by a listener of a completed write is not swallowed: it is uncaught, as without the batch', () => {
    const moduleUrl = new URL('../../src/http/write-batch.js', import.meta.url).href;
    const script = `
      import { createServer } from 'node:http';
      import { connect } from 'node:net';
      import { coalesceWrites, dispatchCoalesced } from ${JSON.stringify(moduleUrl)};
      const server = createServer((req, res) => dispatchCoalesced((_q, r) => {
        r.on('finish', () => { throw new Error('thrown by a finish listener'); });
        r.end('ok');
      }, req, res));
      server.on('connection', coalesceWrites);
      server.on('clientError', (error) => { console.log('clientError ' + error.code); process.exit(3); });
      server.listen(0, '127.0.0.1', () => {
        const socket = connect(server.address().port, '127.0.0.1');
        socket.on('error', () => {});
        socket.write('GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');
      });
      setTimeout(() => { console.log('nothing thrown'); process.exit(4); }, 5000).unref();
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(child.status, 1, `${child.stdout}${child.stderr}`);
    assert.match(child.stderr, /thrown by a finish listener/);
  });
});

describe('coalesced writes through the service: pipelined requests on one connection', () => {
  let server: TestServer;
  let key: string;
  let ids: string[];

  before(async () => {
    server = await startTestServer();
    const account = await server.createAccount();
    ids = [0, 1, 2].map((i) => `0000000${i + 1}-0000-4000-8000-00000000000${i + 1}`);
    await server.addListings(account, ids.map((id, i) => ({ id, title: ['First', 'Second', 'Third'][i] })));
    key = (await server.createKey(account)).key;
  });
  after(() => server.close());

  it('are answered in the order they were sent, each with its own body', async () => {
    const order = [ids[2]!, ids[0]!, 'not-an-id', ids[1]!, ids[2]!];
    const requests = order.map((id, i) =>
      `GET /v1/listings/${id} HTTP/1.1\r\nHost: api.localhost\r\nAuthorization: Bearer ${key}\r\n${i === order.length - 1 ? 'Connection: close\r\n' : ''}\r\n`,
    );
    const answer = (await exchange(server.port, requests.join(''))).toString();
    const answers = answer.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, order.length, answer);
    order.forEach((id, i) => {
      const text = answers[i]!;
      if (id === 'not-an-id') {
        assert.match(text, /^HTTP\/1\.1 404 /);
      } else {
        assert.match(text, /^HTTP\/1\.1 200 /);
        assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).id, id);
      }
    });
  });
});
