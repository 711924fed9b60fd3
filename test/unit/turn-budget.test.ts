import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnBudget } from '../../src/core/turn-budget.js';

/** A clock the test moves: each step "takes" the time the test says. */
function fakeClock() {
  let ms = 0;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Lets every pending promise reaction run (several hops), without leaving the turn. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('TurnBudget: a share of each turn of the event loop for steps that hold it', () => {
  it('lets steps through at once while the turn\'s window has time left', () => {
    const clock = fakeClock();
    const budget = new TurnBudget(3, clock.now);
    assert.equal(budget.take(), undefined);
    clock.advance(1);
    budget.done();
    assert.equal(budget.take(), undefined);
    clock.advance(1.5);
    budget.done();
    assert.equal(budget.queued, 0);
  });

  it('makes steps wait for a later turn once the window is spent, and opens a new window each turn', async () => {
    const clock = fakeClock();
    const budget = new TurnBudget(3, clock.now);
    assert.equal(budget.take(), undefined);
    clock.advance(3);
    budget.done();
    let started = false;
    const waiting = budget.take();
    assert.ok(waiting instanceof Promise, 'the window is spent: the step waits');
    void waiting.then(() => (started = true));
    await settle();
    assert.equal(started, false, 'not in the same turn');
    await nextTurn();
    await settle();
    assert.equal(started, true, 'on the next turn');
    budget.done();
    await nextTurn();
    assert.equal(budget.take(), undefined, 'a new turn, a new window');
    budget.done();
  });

  it('lets waiting steps go one at a time, in order of arrival, the next when the one before is done', async () => {
    const clock = fakeClock();
    const budget = new TurnBudget(3, clock.now);
    assert.equal(budget.take(), undefined);
    clock.advance(5);
    const order: number[] = [];
    const steps = [1, 2, 3].map((n) => budget.take()!.then(() => order.push(n)));
    budget.done();
    await settle();
    assert.deepEqual(order, [], 'the window of this turn is spent');
    await nextTurn();
    await settle();
    assert.deepEqual(order, [1], 'one step at a time');
    clock.advance(1);
    budget.done();
    await settle();
    assert.deepEqual(order, [1, 2], 'the next as soon as the one before is done, while the window has time');
    clock.advance(2);
    budget.done();
    await settle();
    assert.deepEqual(order, [1, 2], 'the window (3 ms) is spent: the third waits for the next turn');
    await nextTurn();
    await settle();
    assert.deepEqual(order, [1, 2, 3]);
    budget.done();
    await Promise.all(steps);
    assert.equal(budget.queued, 0);
  });

  it('keeps a new step behind the waiting ones, even when the window has time left', async () => {
    const clock = fakeClock();
    const budget = new TurnBudget(3, clock.now);
    budget.take();
    clock.advance(4);
    const order: string[] = [];
    const a = budget.take()!.then(() => order.push('a'));
    const b = budget.take()!.then(() => order.push('b'));
    budget.done();
    await nextTurn();
    await settle();
    assert.deepEqual(order, ['a']);
    // The new turn's window has time, but b is waiting: c goes behind it.
    const c = budget.take();
    assert.ok(c instanceof Promise, 'c waits behind b');
    void c.then(() => order.push('c'));
    budget.done();
    await settle();
    assert.deepEqual(order, ['a', 'b']);
    budget.done();
    await settle();
    assert.deepEqual(order, ['a', 'b', 'c']);
    budget.done();
    await Promise.all([a, b, c]);
  });
});
