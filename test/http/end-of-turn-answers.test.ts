import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { tenantOf } from '../../src/core/tenant.js';
import type { TestResponse } from '../support/server.js';
import { freshServer } from '../support/world.js';

/**
 * A cached answer waits for the end of its turn (src/http/v1/routes.ts `sendAtEndOfTurn`,
 * docs/design/end-of-turn-answers.md); an answer read from the database is sent as soon as it is
 * read. Whichever way it went, the client must get the same answer: status, headers and body.
 */
async function world(t: TestContext) {
  const server = await freshServer(t, { DASHBOARD_PORT: 'off' });
  const account = await server.createAccount();
  await server.addListings(account, [{ title: 'Shophouse on Club Street' }, { title: 'Office at Raffles Place' }]);
  const { key } = await server.createKey(account);
  await server.allowOrigin(account, 'https://example.com');
  return { server, key, account };
}

/** The headers that must be the same on both ways: all but the request's own (its id, the date, the limiter's count). */
function comparable(res: TestResponse): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...res.headers };
  assert.ok(headers['x-request-id'] !== undefined && headers.date !== undefined);
  for (const name of ['x-request-id', 'date', 'ratelimit', 'ratelimit-remaining', 'x-ratelimit-remaining']) delete headers[name];
  return headers;
}

describe('answers sent at the end of the turn (issue 41)', () => {
  it('a page from memory has the status, headers and body of the same page read from the database', async (t) => {
    const { server, key, account } = await world(t);
    const origin = { origin: 'https://example.com' };
    // A tenant's first page waits for the database (its index is not built yet), and is sent once
    // read; the later ones are in memory, and are sent at the end of their turn.
    const other = await server.createAccount();
    await server.addListings(other, [{ title: 'Clinic in Novena' }]);
    assert.ok(server.service.reads.listPage(tenantOf(other, 'sg'), 1, 20) instanceof Promise, 'a first page is read, not at hand');
    const fromDatabase = await server.get('/v1/listings', { key, headers: origin });
    await server.service.reads.warm(tenantOf(account, 'sg'));
    const fromCache = await server.get('/v1/listings', { key, headers: origin });
    assert.ok(!(server.service.reads.listPage(tenantOf(account, 'sg'), 1, 20) instanceof Promise), 'now at hand: sent at the end of its turn');
    assert.equal(fromCache.status, 200);
    assert.equal(fromDatabase.status, 200);
    assert.deepEqual(comparable(fromCache), comparable(fromDatabase));
    assert.equal(fromCache.body, fromDatabase.body);
    assert.equal(fromCache.headers['content-length'], String(Buffer.byteLength(fromCache.body)));
    assert.equal(fromCache.headers['content-type'], 'application/json; charset=utf-8');
  });

  it('HEAD of a cached answer: its headers, its Content-Length, no body', async (t) => {
    const { server, key } = await world(t);
    const get = await server.get('/v1/listings?per_page=1', { key });
    const head = await server.get('/v1/listings?per_page=1', { key, method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-length'], get.headers['content-length']);
    assert.deepEqual(comparable(head), comparable(get));
  });

  it('a request that carries a body gets its cached answer with Connection: close, and its connection closes', async (t) => {
    const { server, key } = await world(t);
    await server.get('/v1/listings', { key });
    const res = await server.get('/v1/listings', { key, body: 'unexpected', headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.connection, 'close');
  });
});
