import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { importListings } from '../../src/listings/import.js';
import { createReadModel, type Body, type ListingReads } from '../../src/readmodel/index.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { listingLine, ndjsonStream, TestClock } from '../support/server.js';

/**
 * What the read model caches owns its memory. Node cuts short buffers (under 4 KB: a listing, a
 * small page, a short feed answer) from a shared 8 KB pool, and one cached slice keeps the whole
 * slab alive; the caches' byte bound (READ_CACHE_MAX_MB) counts only the slices, so the memory
 * they held grew far past it (README, Performance).
 */
describe(`cached answers on ${TEST_STORE} own their bytes (no slice of Node's buffer pool)`, () => {
  let database: TestDatabase;
  let store: Store;
  let reads: ListingReads;
  let owner: string;
  const ids: string[] = [];
  const clock = new TestClock();

  before(async () => {
    database = await createTestDatabase();
    store = openStore(database.url, { listenForChanges: true });
    await store.migrate();
    await store.start();
    reads = createReadModel(store, clock.now, { cacheTtlMs: 5000 });
    owner = randomUUID();
    await store.accounts.create({ id: owner, name: 'Org', kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
    const lines = Array.from({ length: 3 }, (_, i) => listingLine(owner, { title: `Listing ${i}` }));
    for (const line of lines) ids.push(line.id as string);
    await importListings(store, ndjsonStream(lines), new Date(clock.now() - 60_000));
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  const ownsItsMemory = (body: Body | undefined, what: string) => {
    assert.ok(body !== undefined, what);
    assert.ok(body.bytes.length < 4096, `${what} is small enough for the pool (${body.bytes.length} bytes)`);
    assert.equal(body.bytes.byteOffset, 0, `${what}: not a slice at an offset of a shared buffer`);
    assert.equal(body.bytes.buffer.byteLength, body.bytes.length, `${what}: its memory is its own`);
  };

  it('a detail answer (the cached listing), a page and a feed answer', async () => {
    const tenant = { ownerAccountId: owner, country: 'sg' as const };
    for (const id of ids) ownsItsMemory(await reads.detail(tenant, id), `detail ${id}`);
    ownsItsMemory(await reads.listPage(tenant, 1, 1), 'a page of one listing');
    ownsItsMemory(await reads.changes(tenant, undefined, 1), 'a feed answer of one event');
    // What the answers say is unchanged.
    const page = JSON.parse((await reads.listPage(tenant, 1, 20)).bytes.toString()) as { total: number; items: Array<{ id: string }> };
    assert.equal(page.total, 3);
    assert.deepEqual(new Set(page.items.map((item) => item.id)), new Set(ids));
  });
});
