import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { tenantOf } from '../../src/core/tenant.js';
import { COLD_PAGE_DEPTH } from '../../src/readmodel/index.js';
import { EXPIRED_SINCE_LIMIT } from '../../src/storage/listing-counts.js';
import type { TenantCount } from '../../src/storage/index.js';
import { readCounts } from '../support/read-counts.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { prng } from '../support/random.js';

/**
 * Issue 44 item 2: the first reads of a tenant whose index is not built (never read, or evicted)
 * do not wait for the whole index. A detail is read by id from the database; on PostgreSQL a plain
 * page up to COLD_PAGE_DEPTH deep is read from the order index with its total, in one snapshot,
 * while the index builds in the background (on SQLite, whose driver holds the event loop while a
 * count walks a large tenant, a page waits for the index). Every such answer is the one the index
 * gives, byte for byte (so its ETag too), and a cold page is kept no longer than its listings'
 * soonest expiry (D10).
 */
const DAY = 86_400_000;

/** A server, a tenant of `count` listings (featured ones, equal creation times, expired and expiring ones) and its key; nothing read yet. */
async function coldTenant(t: TestContext, count: number, env: Record<string, string> = {}) {
  const server = await startTestServer({ METRICS_PORT: '0', ...env });
  t.after(() => server.close());
  const account = await server.createAccount();
  const now = server.clock.now();
  const rand = prng(44);
  await server.addListings(account, Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    title: `Listing ${i}`,
    is_featured: rand() < 0.2,
    // Ties on the creation time: the id breaks them (D9).
    created_at: new Date(Date.parse('2026-01-01T00:00:00Z') + Math.floor(rand() * 40) * DAY).toISOString(),
    expiry_date: i % 11 === 0 ? new Date(now - 1000).toISOString() : i % 13 === 0 ? new Date(now + 500 + i).toISOString() : null,
  })));
  const key = (await server.createKey(account)).key;
  return { server, account, key, tenant: tenantOf(account, 'sg'), counts: () => readCounts(server) };
}

const isPostgres = (server: TestServer) => server.service.store.dialect === 'postgres';

