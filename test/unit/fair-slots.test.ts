import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairSlots } from '../../src/webhooks/fair-slots.js';

/** Issue 43 item 1: the delivery slots of an instance, shared fairly between tenants. */

/** Asks for a slot and records, in `order`, when it was granted. */
function ask(slots: FairSlots, tenant: string, order: string[]) {
  let release: (() => void) | undefined;
  const granted = slots.acquire(tenant).then((r) => {
    order.push(tenant);
    release = r;
    return r;
  });
  return { granted, release: () => release!(), isGranted: () => release !== undefined };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FairSlots', () => {
  it('grants at once up to the limit, then as slots are given back', async () => {
    const slots = new FairSlots(2, 2);
    const order: string[] = [];
    const a = ask(slots, 'a', order);
    const b = ask(slots, 'b', order);
    const c = ask(slots, 'c', order);
    await settle();
    assert.deepEqual(order, ['a', 'b']);
    assert.equal(slots.size, 2);
    assert.equal(c.isGranted(), false);
    a.release();
    await c.granted;
    assert.equal(slots.size, 2);
    b.release();
    c.release();
    assert.equal(slots.size, 0);
  });

  it('a release given twice frees one slot only', async () => {
    const slots = new FairSlots(1);
    const order: string[] = [];
    const a = ask(slots, 'a', order);
    await a.granted;
    ask(slots, 'b', order);
    const c = ask(slots, 'c', order);
    a.release();
    a.release();
    await settle();
    assert.deepEqual(order, ['a', 'b'], 'c still waits');
    assert.equal(c.isGranted(), false);
    assert.equal(slots.size, 1);
  });

  it('a tenant never holds more than its cap, even with every other slot free', async () => {
    const slots = new FairSlots(8);
    assert.equal(slots.perTenant, 2, 'a quarter of the limit by default');
    const order: string[] = [];
    const busy = Array.from({ length: 10 }, () => ask(slots, 'busy', order));
    await settle();
    assert.equal(order.length, 2);
    busy[0]!.release();
    await settle();
    assert.equal(order.length, 3, 'its next one once it holds fewer than its cap');
    assert.equal(slots.size, 2);
  });

  it('a freed slot goes to the tenant holding the fewest, whatever the order of asking', async () => {
    const slots = new FairSlots(4, 3);
    const order: string[] = [];
    // A busy tenant holds three slots and queues seven more; a quiet one holds one.
    const busy = Array.from({ length: 10 }, () => ask(slots, 'busy', order));
    const quiet = ask(slots, 'quiet', order);
    await settle();
    assert.deepEqual(order, ['busy', 'busy', 'busy', 'quiet']);
    // Then two more tenants ask, after the busy one's seven.
    const late = [ask(slots, 'late-1', order), ask(slots, 'late-2', order)];
    busy[0]!.release();
    await settle();
    assert.equal(order.at(-1), 'late-1', 'holding none beats holding two');
    quiet.release();
    await settle();
    assert.equal(order.at(-1), 'late-2');
    busy[1]!.release();
    await settle();
    assert.equal(order.at(-1), 'busy', 'with nobody else waiting, the busy tenant goes on');
    for (const l of late) l.release();
  });

  it('among tenants holding as many, the one waiting longest goes first (round robin)', async () => {
    const slots = new FairSlots(1, 1);
    const order: string[] = [];
    const first = ask(slots, 'x', order);
    await first.granted;
    const asks = [ask(slots, 'a', order), ask(slots, 'a', order), ask(slots, 'b', order), ask(slots, 'a', order), ask(slots, 'c', order)];
    first.release();
    for (let i = 0; i < asks.length; i++) {
      await settle();
      const granted = asks.find((a) => a.isGranted() && !(a as { done?: boolean }).done)!;
      (granted as { done?: boolean }).done = true;
      granted.release();
    }
    await settle();
    assert.deepEqual(order, ['x', 'a', 'b', 'c', 'a', 'a'], 'a served, then to the back of the line');
  });

  it('a limit below one is refused', () => {
    assert.throws(() => new FairSlots(0), RangeError);
    assert.throws(() => new FairSlots(4, 0), RangeError);
  });
});
