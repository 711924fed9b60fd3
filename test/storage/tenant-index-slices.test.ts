import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { importListings } from '../../src/listings/import.js';
import { compareD9, MERGE_SLICE, merged, REPLAY_READ_CHUNK, TenantIndex, type IndexEntry } from '../../src/readmodel/tenant-index.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { prng } from '../support/random.js';
import { listingLine, ndjsonStream } from '../support/server.js';

/** How many turns of the event loop (check phases) passed while `work` ran. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    running = false;
  }
}

/**
 * A replay that catches an index up with many changes (an import of a thousand listings into a
 * tenant of 100,000) held the event loop about 30 ms at once: a seek per changed listing, then a
 * pass over the whole tenant. Both now go in slices with a turn of the event loop between them,
 * and give the same index.
 */
describe('tenant index: a large replay in slices (unit)', () => {
  it(`merge: ${MERGE_SLICE} entries per turn, the same order as one sort of the result`, async () => {
    const rand = prng(20261124);
    const times = Array.from({ length: 40 }, (_, i) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 3_600_000).toISOString());
    const entry = (id: string): IndexEntry => ({
      id,
      changeSeq: 1,
      featured: rand() < 0.2 ? 1 : 0,
      createdAt: times[Math.floor(rand() * times.length)]!,
      expiresAt: Infinity,
      price: null,
      size: null,
      usage: 0,
      takeover: 0,
    });
    const entries = Array.from({ length: 2 * MERGE_SLICE + 500 }, (_, i) => entry(`id-${String(i).padStart(6, '0')}`)).sort(compareD9);
    const touched = new Set(entries.filter(() => rand() < 0.1).map((e) => e.id));
    // The touched ones changed (another place in the order), some left, and new ones came.
    const fresh = [...touched].filter(() => rand() < 0.8).map(entry);
    fresh.push(...Array.from({ length: 300 }, (_, i) => entry(`new-${i}`)));
    fresh.sort(compareD9);
    const { result, turns } = await turnsDuring(() => merged(entries, touched, fresh));
    assert.ok(turns >= 2, `three slices, a turn between each (saw ${turns})`);
    const expected = [...entries.filter((e) => !touched.has(e.id)), ...fresh].sort(compareD9);
    assert.deepEqual(result.map((e) => e.id), expected.map((e) => e.id));
  });
});

describe(`tenant index on ${TEST_STORE}: a replay reads the changed listings in slices`, () => {
  let database: TestDatabase;
  let store: Store;
  let owner: string;

  before(async () => {
    database = await createTestDatabase();
    store = openStore(database.url, { listenForChanges: true });
    await store.migrate();
    await store.start();
    owner = randomUUID();
    await store.accounts.create({ id: owner, name: owner, kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  it(`${REPLAY_READ_CHUNK} listings per read, a turn between reads, and the index of a fresh build`, async () => {
    const now = Date.parse('2026-06-01T00:00:00.000Z');
    const lines = Array.from({ length: 2 * REPLAY_READ_CHUNK + 50 }, (_, i) => listingLine(owner, { title: `L${i}`, created_at: new Date(now - i * 60_000).toISOString() }));
    await importListings(store, ndjsonStream(lines), new Date(now));
    const index = new TenantIndex(owner, 'sg', store, () => now);
    await index.refresh(store.changes.tenantVersion(owner, 'sg'));
    assert.equal(index.size, lines.length);

    // Every listing changes: half move to the front of the order, a few stop being visible.
    const changed = lines.map((line, i) => (i % 2 === 0 ? { ...line, is_featured: true } : i % 25 === 1 ? { ...line, status: 'leased' } : { ...line, title: `changed ${i}` }));
    await importListings(store, ndjsonStream(changed), new Date(now));
    await store.broadcastSettled();
    await store.changes.pending();
    const { turns } = await turnsDuring(async () => index.refresh(store.changes.tenantVersion(owner, 'sg')));
    assert.ok(turns >= 2, `three reads, a turn between each (saw ${turns})`);

    const fresh = new TenantIndex(owner, 'sg', store, () => now);
    await fresh.refresh(store.changes.tenantVersion(owner, 'sg'));
    assert.deepEqual(index.entries.map((e) => [e.id, e.changeSeq, e.featured]), fresh.entries.map((e) => [e.id, e.changeSeq, e.featured]));
  });
});
