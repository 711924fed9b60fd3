import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { importListings } from '../../src/import/import.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { PRUNE_BATCH } from '../../src/storage/feed.js';
import { LAST_USED_PER_WRITE } from '../../src/storage/keys.js';
import { USAGE_PRUNE_BATCH } from '../../src/storage/usage.js';
import { createMigratedTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { turnsDuring } from '../support/event-loop.js';
import { listingLine, ndjsonStream } from '../support/server.js';

const NOW = '2026-11-22T10:00:00.000Z';

/**
 * The server's own writes in the background (last-used times, usage, the pruning of the change
 * history and of old usage) touch as many rows as there are keys or old changes. SQLite's driver
 * is synchronous, so one transaction holds the event loop for all of its rows, and a loop of
 * transactions run without a turn in between holds it for all of them (pruning 175,000 changes
 * held it 1.9 s). Each is written in small transactions with a turn of the event loop before each
 * one (storage/write.ts), which these tests count.
 */
describe(`background writes on ${TEST_STORE}: small transactions, the event loop turning between them`, () => {
  let database: TestDatabase;
  let store: Store;
  let owner: string;

  /** Each test's own world (issue 42): a store on a fresh, migrated database, and what the tests read in it. */
  async function world(t: TestContext): Promise<void> {
    database = await createMigratedTestDatabase();
    atEnd(t, () => database.drop());
    store = openStore(database.url);
    atEnd(t, () => store.close());
    await store.migrate();
    owner = randomUUID();
    await store.accounts.create({ id: owner, name: 'Org', kind: 'organisation', created_at: NOW });
  }

  it(`last-used times: ${LAST_USED_PER_WRITE} keys per transaction, every key written`, async (t) => {
    await world(t);
    const ids = Array.from({ length: 2 * LAST_USED_PER_WRITE + 50 }, () => randomUUID());
    for (const [i, id] of ids.entries()) {
      await store.keys.create({ id, account_id: owner, country: 'sg', label: `k${i}`, key_hash: i.toString(16).padStart(64, '0'), prefix: 'sg_live_abcd', last4: 'wxyz', rate_limit_per_minute: null, created_at: NOW, last_used_at: null, revoked_at: null });
    }
    const at = '2026-11-22T11:00:00.000Z';
    const { turns } = await turnsDuring(() => store.keys.recordLastUsed(new Map(ids.map((id) => [id, at]))));
    assert.ok(turns >= 3, `three transactions, a turn before each (saw ${turns})`);
    const written = await store.db.selectFrom('api_keys').select('last_used_at').where('id', 'in', ids).execute();
    assert.deepEqual(new Set(written.map((r) => r.last_used_at)), new Set([at]));
    assert.equal(written.length, ids.length);
  });

  it(`the change history is pruned ${PRUNE_BATCH} changes per transaction, the highest forgotten noted`, async (t) => {
    await world(t);
    const lines = Array.from({ length: 2 * PRUNE_BATCH + 50 }, () => listingLine(owner));
    await importListings(store, ndjsonStream(lines), new Date(NOW));
    const changes = await store.db.selectFrom('listing_changes').select('seq').orderBy('seq').execute();
    assert.equal(changes.length, lines.length);
    const { result: pruned, turns } = await turnsDuring(() => store.feed.prune('2026-11-23T00:00:00.000Z'));
    assert.equal(pruned, lines.length);
    assert.ok(turns >= 3, `three batches, a turn before each (saw ${turns})`);
    assert.equal((await store.db.selectFrom('listing_changes').select('seq').execute()).length, 0);
    assert.equal(await store.feed.prunedSeq(owner, 'sg'), Number(changes.at(-1)!.seq), "the tenant's history is known to start after its last change");
  });

  it('only changes older than the time are pruned, however the batches fall', async (t) => {
    await world(t);
    const before = (await store.db.selectFrom('listing_changes').select('seq').execute()).length;
    await importListings(store, ndjsonStream(Array.from({ length: 30 }, () => listingLine(owner))), new Date('2026-12-01T00:00:00.000Z'));
    assert.equal(await store.feed.prune('2026-11-23T00:00:00.000Z', 7), 0);
    assert.equal((await store.db.selectFrom('listing_changes').select('seq').execute()).length, before + 30);
  });

  it(`old usage buckets are deleted ${USAGE_PRUNE_BATCH} rows per transaction, newer ones and other spans kept`, async (t) => {
    await world(t);
    const old = '2026-11-01T00:00:00.000Z';
    const recent = '2026-11-22T09:55:00.000Z';
    const keyIds = Array.from({ length: 2 * USAGE_PRUNE_BATCH + 50 }, () => randomUUID());
    const rows = keyIds.flatMap((key_id) => [
      { key_id, account_id: owner, span: 300, bucket_start: old, outcome: '200', n: 1 },
      { key_id, account_id: owner, span: 300, bucket_start: recent, outcome: '200', n: 2 },
      { key_id, account_id: owner, span: 3600, bucket_start: old, outcome: '200', n: 3 },
    ]);
    for (let i = 0; i < rows.length; i += 300) await store.usage.recordBatch({ counts: rows.slice(i, i + 300), failures: [] });
    const { result: deleted, turns } = await turnsDuring(() => store.usage.pruneBuckets(new Map([[300, '2026-11-20T10:00:00.000Z']])));
    assert.equal(deleted, keyIds.length);
    assert.ok(turns >= 3, `three batches, a turn before each (saw ${turns})`);
    const left = await store.db.selectFrom('api_usage').select(['span', 'bucket_start']).execute();
    assert.equal(left.filter((r) => r.span === 300 && r.bucket_start === recent).length, keyIds.length, 'newer buckets are kept');
    assert.equal(left.filter((r) => r.span === 3600).length, keyIds.length, 'another span is pruned by its own time');
    assert.equal(left.length, 2 * keyIds.length);
  });
});
