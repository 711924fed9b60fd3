import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsageBatch } from '../../src/storage/index.js';
import { KEYS_PER_WRITE, UsageCounter } from '../../src/usage/index.js';
import { TestClock } from '../support/server.js';

/**
 * A flush is written in parts of at most KEYS_PER_WRITE keys, one transaction each (so that with
 * SQLite no part holds the event loop long). When a part fails, the parts before it are stored and
 * must not be counted again; it and the parts after it are kept for the next flush, added to what
 * was counted meanwhile. The store side (a real transaction per part) is covered in
 * test/http/usage.test.ts; here the counter's bookkeeping, with a write that fails on demand.
 */
describe('usage counter: a flush in parts (unit)', () => {
  function counterWith(failOnCall: number | undefined) {
    const clock = new TestClock();
    const stored: UsageBatch[] = [];
    const errors: unknown[] = [];
    let calls = 0;
    const counter = new UsageCounter({
      clock: clock.now,
      onError: (error) => errors.push(error),
      prune: async () => 0,
      write: async (batch) => {
        calls++;
        if (calls === failOnCall) throw new Error('the database went away');
        stored.push(batch);
      },
    });
    /** What the stored parts add up to, per key and span. */
    const totals = () => {
      const sums = new Map<string, number>();
      for (const batch of stored) for (const row of batch.counts) sums.set(`${row.key_id} ${row.span}`, (sums.get(`${row.key_id} ${row.span}`) ?? 0) + row.n);
      return sums;
    };
    return { clock, counter, stored, errors, totals };
  }

  const keyIds = Array.from({ length: 2 * KEYS_PER_WRITE + 50 }, (_, i) => `key-${String(i).padStart(4, '0')}`);

  it(`writes at most ${KEYS_PER_WRITE} keys per part, every count once`, async () => {
    const { clock, counter, stored, totals } = counterWith(undefined);
    for (const [i, id] of keyIds.entries()) counter.count(id, 'account', 0, clock.now(), i + 1);
    await counter.flush();
    assert.equal(stored.length, 3);
    for (const batch of stored) assert.ok(new Set(batch.counts.map((r) => r.key_id)).size <= KEYS_PER_WRITE);
    const sums = totals();
    for (const [i, id] of keyIds.entries()) {
      assert.equal(sums.get(`${id} 300`), i + 1, `${id}: its five-minute bucket`);
      assert.equal(sums.get(`${id} 3600`), i + 1, `${id}: its hour`);
    }
  });

  it('a part that fails is kept with the ones after it, and the parts before it are not written again', async () => {
    const { clock, counter, stored, errors, totals } = counterWith(2);
    for (const [i, id] of keyIds.entries()) counter.count(id, 'account', 0, clock.now(), i + 1);
    await counter.flush();
    assert.equal(errors.length, 1, 'the failure is reported once');
    assert.equal(stored.length, 1, 'the first part was stored before the second failed');
    // Counted meanwhile: added to what was kept.
    counter.count(keyIds.at(-1)!, 'account', 0, clock.now(), 1000);
    counter.count(keyIds[0]!, 'account', 0, clock.now(), 1000);
    await counter.flush();
    const sums = totals();
    for (const [i, id] of keyIds.entries()) {
      const expected = i + 1 + (i === 0 || i === keyIds.length - 1 ? 1000 : 0);
      assert.equal(sums.get(`${id} 300`), expected, `${id}: counted once, nothing lost`);
      assert.equal(sums.get(`${id} 3600`), expected);
    }
  });
});