describe('cold reads: a tenant whose index is not built is answered without waiting for it (issue 44 item 2)', () => {
  it('every page up to the cold depth, and every detail, is the answer the built index gives, byte for byte', async (t) => {
    // Caches off, so that each answer below is read again rather than kept.
    const { server, key, tenant, counts } = await coldTenant(t, 300, { READ_CACHE_TTL_MS: '0' });
    const paths = [1, 2, 3, 9, 10, 11, 30].map((page) => `/v1/listings?page=${page}&per_page=10`).concat('/v1/listings?per_page=100&page=3', '/v1/listings');
    const cold = [];
    for (const path of paths) cold.push(await server.get(path, { key }));
    const first = await counts();
    assert.ok(first.coldReads >= 1, 'the first page was read from the database');
    await server.service.reads.warm(tenant);
    assert.equal((await counts()).indexBuilds, 1, 'built once, in the background');
    for (const [i, path] of paths.entries()) {
      const warm = await server.get(path, { key });
      assert.equal(cold[i]!.status, 200, path);
      assert.equal(cold[i]!.body, warm.body, path);
      assert.equal(cold[i]!.headers.etag, warm.headers.etag, path);
    }
    const total = cold[0]!.json.total as number;
    assert.equal(total, 300 - Math.ceil(300 / 11), 'the expired listings are not counted');
    assert.ok(cold[0]!.json.items.length === 10 && cold[0]!.json.items[0].is_featured, 'featured first (D9)');
    assert.equal((await counts()).coldReads, first.coldReads, 'a built index answers from memory');
  });

  it('a page past the cold depth, and a filtered or sorted one, waits for the index', async (t) => {
    const { server, key, counts } = await coldTenant(t, 120);
    const deep = Math.floor(COLD_PAGE_DEPTH / 100) + 1;
    for (const path of [`/v1/listings?per_page=100&page=${deep}`, '/v1/listings?sort=-created_at', '/v1/listings?featured=true', '/v1/listings?q=listing']) {
      const fresh = await coldTenant(t, 120);
      assert.equal((await fresh.server.get(path, { key: fresh.key })).status, 200, path);
      const after = await fresh.counts();
      assert.equal(after.coldReads, 0, path);
      assert.equal(after.indexBuilds, 1, path);
    }
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await counts()).coldReads, 1);
  });

  it('without a kept count, or with more than EXPIRED_SINCE_LIMIT listings expired since it, PostgreSQL walks the tenant and SQLite waits for the index', async (t) => {
    // A write that did not keep the count (a release before it): the tenant's version moved alone.
    const stale = await coldTenant(t, 50);
    await stale.server.service.store.db.updateTable('tenant_versions').set((eb) => ({ version: eb('version', '+', 1) }))
      .where('owner_account_id', '=', stale.account).execute();
    // More expired since the count than the bound: all but a few expire a minute after the import.
    const expiring = await coldTenant(t, 1);
    const soon = new Date(expiring.server.clock.now() + 60_000).toISOString();
    await expiring.server.addListings(expiring.account, Array.from({ length: EXPIRED_SINCE_LIMIT + 5 }, (_, i) => ({ expiry_date: i < 3 ? null : soon })));
    expiring.server.clock.advance(61_000);
    for (const [world, total] of [[stale, 50 - Math.ceil(50 / 11)], [expiring, 3]] as const) {
      const res = await world.server.get('/v1/listings', { key: world.key });
      assert.equal(res.status, 200);
      assert.equal(res.json.total, total);
      // The build a cold page starts runs in the background: wait for it (warm joins it, not a second build).
      await world.server.service.reads.warm(world.tenant);
      const after = await world.counts();
      assert.equal(after.coldReads, isPostgres(world.server) ? 1 : 0);
      assert.equal(after.indexBuilds, 1, 'built once');
    }
  });

  it('a cold page is kept no longer than the soonest expiry among the listings (D10)', async (t) => {
    const { server, key, counts } = await coldTenant(t, 40);
    const first = await server.get('/v1/listings?per_page=5', { key });
    assert.equal((await counts()).coldReads, 1);
    assert.equal(first.json.total, 40 - Math.ceil(40 / 11));
    // i = 13 and i = 26 expire 513 and 526 ms from now: well within the caches' TTL, so only the
    // page's own bound can make the next read see it.
    assert.ok(server.config.readCacheTtlMs > 1000);
    server.clock.advance(514);
    const later = await server.get('/v1/listings?per_page=5', { key });
    assert.equal(later.json.total, first.json.total - 1, 'the listing that expired is no longer counted');
    server.clock.advance(20);
    assert.equal((await server.get('/v1/listings?per_page=5', { key })).json.total, first.json.total - 2);
  });

  it('a detail before the build: the listing when the key sees it, 404 when expired, another tenant\'s or unknown', async (t) => {
    const { server, account, key, counts } = await coldTenant(t, 30, { READ_CACHE_TTL_MS: '0' });
    const ids = (await server.service.store.db.selectFrom('listings').select(['id', 'expiry_date']).where('owner_account_id', '=', account).execute());
    const visible = ids.find((row) => row.expiry_date === null)!.id;
    const expired = ids.find((row) => row.expiry_date !== null && Date.parse(row.expiry_date) < server.clock.now())!.id;
    const other = await server.createAccount();
    const foreign = randomUUID();
    await server.addListings(other, [{ id: foreign }]);
    const answers = await Promise.all([visible, expired, foreign, randomUUID()].map((id) => server.get(`/v1/listings/${id}`, { key })));
    assert.deepEqual(answers.map((res) => res.status), [200, 404, 404, 404]);
    assert.equal(answers[0]!.json.id, visible);
    assert.ok((await counts()).coldReads >= 1, 'read by id, not after a build');
    await server.service.reads.warm(tenantOf(account, 'sg'));
    assert.equal((await server.get(`/v1/listings/${visible}`, { key })).body, answers[0]!.body);
  });
});

describe('storage pageInOrder: a known count is taken only at the version and before the expiry it was counted for', () => {
  it('reuses a count of the same version, and counts again after a write or past the soonest expiry', async (t) => {
    const { server, account, tenant } = await coldTenant(t, 30);
    const store = server.service.store;
    const now = new Date(server.clock.now()).toISOString();
    const page = async (now: string, offset: number, known?: TenantCount) =>
      (await store.listings.pageInOrder(tenant, now, { offset, limit: 5, walk: true }, known))!;
    const { count, rows } = await page(now, 0);
    assert.equal(count.total, 30 - Math.ceil(30 / 11));
    assert.equal(rows.length, 5);
    assert.equal(count.soonestExpiry, new Date(server.clock.now() + 500 + 13).toISOString());
    // A made-up total at the same version is taken as it is: the tenant is not counted again.
    assert.equal((await page(now, 5, { ...count, total: 999 })).count.total, 999);
    // Past the soonest expiry it is counted again.
    const later = new Date(server.clock.now() + 514).toISOString();
    assert.equal((await page(later, 0, { ...count, total: 999 })).count.total, count.total - 1);
    // After a write to the tenant (its version moves), counted again.
    await server.addListings(account, [{}]);
    const after = await page(now, 0, { ...count, total: 999 });
    assert.equal(after.count.total, count.total + 1);
    assert.ok(after.count.version > count.version);
  });
});
