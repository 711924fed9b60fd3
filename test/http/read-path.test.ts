import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { readCounts } from '../support/read-counts.js';
import { startTestServer } from '../support/server.js';
import { readAll } from './helpers.js';
import { tenantOf } from '../../src/core/tenant.js';

/**
 * The read path at scale (issue 9): each tenant's listings have their own version, so a write to
 * one tenant leaves every other tenant's caches and index alone, while the written tenant's next
 * read is exact. A read of a warm tenant costs its page.
 */
/** Each test's own server with two tenants, A and B, of 12 listings each, and a key for each. */
async function twoTenants(t: TestContext) {
  const server = await startTestServer({ METRICS_PORT: '0' });
  t.after(() => server.close());
  const a = await server.createAccount();
  const b = await server.createAccount();
  await server.addListings(a, Array.from({ length: 12 }, (_, i) => ({ title: `A${i}` })));
  await server.addListings(b, Array.from({ length: 12 }, (_, i) => ({ title: `B${i}` })));
  const keyA = (await server.createKey(a)).key;
  const keyB = (await server.createKey(b)).key;
  return { server, a, b, keyA, keyB, stats: () => readCounts(server) };
}

/** Each test's own server with one tenant of 3 listings, its key, and the read caches' TTL. */
async function oneTenant(t: TestContext) {
  const server = await startTestServer({ METRICS_PORT: '0' });
  t.after(() => server.close());
  const account = await server.createAccount();
  await server.addListings(account, Array.from({ length: 3 }, (_, i) => ({ title: `L${i}` })));
  const key = (await server.createKey(account)).key;
  const page = () => server.get('/v1/listings?per_page=3', { key });
  /** Changes a listing's stored JSON directly, as someone editing the database by hand would. */
  const editByHand = async (id: string, title: string) => {
    const row = await server.service.store.db.selectFrom('listings').select('body').where('id', '=', id).executeTakeFirstOrThrow();
    await server.service.store.db.updateTable('listings').set({ body: JSON.stringify({ ...JSON.parse(row.body), title }) }).where('id', '=', id).execute();
  };
  return { server, account, key, ttl: server.config.readCacheTtlMs, page, editByHand };
}

