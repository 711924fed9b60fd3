import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore, type ListingRow, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';

const NOW = '2026-11-22T10:00:00.000Z';

function row(owner: string, overrides: Partial<ListingRow> = {}): ListingRow {
  return {
    id: randomUUID(), owner_account_id: owner, country: 'sg', org_id: owner, building_id: randomUUID(), title: 't',
    size_sqft: 100, usage_types: '["Office"]', price: 1.5, currency: 'SGD', is_takeover: 0, is_featured: 0, status: 'active',
    expiry_date: null, available_from: null, min_lease_tenure: null, view_count: 0, inquiry_count: 0, building_name: null,
    street_address: null, images: '[]', cover_image_index: 0, url: 'https://example.com/x', created_at: '2026-01-01T00:00:00.000Z',
    updated_at: NOW, ...overrides,
  };
}

async function eventually(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe(`store on ${TEST_STORE}`, () => {
  let database: TestDatabase;
  let store: Store;
  let owner: string;

  before(async () => {
    database = await createTestDatabase();
    store = openStore(database.url, { listenForChanges: true });
    assert.equal((await store.migrate())[0], '001_initial', 'a fresh database gets every migration, in order');
    await store.start();
    owner = randomUUID();
    await store.accounts.create({ id: owner, name: 'Org', kind: 'organisation', created_at: NOW });
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  it('migrate is idempotent', async () => {
    assert.deepEqual(await store.migrate(), []);
  });

  it('keys: create, find by hash, revoke once, set limit, last-used in one batch', async () => {
    const id = randomUUID();
    await store.keys.create({ id, account_id: owner, country: 'sg', label: 'l', key_hash: 'a'.repeat(64), prefix: 'sg_live_abcd', last4: 'wxyz', rate_limit_per_minute: null, created_at: NOW, last_used_at: null, revoked_at: null });
    assert.equal((await store.keys.findByHash('a'.repeat(64)))?.id, id);
    assert.equal(await store.keys.findByHash('b'.repeat(64)), undefined);
    assert.equal(await store.keys.revoke(id, NOW), true);
    assert.equal(await store.keys.revoke(id, '2030-01-01T00:00:00.000Z'), true);
    assert.equal((await store.keys.get(id))?.revoked_at, NOW, 'a second revoke keeps the first time');
    assert.equal(await store.keys.revoke(randomUUID(), NOW), false);
    assert.equal(await store.keys.setRateLimit(id, 500), true);
    assert.equal((await store.keys.get(id))?.rate_limit_per_minute, 500);
    assert.equal(await store.keys.setRateLimit(randomUUID(), 5), false);
    await store.keys.recordLastUsed(new Map([[id, NOW]]));
    assert.equal((await store.keys.get(id))?.last_used_at, NOW);
  });

  it('origins: add once, list, check exactly, remove', async () => {
    assert.equal(await store.origins.add({ account_id: owner, country: 'sg', origin: 'https://a.example', created_at: NOW }), true);
    assert.equal(await store.origins.add({ account_id: owner, country: 'sg', origin: 'https://a.example', created_at: NOW }), false);
    assert.equal(await store.origins.isAllowed(owner, 'sg', 'https://a.example'), true);
    assert.equal(await store.origins.isAllowed(owner, 'my', 'https://a.example'), false);
    assert.equal((await store.origins.listForAccount(owner)).length, 1);
    assert.equal(await store.origins.remove(owner, 'sg', 'https://a.example'), true);
    assert.equal(await store.origins.remove(owner, 'sg', 'https://a.example'), false);
  });

  it('listings: upsert counts, visibility (D10), order (D9), summary', async () => {
    const other = randomUUID();
    await store.accounts.create({ id: other, name: 'Other', kind: 'individual', created_at: NOW });
    const featured = row(owner, { is_featured: 1, created_at: '2025-01-01T00:00:00.000Z' });
    const a = row(owner, { id: '00000000-0000-4000-8000-00000000000a', created_at: '2026-05-01T00:00:00.000Z' });
    const b = row(owner, { id: '00000000-0000-4000-8000-00000000000b', created_at: '2026-05-01T00:00:00.000Z' });
    const expiring = row(owner, { expiry_date: '2026-12-01T00:00:00.000Z', created_at: '2026-04-01T00:00:00.000Z' });
    const expired = row(owner, { expiry_date: NOW });
    const leased = row(owner, { status: 'leased' });
    const othersListing = row(other, { org_id: null });
    const myCountry = row(owner, { country: 'my' });
    const rows = [featured, a, b, expiring, expired, leased, othersListing, myCountry];
    assert.deepEqual(await store.listings.upsertAll(rows.map((r) => ({ row: r, keepCreatedAt: false }))), { inserted: 8, updated: 0 });
    assert.deepEqual(await store.listings.upsertAll([{ row: { ...b, title: 'new' }, keepCreatedAt: true }]), { inserted: 0, updated: 1 });

    const v = { ownerAccountId: owner, country: 'sg', now: NOW };
    const page = await store.listings.page(v, 10, 0);
    assert.deepEqual(page.map((r) => r.id), [featured.id, a.id, b.id, expiring.id]);
    assert.equal(page[2]!.title, 'new');
    assert.deepEqual(await store.listings.summary(v), { total: 4, nextExpiry: '2026-12-01T00:00:00.000Z' });
    assert.equal(await store.listings.findVisible(expired.id, v), undefined, 'expiry at now is hidden (D10)');
    assert.equal(await store.listings.findVisible(leased.id, v), undefined);
    assert.equal(await store.listings.findVisible(othersListing.id, v), undefined);
    assert.equal(await store.listings.findVisible(myCountry.id, v), undefined);
    assert.equal((await store.listings.findVisible(a.id, v))?.id, a.id);
    assert.deepEqual(await store.listings.summary({ ...v, now: '2026-12-01T00:00:00.000Z' }), { total: 3, nextExpiry: null });
  });

  it('listings: an upsert that fails part-way writes nothing', async () => {
    const before = await store.listings.summary({ ownerAccountId: owner, country: 'sg', now: NOW });
    const good = row(owner);
    const orphan = row(randomUUID()); // violates the owner foreign key
    await assert.rejects(store.listings.upsertAll([good, orphan].map((r) => ({ row: r, keepCreatedAt: false }))));
    assert.deepEqual(await store.listings.summary({ ownerAccountId: owner, country: 'sg', now: NOW }), before);
    assert.equal(await store.listings.findVisible(good.id, { ownerAccountId: owner, country: 'sg', now: NOW }), undefined);
  });

  it("changeVersion moves on this store's writes and on another process's writes", async () => {
    const v0 = store.changeVersion();
    await store.origins.add({ account_id: owner, country: 'uk', origin: 'https://b.example', created_at: NOW });
    assert.notEqual(store.changeVersion(), v0);
    const other = openStore(database.url);
    try {
      const v1 = store.changeVersion();
      await other.origins.add({ account_id: owner, country: 'au', origin: 'https://c.example', created_at: NOW }); // another connection's write
      await eventually(() => store.changeVersion() !== v1);
    } finally {
      await other.close();
    }
  });

  it('the list, count and detail queries are served by indexes', async () => {
    if (TEST_STORE === 'postgres') {
      // With a handful of rows PostgreSQL rightly prefers a scan; forbid it to prove the index serves.
      await sql`set enable_seqscan = off`.execute(store.db);
    }
    const v = { ownerAccountId: owner, country: 'sg', now: NOW };
    for (const query of [store.listings.queries.page(v, 20, 0), store.listings.queries.summary(v), store.listings.queries.detail(randomUUID(), v)]) {
      const compiled = query.compile();
      const explain = TEST_STORE === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
      const result = await store.db.executeQuery({ ...compiled, sql: explain + compiled.sql });
      const plan = JSON.stringify(result.rows);
      assert.match(plan, /listings_visible_order|sqlite_autoindex_listings_1|listings_pkey/, plan);
      assert.doesNotMatch(plan, /TEMP B-TREE|Seq Scan|SCAN listings/, plan);
    }
  });
});
