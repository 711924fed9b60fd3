import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SeenIds } from '../../src/import/seen-ids.js';
import { prng } from '../support/random.js';

/** import/seen-ids.ts: never "new" for an id seen before; rarely "maybe seen" for a new one. */

function uuids(count: number, seed: number): string[] {
  const rand = prng(seed);
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
  return Array.from({ length: count }, () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`);
}

describe('SeenIds (the import\'s repeated-id check)', () => {
  it('an id seen before is always "maybe seen", however many came between', () => {
    const seen = new SeenIds();
    const ids = uuids(200_000, 1);
    for (const id of ids) seen.add(id);
    for (const id of ids) assert.equal(seen.add(id), true, id);
  });

  it('new ids are almost always "new": a handful of false "maybe" in 200,000 after 200,000 others', () => {
    const seen = new SeenIds();
    for (const id of uuids(200_000, 2)) seen.add(id);
    const fresh = uuids(200_000, 3);
    const maybe = fresh.filter((id) => seen.add(id)).length;
    // Expected about 7 ((1 - e^(-2 * 200,000 / 2^26))^2 * 200,000); a filter with one hash, or a
    // smaller one, gives hundreds.
    assert.ok(maybe < 60, `${maybe} false "maybe seen"`);
  });

  it('ids that differ in one character are told apart', () => {
    const seen = new SeenIds();
    assert.equal(seen.add('3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'), false);
    assert.equal(seen.add('3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b72'), false);
    assert.equal(seen.add('3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'), true);
  });
});