describe('read path: per-tenant versions', () => {
  it("a write to tenant A leaves tenant B's cached pages, details and index alone (a global version would not)", async (t) => {
    const { server, a, keyB, stats } = await twoTenants(t);
    const page = await server.get('/v1/listings?per_page=5', { key: keyB });
    const detail = await server.get(`/v1/listings/${page.json.items[0].id}`, { key: keyB });
    assert.equal((await server.get('/v1/listings?per_page=5', { key: keyB })).status, 200); // cached now
    const before = await stats();

    await server.addListings(a, [{ title: 'A new one' }]);
    await server.addListings(a, [{ title: 'And another' }]);

    const again = await server.get('/v1/listings?per_page=5', { key: keyB });
    const detailAgain = await server.get(`/v1/listings/${page.json.items[0].id}`, { key: keyB });
    assert.equal(again.body, page.body);
    assert.equal(detailAgain.body, detail.body);
    const after = await stats();
    assert.equal(after.pages.misses, before.pages.misses, "B's page came from the cache");
    assert.equal(after.pages.hits, before.pages.hits + 1);
    assert.equal(after.details.misses, before.details.misses, "B's listing came from the cache");
    assert.equal(after.indexReplays + after.indexBuilds, before.indexReplays + before.indexBuilds, "B's index was not touched");
  });

  it("the written tenant's next read is exact, and its index catches up by replaying only the change", async (t) => {
    const { server, a, keyA, stats } = await twoTenants(t);
    const before = await readAll(server, keyA, 5);
    const counts = await stats();
    await server.addListings(a, [{ title: 'Latest', created_at: '2026-11-01T00:00:00.000Z' }]);
    const after = await readAll(server, keyA, 5);
    assert.equal(after.total, before.total + 1);
    const first = await server.get('/v1/listings?per_page=1', { key: keyA });
    assert.equal(first.json.items[0].title, 'Latest', 'newest first (D9)');
    assert.equal((await stats()).indexBuilds, counts.indexBuilds, 'no rebuild');
    assert.ok((await stats()).indexReplays > counts.indexReplays, 'a replay of the change');
  });

  it('a listing that moves from A to B leaves A and joins B on the next reads', async (t) => {
    const { server, b, keyA, keyB } = await twoTenants(t);
    const moving = (await server.get('/v1/listings?per_page=1', { key: keyA })).json.items[0];
    const totalA = (await server.get('/v1/listings', { key: keyA })).json.total;
    const totalB = (await server.get('/v1/listings', { key: keyB })).json.total;
    await server.addListings(b, [{ id: moving.id, title: moving.title, created_at: moving.created_at }]);
    assert.equal((await server.get('/v1/listings', { key: keyA })).json.total, totalA - 1);
    assert.equal((await server.get(`/v1/listings/${moving.id}`, { key: keyA })).status, 404);
    assert.equal((await server.get('/v1/listings', { key: keyB })).json.total, totalB + 1);
    assert.equal((await server.get(`/v1/listings/${moving.id}`, { key: keyB })).json.org_id, b);
  });

  it('a cached listing is answered only at the change its index shows: an edit of a cached detail is served at once, in its pages too', async (t) => {
    const { server, a, keyA, stats } = await twoTenants(t);
    const listing = (await server.get('/v1/listings?per_page=3', { key: keyA })).json.items[2];
    const detail = () => server.get(`/v1/listings/${listing.id}`, { key: keyA });
    const first = await detail();
    const hits = (await stats()).details.hits;
    assert.equal((await detail()).body, first.body);
    assert.equal((await stats()).details.hits, hits + 1, 'cached (by id) at its change');

    await server.addListings(a, [{ id: listing.id, title: 'Renamed while cached', created_at: listing.created_at }]);
    const misses = (await stats()).details.misses;
    const edited = await detail();
    assert.equal(edited.json.title, 'Renamed while cached', 'the new change, not the cached body of the old one');
    assert.notEqual(edited.headers.etag, first.headers.etag);
    assert.equal((await stats()).details.misses, misses + 1, 'the old change\'s body was not answered: read again');
    assert.equal((await detail()).body, edited.body);
    const page = await server.get('/v1/listings?per_page=3', { key: keyA });
    assert.equal(page.json.items[2].title, 'Renamed while cached');
  });

  it('a detail read on across its safety TTL is read again ahead of its expiry, in the background: never a miss, and a body changed by hand is served within the TTL', async (t) => {
    const { server, a, keyA, stats } = await twoTenants(t);
    const ttl = server.config.readCacheTtlMs;
    const id: string = (await server.get('/v1/listings?per_page=1', { key: keyA })).json.items[0].id;
    const detail = () => server.get(`/v1/listings/${id}`, { key: keyA });
    server.clock.advance(ttl); // whatever was cached before has expired
    const first = await detail(); // read from the database now, kept for one TTL
    // Changed in the database by hand, no change recorded: only the safety TTL brings it.
    const edited = JSON.stringify({ ...first.json, title: 'Edited by hand' });
    await server.service.store.db.updateTable('listings').set({ body: edited }).where('id', '=', id).execute();
    const before = await stats();

    // Listing bodies are fresh for half the TTL (readmodel/caches.ts), the key for three quarters.
    server.clock.advance(ttl * 0.5 - 1);
    assert.equal((await detail()).body, first.body, 'cached');
    assert.equal((await stats()).refreshedAhead, before.refreshedAhead, 'fresh: not read again');
    server.clock.advance(1); // the second half of the TTL: stale
    assert.equal((await detail()).body, first.body, 'stale: answered from memory while it is read again');
    assert.equal((await stats()).refreshedAhead, before.refreshedAhead + 1, 'the listing');
    // The read in the background lands (awaited in process: no request, no rate limit spent).
    await server.service.reads.settled();
    const body = server.service.reads.detail(tenantOf(a, 'sg'), id);
    assert.ok(body !== undefined && !(body instanceof Promise), 'in the cache');
    assert.equal(body.bytes.toString(), edited, 'what the database holds now, within the TTL of the first read');
    server.clock.advance(ttl * 0.25);
    assert.equal((await detail()).body, edited);
    assert.equal((await stats()).refreshedAhead, before.refreshedAhead + 2, 'and the key, read again at `first` too, once stale');

    server.clock.advance(ttl * 0.25 + 1); // past the TTL of the first read
    const later = await detail();
    assert.equal(later.body, edited);
    assert.notEqual(later.headers.etag, first.headers.etag);
    assert.equal((await stats()).details.misses, before.details.misses, 'never a miss: every answer came from memory');
  });

  it('details that miss the cache in one turn are read in one query, each answered with its own listing', async (t) => {
    const { server, b, keyB, stats } = await twoTenants(t);
    const ids: string[] = (await server.get('/v1/listings?per_page=10', { key: keyB })).json.items.map((item: { id: string }) => item.id);
    const expected = await Promise.all(ids.map(async (id) => (await server.get(`/v1/listings/${id}`, { key: keyB })).body));
    server.clock.advance(server.config.readCacheTtlMs); // every cached body has expired
    const before = await stats();
    const asked = ids.map((id) => server.service.reads.detail(tenantOf(b, 'sg'), id));
    assert.ok(asked.every((answer) => answer instanceof Promise), 'all missed');
    const bodies = await Promise.all(asked);
    assert.deepEqual(bodies.map((body) => body?.bytes.toString()), expected);
    assert.equal((await stats()).details.misses, before.details.misses + ids.length);
    assert.equal((await stats()).listingRowReads, before.listingRowReads + 1, 'one read for the ten');
  });

  it('pages that miss the cache in one turn read the listings they lack in one query', async (t) => {
    const { server, b, keyB, stats } = await twoTenants(t);
    const expected = await Promise.all([1, 2].map(async (page) => (await server.get(`/v1/listings?page=${page}&per_page=4`, { key: keyB })).body));
    server.clock.advance(server.config.readCacheTtlMs); // every cached page and body has expired
    const before = await stats();
    const asked = [1, 2].map((page) => server.service.reads.listPage(tenantOf(b, 'sg'), page, 4));
    assert.deepEqual((await Promise.all(asked)).map((body) => body.bytes.toString()), expected);
    assert.equal((await stats()).pages.misses, before.pages.misses + 2);
    assert.equal((await stats()).listingRowReads, before.listingRowReads + 1, 'one read for the eight listings of two pages');
  });

  it('with READ_CACHE_TTL_MS=0 nothing is reused but the index, and answers are the same', async (t) => {
    const { server, keyB } = await twoTenants(t);
    const uncached = await startTestServer({ DATABASE_URL: server.databaseUrl, READ_CACHE_TTL_MS: '0', METRICS_PORT: '0' }, server.clock);
    try {
      for (const path of ['/v1/listings?per_page=7', '/v1/listings?page=2&per_page=7']) {
        const expected = await server.get(path, { key: keyB });
        for (let i = 0; i < 3; i++) assert.equal((await uncached.get(path, { key: keyB })).body, expected.body);
      }
      const s = await readCounts(uncached);
      assert.equal(s.pages.hits, 0);
      assert.equal(s.indexBuilds, 1, 'the index is built once and kept');
    } finally {
      await uncached.close();
    }
  });
});

