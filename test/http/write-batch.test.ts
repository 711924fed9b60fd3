import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
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

  it('an answer written just before its connection is destroyed is still sent', async () => {
    const { server, port } = await listen((_req, res) => {
      res.end('last words');
      // As server.close() does to a keep-alive connection whose answer has ended.
      res.socket!.destroy();
    });
    try {
      const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.match(answer.toString(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nlast words$/);
    } finally {
      await close(server);
    }
  });

  it('a large answer written in many pieces arrives whole and in order (backpressure kept)', async () => {
    const piece = randomBytes(64 * 1024);
    const pieces = 64; // 4 MiB, far more than a socket's buffer
    const expected = createHash('sha256');
    for (let i = 0; i < pieces; i++) expected.update(piece).update(String(i));
    const { server, port } = await listen((_req, res) => {
      let i = 0;
      let refused = 0;
      const more = () => {
        while (i < pieces) {
          const ok = res.write(Buffer.concat([piece, Buffer.from(String(i++))]));
          if (!ok) {
            refused++;
            res.once('drain', more);
            return;
          }
        }
        res.end();
        assert.ok(refused > 0, 'the stream asked the writer to wait at least once');
      };
      more();
    });
    try {
      const answer = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const text = answer.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      assert.match(text.slice(0, head), /transfer-encoding: chunked/i);
      // De-chunk the body.
      const body: Buffer[] = [];
      let at = head + 4;
      for (;;) {
        const lineEnd = answer.indexOf('\r\n', at);
        const size = Number.parseInt(answer.subarray(at, lineEnd).toString(), 16);
        if (size === 0) break;
        body.push(answer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      const got = createHash('sha256');
      for (const part of body) got.update(part);
      assert.equal(got.digest('hex'), expected.digest('hex'));
    } finally {
      await close(server);
    }
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
