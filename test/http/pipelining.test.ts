import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

/** HTTP/1.1 pipelining (RFC 9112 section 9.3): answers in request order, each its own. */

/** The status lines of the answers on one connection, in order. */
const statusLines = (bytes: Buffer): string[] => bytes.toString('latin1').match(/HTTP\/1\.1 \d{3}/g) ?? [];

/** Sends raw bytes (in parts, each once the server answered something) and reads until the server closes the connection. */
function exchange(port: number, text: string, ...later: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const next = later.shift();
      if (next !== undefined && socket.writable) socket.write(next);
    });
    socket.on('error', (error) => (chunks.length > 0 ? resolve(Buffer.concat(chunks)) : reject(error)));
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.write(text);
    // A connection the server leaves open fails the test rather than hanging it.
    socket.setTimeout(5_000, () => {
      reject(new Error(`the server left the connection open after ${JSON.stringify(statusLines(Buffer.concat(chunks)))}`));
      socket.destroy();
    });
  });
}

describe('pipelined requests on one connection', () => {
  let server: TestServer;
  let key: string;
  let ids: string[];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    const account = await server.createAccount();
    ids = [0, 1, 2].map((i) => `0000000${i + 1}-0000-4000-8000-00000000000${i + 1}`);
    await server.addListings(account, ids.map((id, i) => ({ id, title: ['First', 'Second', 'Third'][i] })));
    key = (await server.createKey(account)).key;
  }

  it('are answered in the order they were sent, each with its own body', async (t) => {
    await world(t);
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

  /** D6: one answer per request, even when the bytes after it cannot be parsed (issue 40 item 7). */
  describe('with bytes that cannot be parsed (issue 40 item 7)', () => {
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: api.localhost\r\nAuthorization: Bearer ${key}\r\n\r\n`;

    it('a POST whose chunked body is malformed gets one answer, its 405, and the connection closes', async (t) => {
      await world(t);
      const post = 'POST /v1/listings HTTP/1.1\r\nHost: api.localhost\r\nTransfer-Encoding: chunked\r\n\r\n';
      // The bad chunk with the headers, and after the answer (when the connection is idle).
      for (const [first, ...later] of [[`${post}zz\r\nabc\r\n`], [post, 'zz\r\nabc\r\n'], [`${post}5\r\nab`, 'c\r\nzz\r\n']]) {
        const answer = await exchange(server.port, first!, ...later);
        assert.deepEqual(statusLines(answer), ['HTTP/1.1 405'], answer.toString());
        assert.match(answer.toString(), /\r\nallow: GET, HEAD, OPTIONS\r\n/i);
      }
    });

    it('a valid GET followed by a garbage line gets its 200, then a 400, and the connection closes', async (t) => {
      await world(t);
      for (const garbage of ['GARBAGE\r\n\r\n', 'GET /v1/listings HTTP/1.1\r\nHost api.localhost\r\n\r\n', '\u0000\u0001\r\n\r\n']) {
        const answer = await exchange(server.port, `${get('/v1/listings?per_page=1')}${garbage}`);
        assert.deepEqual(statusLines(answer), ['HTTP/1.1 200', 'HTTP/1.1 400'], answer.toString());
        const [ok, bad] = answer.toString().split(/(?=HTTP\/1\.1 )/);
        assert.equal(JSON.parse(ok!.slice(ok!.indexOf('\r\n\r\n') + 4)).per_page, 1, 'the 200 is whole');
        assert.equal(JSON.parse(bad!.slice(bad!.indexOf('\r\n\r\n') + 4)).error, 'bad_request');
      }
      // Several in flight, one of them slow to answer (a 404 of a listing that is looked up), then garbage.
      const answer = await exchange(server.port, `${get(`/v1/listings/${ids[0]}`)}${get('/v1/listings/00000000-0000-4000-8000-00000000dead')}${get('/healthz')}GARBAGE\r\n\r\n`);
      assert.deepEqual(statusLines(answer), ['HTTP/1.1 200', 'HTTP/1.1 404', 'HTTP/1.1 200', 'HTTP/1.1 400'], answer.toString());
      // The same garbage on its own connection is answered 400 at once, as before.
      assert.deepEqual(statusLines(await exchange(server.port, 'GARBAGE\r\n\r\n')), ['HTTP/1.1 400']);
    });

    it('a dashboard form (on the API\'s port) whose chunked body is malformed gets one answer, a 400, and the connection closes', async (t) => {
      await world(t);
      // The dashboard reads its forms: it waits for a body that will not come, and is answered for.
      const shared = await startTestServer({ DASHBOARD_PORT: '' });
      try {
        const post = 'POST /sign-in HTTP/1.1\r\nHost: dashboard.localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n';
        const answer = await exchange(shared.port, `${post}5\r\nemail\r\nzz\r\n`);
        assert.deepEqual(statusLines(answer), ['HTTP/1.1 400'], answer.toString());
      } finally {
        await shared.close();
      }
    });
  });
});