/**
 * READ_CACHE_TTL_MS bounds what is served from the moment it was read from the database, for a
 * page too, which is assembled from listings cached earlier: a listing changed by hand in the
 * database (no change recorded, so no version moves) is shown within that time, everywhere.
 */
describe('read path: the safety TTL bounds what a cached page shows', () => {
  it('a page built from a listing cached earlier expires a TTL after that listing was read, not after the page was built', async (t) => {
    const { server, key, ttl, page, editByHand } = await oneTenant(t);
    server.clock.advance(ttl);
    const id: string = (await page()).json.items[0].id;
    server.clock.advance(ttl); // nothing cached any more
    assert.equal((await server.get(`/v1/listings/${id}`, { key })).status, 200); // the listing is read now: t0
    await editByHand(id, 'Edited early');
    server.clock.advance(ttl * 0.4);
    const built = await page(); // a miss, built now from the listing read at t0
    assert.equal(built.json.items[0].title.startsWith('Edited'), false, 'the cached listing, read 0.4 TTL ago');
    server.clock.advance(ttl * 0.6); // t0 + TTL: the page lived a TTL from its listing's read
    assert.equal((await page()).json.items[0].title, 'Edited early');
  });

  it('a page read on across the TTL is refreshed ahead with its listings read again: never a miss, and an edit shows within the TTL', async (t) => {
    const { server, account, ttl, page, editByHand } = await oneTenant(t);
    server.clock.advance(ttl);
    const first = await page(); // the page and its listings, read now
    const id: string = first.json.items[1].id;
    await editByHand(id, 'Edited by hand');
    const stats = () => readCounts(server);
    const before = await stats();
    server.clock.advance(ttl * 0.75);
    assert.equal((await page()).body, first.body, 'due: answered from memory while it is built again');
    await server.service.reads.settled();
    const cached = server.service.reads.listPage(tenantOf(account, 'sg'), 1, 3);
    assert.ok(!(cached instanceof Promise) && cached.bytes.toString().includes('Edited by hand'), 'built again in the background, before the TTL ends');
    server.clock.advance(ttl * 0.25); // the first read's TTL has passed
    const later = await page();
    assert.equal(later.json.items[1].title, 'Edited by hand');
    assert.equal((await stats()).pages.misses, before.pages.misses, 'never a miss: every answer came from memory');
  });
});
