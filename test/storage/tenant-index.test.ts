import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { tenantKey, tenantOf } from '../../src/core/tenant.js';
import { importListings } from '../../src/import/import.js';
import { REPLAY_READ_CHUNK, SPLICE_LIMIT, TenantIndex } from '../../src/readmodel/tenant-index.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createMigratedTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { prng } from '../support/random.js';
import { turnsDuring } from '../support/event-loop.js';
import { listingLine, ndjsonStream } from '../support/server.js';

/**
 * The per-tenant index kept by replaying the change log must equal one built from scratch, after
 * any sequence of writes: batches small enough to be spliced in place (<= SPLICE_LIMIT listings)
 * and larger ones merged in one pass, with new listings, changes of D9 order (featured flag,
 * creation time, ties broken by id), status changes, moves to another owner or country, and
 * expiries passing with no write at all (D10).
 */
describe(`tenant index on ${TEST_STORE}: a replayed index equals a fresh build`, () => {
  let database: TestDatabase;
  let store: Store;
  let owner: string;
  let other: string;

  /** Each test's own world (issue 42): a store on a fresh, migrated database, and what the tests read in it. */
  async function world(t: TestContext): Promise<void> {
    database = await createMigratedTestDatabase();
    atEnd(t, () => database.drop());
    store = openStore(database.url, { listenForChanges: true });
    atEnd(t, () => store.close());
    await store.migrate();
    await store.start();
    owner = randomUUID();
    other = randomUUID();
    for (const id of [owner, other]) await store.accounts.create({ id, name: id, kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
  }

  it('over seeded rounds of spliced and merged replays', async (t) => {
    await world(t);
    const rand = prng(20261123);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    let now = Date.parse('2026-06-01T00:00:00.000Z');
    const clock = () => now;
    // Few distinct creation times, so that ties (broken by id) are common.
    const times = Array.from({ length: 6 }, (_, i) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 86_400_000).toISOString());
    const known = new Map<string, Record<string, unknown>>();
    const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
    const seededId = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
    const line = (): Record<string, unknown> => {
      const existing = known.size > 0 && rand() < 0.7 ? pick([...known.values()]) : undefined;
      const next: Record<string, unknown> = existing === undefined
        ? listingLine(owner, { id: seededId(), created_at: pick(times), is_featured: rand() < 0.2 })
        : { ...existing };
      const roll = rand();
      if (roll < 0.2) next.is_featured = !next.is_featured;
      else if (roll < 0.4) next.created_at = pick(times);
      else if (roll < 0.55) next.status = next.status === 'active' ? pick(['leased', 'draft']) : 'active';
      else if (roll < 0.65) next.owner_account_id = next.owner_account_id === owner ? other : owner;
      else if (roll < 0.72) next.country = next.country === 'sg' ? 'my' : 'sg';
      else if (roll < 0.85) next.expiry_date = new Date(now + Math.floor(rand() * 3_600_000)).toISOString();
      else next.title = `title ${Math.floor(rand() * 1e6)}`;
      known.set(next.id as string, next);
      return next;
    };

    // Distinct listings per batch (an import refuses a repeated id).
    const batchOf = (size: number) => {
      const batch = new Map<string, Record<string, unknown>>();
      while (batch.size < size) {
        const next = line();
        batch.set(next.id as string, next);
      }
      return [...batch.values()];
    };

    // An import, then the tenant's version as every instance knows it (PostgreSQL: once the change
    // notification has come back, as the CLI waits for it).
    const importBatch = async (batch: Array<Record<string, unknown>>) => {
      await importListings(store, ndjsonStream(batch), new Date(now));
      assert.ok((await store.broadcastSettled()).settled);
      return store.changes.currentVersion(tenantOf(owner, 'sg'));
    };

    let replays = 0;
    const index = new TenantIndex(owner, 'sg', store, clock, (kind) => (kind === 'replay' ? replays++ : undefined));
    await index.refresh(await importBatch(batchOf(200)));

    const sizes = { spliced: 0, merged: 0 };
    for (let round = 0; round < 40; round++) {
      const batch = batchOf(rand() < 0.6 ? 1 + Math.floor(rand() * 10) : SPLICE_LIMIT + 1 + Math.floor(rand() * 100));
      const version = await importBatch(batch);
      if (batch.length <= SPLICE_LIMIT) sizes.spliced++;
      else sizes.merged++;
      // Sometimes time passes too: expiries leave without a write.
      if (rand() < 0.4) now += Math.floor(rand() * 1_800_000);

      await index.refresh(version);
      const fresh = new TenantIndex(owner, 'sg', store, clock);
      await fresh.refresh(version);
      const summary = (i: TenantIndex) => i.entries.filter((e) => e.expiresAt > now).map((e) => `${e.id} ${e.changeSeq} ${e.featured} ${e.createdAt}`);
      assert.deepEqual(summary(index), summary(fresh), `round ${round}: the replayed index differs from a fresh build`);
      for (const id of known.keys()) {
        assert.equal(index.get(id)?.changeSeq, fresh.get(id)?.changeSeq, `round ${round}: get(${id})`);
      }
    }
    assert.ok(sizes.spliced > 5 && sizes.merged > 5, `both kinds of replay were exercised: ${JSON.stringify(sizes)}`);
    assert.ok(replays >= 30, `writes were replayed, not built again (${replays} replays)`);
  });

  it(`a replay of many changes reads them ${REPLAY_READ_CHUNK} per query, a turn of the event loop between reads, and gives the index of a fresh build`, async (t) => {
    await world(t);
    // A tenant of its own: the seeded rounds above leave theirs as they are.
    const tenant = randomUUID();
    await store.accounts.create({ id: tenant, name: tenant, kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
    const now = Date.parse('2026-06-01T00:00:00.000Z');
    const lines = Array.from({ length: 2 * REPLAY_READ_CHUNK + 50 }, (_, i) => listingLine(tenant, { title: `L${i}`, created_at: new Date(now - i * 60_000).toISOString() }));
    await importListings(store, ndjsonStream(lines), new Date(now));
    const index = new TenantIndex(tenant, 'sg', store, () => now);
    await index.refresh(store.changes.tenantVersion(tenantKey(tenant, 'sg')));
    assert.equal(index.size, lines.length);

    // Every listing changes: half move to the front of the order, a few stop being visible.
    const changed = lines.map((line, i) => (i % 2 === 0 ? { ...line, is_featured: true } : i % 25 === 1 ? { ...line, status: 'leased' } : { ...line, title: `changed ${i}` }));
    await importListings(store, ndjsonStream(changed), new Date(now));
    assert.ok((await store.broadcastSettled()).settled);
    const version = await store.changes.currentVersion(tenantOf(tenant, 'sg'));
    const { turns } = await turnsDuring(async () => index.refresh(version));
    // SQLite reads in slices, a turn between each; PostgreSQL at once, its driver never holding the loop.
    assert.ok(turns >= 2, `three reads, a turn between each (saw ${turns})`);

    const fresh = new TenantIndex(tenant, 'sg', store, () => now);
    await fresh.refresh(store.changes.tenantVersion(tenantKey(tenant, 'sg')));
    assert.deepEqual(index.entries.map((e) => [e.id, e.changeSeq, e.featured]), fresh.entries.map((e) => [e.id, e.changeSeq, e.featured]));
  });
});
