import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.js';

/** HTTP/1.1 pipelining (RFC 9112 section 9.3): answers in request order, each its own. */

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

describe('pipelined requests on one connection', () => {
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
