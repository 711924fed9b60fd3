import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.js';
import { readAll } from './helpers.js';

/**
 * The read path at scale (issue 9): each tenant's listings have their own version, so a write to
 * one tenant leaves every other tenant's caches and index alone, while the written tenant's next
 * read is exact. A read of a warm tenant costs its page.
 */
describe('read path: per-tenant versions', () => {
  let server: TestServer;
  let a: string;
  let b: string;
  let keyA: string;
  let keyB: string;

  before(async () => {
    server = await startTestServer();
    a = await server.createAccount();
    b = await server.createAccount();
    await server.addListings(a, Array.from({ length: 12 }, (_, i) => ({ title: `A${i}` })));
    await server.addListings(b, Array.from({ length: 12 }, (_, i) => ({ title: `B${i}` })));
    keyA = (await server.createKey(a)).key;
    keyB = (await server.createKey(b)).key;
  });
  after(() => server.close());

  const stats = () => server.service.reads.stats();

  it("a write to tenant A leaves tenant B's cached pages, details and index alone (a global version would not)", async () => {
    const page = await server.get('/v1/listings?per_page=5', { key: keyB });
    const detail = await server.get(`/v1/listings/${page.json.items[0].id}`, { key: keyB });
    assert.equal((await server.get('/v1/listings?per_page=5', { key: keyB })).status, 200); // cached now
    const before = stats();

    await server.addListings(a, [{ title: 'A new one' }]);
    await server.addListings(a, [{ title: 'And another' }]);

    const again = await server.get('/v1/listings?per_page=5', { key: keyB });
    const detailAgain = await server.get(`/v1/listings/${page.json.items[0].id}`, { key: keyB });
    assert.equal(again.body, page.body);
    assert.equal(detailAgain.body, detail.body);
    const after = stats();
    assert.equal(after.pages.misses, before.pages.misses, "B's page came from the cache");
    assert.equal(after.pages.hits, before.pages.hits + 1);
    assert.equal(after.details.misses, before.details.misses, "B's listing came from the cache");
    assert.equal(after.indexReplays + after.indexBuilds, before.indexReplays + before.indexBuilds, "B's index was not touched");
  });

  it("the written tenant's next read is exact, and its index catches up by replaying only the change", async () => {
    const before = await readAll(server, keyA, 5);
    const counts = stats();
    await server.addListings(a, [{ title: 'Latest', created_at: '2026-11-01T00:00:00.000Z' }]);
    const after = await readAll(server, keyA, 5);
    assert.equal(after.total, before.total + 1);
    const first = await server.get('/v1/listings?per_page=1', { key: keyA });
    assert.equal(first.json.items[0].title, 'Latest', 'newest first (D9)');
    assert.equal(stats().indexBuilds, counts.indexBuilds, 'no rebuild');
    assert.ok(stats().indexReplays > counts.indexReplays, 'a replay of the change');
  });

  it('a listing that moves from A to B leaves A and joins B on the next reads', async () => {
    const moving = (await server.get('/v1/listings?per_page=1', { key: keyA })).json.items[0];
    const totalA = (await server.get('/v1/listings', { key: keyA })).json.total;
    const totalB = (await server.get('/v1/listings', { key: keyB })).json.total;
    await server.addListings(b, [{ id: moving.id, title: moving.title, created_at: moving.created_at }]);
    assert.equal((await server.get('/v1/listings', { key: keyA })).json.total, totalA - 1);
    assert.equal((await server.get(`/v1/listings/${moving.id}`, { key: keyA })).status, 404);
    assert.equal((await server.get('/v1/listings', { key: keyB })).json.total, totalB + 1);
    assert.equal((await server.get(`/v1/listings/${moving.id}`, { key: keyB })).json.org_id, b);
  });

  it('with READ_CACHE_TTL_MS=0 nothing is reused but the index, and answers are the same', async () => {
    const uncached = await startTestServer({ DATABASE_URL: server.databaseUrl, READ_CACHE_TTL_MS: '0' }, server.clock);
    try {
      for (const path of ['/v1/listings?per_page=7', '/v1/listings?page=2&per_page=7']) {
        const expected = await server.get(path, { key: keyB });
        for (let i = 0; i < 3; i++) assert.equal((await uncached.get(path, { key: keyB })).body, expected.body);
      }
      const s = uncached.service.reads.stats();
      assert.equal(s.pages.hits, 0);
      assert.equal(s.indexBuilds, 1, 'the index is built once and kept');
    } finally {
      await uncached.close();
    }
  });
});
