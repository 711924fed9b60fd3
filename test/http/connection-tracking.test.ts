import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { answersInFlight, trackConnections } from '../../src/http/drain.js';

/**
 * The drain's view of a connection (src/http/drain.ts): the answers begun on it and not yet
 * closed, in the order of their requests, kept per connection and let go as each closes (a
 * connection that kept its closed answers would hold every request it ever served).
 */
describe('connection tracking (drain.ts)', () => {
  it('lists a connection’s answers in flight in request order, and lets each go when it closes', async () => {
    const held: ServerResponse[] = [];
    const server = createServer((_req, res) => void held.push(res));
    trackConnections(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    client.resume();
    const [serverSocket] = (await accepted) as [object];
    // Two pipelined requests: Node emits both before either is answered.
    client.write('GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n');
    while (held.length < 2) await new Promise((resolve) => setImmediate(resolve));

    assert.deepEqual(answersInFlight(server, serverSocket).map((res) => res.req.url), ['/one', '/two']);
    assert.deepEqual(answersInFlight(server, {}), [], 'another connection has none');

    held[0]!.end('one');
    await once(held[0]!, 'close');
    assert.deepEqual(answersInFlight(server, serverSocket).map((res) => res.req.url), ['/two']);
    held[1]!.end('two');
    await once(held[1]!, 'close');
    assert.deepEqual(answersInFlight(server, serverSocket), []);

    client.destroy();
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
});
