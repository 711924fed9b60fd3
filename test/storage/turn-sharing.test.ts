import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { openStore, type Store } from '../../src/storage/index.js';
import { createMigratedTestDatabase, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { turnsDuring } from '../support/event-loop.js';

const NOW = '2026-11-24T10:00:00.000Z';

/**
 * SQLite's driver runs each statement synchronously, and a promise chain never leaves its turn of
 * the event loop: a burst of cold reads started together used to run every one of their queries
 * in the turn they arrived in. Each statement now takes its share of the turn first
 * (core/turn-budget.ts): once SQLITE_TURN_BUDGET_MS of a turn is spent, the next statements wait
 * for later turns, in order. Always SQLite: PostgreSQL's driver does not hold the loop.
 */
describe('SQLite: statements share the turns of the event loop', () => {
  let database: TestDatabase;
  let store: Store;
  const hashes: string[] = [];
  const ids: string[] = [];

  /** Each test's own world (issue 42): a store on a fresh, migrated database, and what the tests read in it. */
  async function world(t: TestContext): Promise<void> {
    database = await createMigratedTestDatabase('sqlite');
    atEnd(t, () => database.drop());
    store = openStore(database.url);
    atEnd(t, () => store.close());
    await store.migrate();
    const owner = randomUUID();
    await store.accounts.create({ id: owner, name: 'Org', kind: 'organisation', created_at: NOW });
    for (let i = 0; i < 200; i++) {
      const id = randomUUID();
      const hash = i.toString(16).padStart(64, '0');
      await store.keys.create({ id, account_id: owner, country: 'sg', label: `k${i}`, key_hash: hash, prefix: 'sg_live_abcd', last4: 'wxyz', rate_limit_per_minute: null, created_at: NOW, last_used_at: null, revoked_at: null });
      ids.push(id);
      hashes.push(hash);
    }
  }

  it(`a burst of look-ups started together runs over several turns, each answered, in order`, async (t) => {
    await world(t);
    // 2,000 look-ups of about 20-50 µs each: far more than one turn's ${SQLITE_TURN_BUDGET_MS} ms.
    const asked = Array.from({ length: 2000 }, (_, i) => i % hashes.length);
    const finished: number[] = [];
    const { result, turns } = await turnsDuring(() =>
      Promise.all(
        asked.map(async (k, n) => {
          const found = await store.keys.findByHash(hashes[k]!);
          finished.push(n);
          return found?.id;
        }),
      ),
    );
    assert.deepEqual(result, asked.map((k) => ids[k]), 'every look-up answered with its own key');
    assert.deepEqual(finished, asked.map((_, n) => n), 'in the order they were asked');
    // Without the budget every look-up ran in the turn of the burst: no turn passed (0).
    assert.ok(turns >= 2, `the look-ups were spread over turns (saw ${turns})`);
  });

  it('a write transaction takes its turn like a read and is not split', async (t) => {
    await world(t);
    const at = '2026-11-24T11:00:00.000Z';
    const reads = hashes.slice(0, 100).map((h) => store.keys.findByHash(h));
    await store.keys.recordLastUsed(new Map(ids.map((id) => [id, at])));
    assert.equal((await Promise.all(reads)).filter((r) => r !== undefined).length, 100);
    const written = await store.db.selectFrom('api_keys').select('last_used_at').execute();
    assert.deepEqual(new Set(written.map((r) => r.last_used_at)), new Set([at]));
  });
});
