import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { importListings } from '../../src/import/import.js';
import type { Store } from '../../src/storage/index.js';
import { TEST_STORE } from '../support/database.js';
import { turnsDuring } from '../support/event-loop.js';
import { openReadModelOnStore, type ReadModelOnStore } from '../support/read-model.js';
import { ndjsonStream, TestClock } from '../support/server.js';
import { atEnd } from '../support/world.js';
import { tenantOf } from '../../src/core/tenant.js';

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
  let model: ReadModelOnStore;
  let store: Store;
  let clock: TestClock;

  /** Each test's own world (issue 42): a read model over a store on a fresh database, with its own clock. */
  async function world(t: TestContext): Promise<void> {
    clock = new TestClock();
    model = await openReadModelOnStore(clock, 0);
    atEnd(t, () => model.close());
    store = model.store;
  }

  const tenantWith = (count: number) => model.tenantWith(count);

  const answer = async (owner: string, cursor?: string): Promise<FeedAnswer> =>
    JSON.parse((await model.reads.changes(tenantOf(owner, 'sg'), cursor, 1000)).bytes.toString()) as FeedAnswer;

  /** The copy a client keeps by applying every event in order. */
  const apply = (copy: Map<string, string | null>, events: readonly FeedEvent[]) => {
    for (const e of events) {
      if (e.type === 'listing.upserted') copy.set(e.id, e.listing!.title);
      else copy.delete(e.id);
    }
    return copy;
  };

  /**
   * One answer while another process writes `line`: at the `nth` read of the store's `read`
   * (snapshot batches or log batches), after that read or before it. Returns the answer and how
   * many reads it made.
   */
  async function answerWithWriteAt(
    owner: string,
    cursor: string | undefined,
    at: { read: 'snapshot' | 'lastChanges'; nth: number; when: 'after' | 'before' },
    line: Record<string, unknown>,
  ): Promise<{ answer: FeedAnswer; reads: number }> {
    const feed = store.feed as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = feed[at.read]!;
    let reads = 0;
    const write = () => importListings(store, ndjsonStream([line]), new Date(clock.now()));
    feed[at.read] = async (...args) => {
      const nth = ++reads === at.nth;
      if (nth && at.when === 'before') await write();
      const result = await original(...args);
      if (nth && at.when === 'after') await write();
      return result;
    };
    try {
      return { answer: await answer(owner, cursor), reads };
    } finally {
      feed[at.read] = original;
    }
  }

  it('an answer of many events reads its snapshot in batches, the event loop turning between them', async (t) => {
    await world(t);
    const { owner, lines } = await tenantWith(650);
    const { result: first, turns } = await turnsDuring(() => answer(owner));
    assert.ok(turns >= 3, `four reads of 200, a turn before each after the first (saw ${turns})`);
    assert.equal(first.items.length, lines.length);
    assert.equal(new Set(first.items.map((e) => e.id)).size, lines.length);
    assert.equal(first.has_more, false);
  });

  it('a listing written between two batches of the snapshot comes once, with the state written', async (t) => {
    await world(t);
    const { owner, lines } = await tenantWith(450);
    const changed = lines[0]!;
    // After the first batch: another process changes the first listing, whose update time moves
    // it to the end of the snapshot's order, into a batch still to be read.
    const { answer: first, reads: calls } = await answerWithWriteAt(owner, undefined, { read: 'snapshot', nth: 1, when: 'after' }, { ...changed, title: 'written meanwhile' });
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

  it('a listing written again between two batches of the log comes once, with its latest state', async (t) => {
    await world(t);
    const { owner, lines } = await tenantWith(250);
    const first = await answer(owner);
    assert.equal(first.has_more, false);
    const copy = apply(new Map(), first.items);
    // Every listing changes: more changes than one batch of the log.
    await importListings(store, ndjsonStream(lines.map((line) => ({ ...line, title: `second ${line.title as string}` }))), new Date(clock.now()));
    const again = lines[0]!;
    // The first batch (with the listing's second state) has been read and told; before the second
    // batch is read, the listing is written a third time.
    const { answer: second, reads: calls } = await answerWithWriteAt(owner, first.next_cursor, { read: 'lastChanges', nth: 2, when: 'before' }, { ...again, title: 'third' });
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

  it('a listing written between the snapshot and the log comes once, with its latest state, and the copy is exact', async (t) => {
    await world(t);
    const { owner, lines } = await tenantWith(30);
    const changed = lines[5]!;
    // The snapshot has read every listing; before the log is read, another process writes one.
    const { answer: first, reads: calls } = await answerWithWriteAt(owner, undefined, { read: 'lastChanges', nth: 1, when: 'before' }, { ...changed, title: 'written after the snapshot' });
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
