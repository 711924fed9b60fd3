import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { importListings } from '../../src/listings/import.js';
import { createReadModel, type ListingReads } from '../../src/readmodel/index.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { turnsDuring } from '../support/event-loop.js';
import { listingLine, ndjsonStream, TestClock } from '../support/server.js';

interface FeedEvent {
  type: 'listing.upserted' | 'listing.removed';
  id: string;
  at: string;
  listing?: { id: string; title: string | null };
}
interface FeedAnswer {
  items: FeedEvent[];
  next_cursor: string;
  has_more: boolean;
}

/**
 * One answer of the change feed (D22) as the read model computes it, on a real store: the
 * snapshot is read in batches with the event loop turning between them (SQLite's driver is
 * synchronous), and another process's write that lands while an answer is computed (between two
 * batches of the snapshot, or between the snapshot and the log) never leaves a copy behind: the
 * listing comes once in the answer, with the state read last.
 */
describe(`change feed answers on ${TEST_STORE}: read in batches, exact under concurrent writes`, () => {
  let database: TestDatabase;
  let store: Store;
  let reads: ListingReads;
  const clock = new TestClock();

  before(async () => {
    database = await createTestDatabase();
    store = openStore(database.url, { listenForChanges: true });
    await store.migrate();
    await store.start();
    reads = createReadModel(store, clock.now, { cacheTtlMs: 0 });
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  async function tenantWith(count: number): Promise<{ owner: string; lines: Array<Record<string, unknown>> }> {
    const owner = randomUUID();
    await store.accounts.create({ id: owner, name: owner, kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
    const lines = Array.from({ length: count }, (_, i) => listingLine(owner, { title: `Listing ${i}` }));
    await importListings(store, ndjsonStream(lines), new Date(clock.now() - 60_000));
    return { owner, lines };
  }

  const answer = async (owner: string, cursor?: string): Promise<FeedAnswer> =>
    JSON.parse((await reads.changes({ ownerAccountId: owner, country: 'sg' }, cursor, 1000)).bytes.toString()) as FeedAnswer;

  /** The copy a client keeps by applying every event in order. */
  const apply = (copy: Map<string, string | null>, events: readonly FeedEvent[]) => {
    for (const e of events) {
      if (e.type === 'listing.upserted') copy.set(e.id, e.listing!.title);
      else copy.delete(e.id);
    }
    return copy;
  };

  it('an answer of many events reads its snapshot in batches, the event loop turning between them', async () => {
    const { owner, lines } = await tenantWith(650);
    const { result: first, turns } = await turnsDuring(() => answer(owner));
    assert.ok(turns >= 3, `four reads of 200, a turn before each after the first (saw ${turns})`);
    assert.equal(first.items.length, lines.length);
    assert.equal(new Set(first.items.map((e) => e.id)).size, lines.length);
    assert.equal(first.has_more, false);
  });

  it('a listing written between two batches of the snapshot comes once, with the state written', async () => {
    const { owner, lines } = await tenantWith(450);
    const changed = lines[0]!;
    const snapshot = store.feed.snapshot;
    let calls = 0;
    store.feed.snapshot = async (...args) => {
      const rows = await snapshot(...args);
      // After the first batch: another process changes the first listing, whose update time moves
      // it to the end of the snapshot's order, into a batch still to be read.
      if (++calls === 1) await importListings(store, ndjsonStream([{ ...changed, title: 'written meanwhile' }]), new Date(clock.now()));
      return rows;
    };
    let first: FeedAnswer;
    try {
      first = await answer(owner);
    } finally {
      store.feed.snapshot = snapshot;
    }
    // SQLite reads the snapshot in batches; PostgreSQL at once, so there the write lands after it.
    if (TEST_STORE === 'sqlite') assert.ok(calls >= 3, 'the snapshot was read in batches');
    const ids = first.items.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, 'no listing twice in one answer');
    assert.equal(ids.at(-1), changed.id, 'told at the place of its latest change');
    const copy = apply(new Map(), first.items);
    assert.equal(copy.get(changed.id as string), 'written meanwhile');
    assert.equal(copy.size, lines.length);
    const next = await answer(owner, first.next_cursor);
    assert.deepEqual(next.items, [], 'nothing left to tell');
  });

  it('a listing written again between two batches of the log comes once, with its latest state', async () => {
    const { owner, lines } = await tenantWith(250);
    const first = await answer(owner);
    assert.equal(first.has_more, false);
    const copy = apply(new Map(), first.items);
    // Every listing changes: more changes than one batch of the log.
    await importListings(store, ndjsonStream(lines.map((line) => ({ ...line, title: `second ${line.title as string}` }))), new Date(clock.now()));
    const again = lines[0]!;
    const lastChanges = store.feed.lastChanges;
    let calls = 0;
    store.feed.lastChanges = async (...args) => {
      // The first batch (with the listing's second state) has been read and told; before the
      // second batch is read, the listing is written a third time.
      if (++calls === 2) await importListings(store, ndjsonStream([{ ...again, title: 'third' }]), new Date(clock.now()));
      return lastChanges(...args);
    };
    let second: FeedAnswer;
    try {
      second = await answer(owner, first.next_cursor);
    } finally {
      store.feed.lastChanges = lastChanges;
    }
    assert.ok(calls >= 2, 'the log was read in batches');
    const ids = second.items.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, 'no listing twice in one answer');
    apply(copy, second.items);
    // A row read for the first batch must not stand for the later change.
    assert.equal(copy.get(again.id as string), 'third');
    const third = await answer(owner, second.next_cursor);
    apply(copy, third.items);
    assert.equal(copy.get(again.id as string), 'third');
    assert.equal(copy.get(lines[1]!.id as string), `second ${lines[1]!.title as string}`);
  });

  it('a listing written between the snapshot and the log comes once, with its latest state, and the copy is exact', async () => {
    const { owner, lines } = await tenantWith(30);
    const changed = lines[5]!;
    const lastChanges = store.feed.lastChanges;
    let calls = 0;
    store.feed.lastChanges = async (...args) => {
      // The snapshot has read every listing; before the log is read, another process writes one.
      if (++calls === 1) await importListings(store, ndjsonStream([{ ...changed, title: 'written after the snapshot' }]), new Date(clock.now()));
      return lastChanges(...args);
    };
    let first: FeedAnswer;
    try {
      first = await answer(owner);
    } finally {
      store.feed.lastChanges = lastChanges;
    }
    assert.equal(calls >= 1, true, 'the answer went on to the log');
    const ids = first.items.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, 'no listing twice in one answer');
    assert.equal(ids.at(-1), changed.id);
    const copy = apply(new Map(), first.items);
    // Without the log's state the copy would keep the snapshot's title, and the cursor would have
    // moved past the change: the next poll would not bring it either.
    assert.equal(copy.get(changed.id as string), 'written after the snapshot');
    const next = await answer(owner, first.next_cursor);
    apply(copy, next.items);
    assert.equal(copy.get(changed.id as string), 'written after the snapshot');
    assert.equal(copy.size, lines.length);
  });
});
