import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchPerTurn } from '../../src/core/turn-batch.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('batchPerTurn (look-ups of one turn of the event loop made together)', () => {
  it('loads every key asked for in one turn with one call, each caller getting its own value', async () => {
    const calls: string[][] = [];
    const find = batchPerTurn(async (keys: string[]) => {
      calls.push(keys);
      return new Map(keys.filter((k) => k !== 'absent').map((k) => [k, k.toUpperCase()]));
    });
    const answers = Promise.all([find('a'), find('b'), find('a'), find('absent')]);
    assert.deepEqual(calls, [], 'nothing is loaded before the end of the turn');
    assert.deepEqual(await answers, ['A', 'B', 'A', undefined]);
    assert.deepEqual(calls, [['a', 'b', 'absent']], 'one call, each key once');

    assert.equal(await find('c'), 'C');
    assert.deepEqual(calls.at(-1), ['c'], 'a later turn is a call of its own');
  });

  it('keys asked for while a batch is being loaded go into the next one', async () => {
    const calls: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const find = batchPerTurn(async (keys: string[]) => {
      calls.push(keys);
      if (calls.length === 1) await gate;
      return new Map(keys.map((k) => [k, k]));
    });
    const first = find('a');
    await nextTurn();
    const second = find('b');
    await nextTurn();
    assert.deepEqual(calls, [['a'], ['b']]);
    assert.equal(await second, 'b', 'not held back by the batch still loading');
    release();
    assert.equal(await first, 'a');
  });

  it('a failed load fails every caller of its turn, and the next turn loads again', async () => {
    let fail = true;
    const find = batchPerTurn(async (keys: string[]) => {
      if (fail) throw new Error('database away');
      return new Map(keys.map((k) => [k, 1]));
    });
    const results = await Promise.allSettled([find('a'), find('b')]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    assert.match(String((results[0] as PromiseRejectedResult).reason), /database away/);
    fail = false;
    assert.equal(await find('a'), 1);
  });
});
