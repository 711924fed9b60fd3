import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MERGE_SLICE, merged, type IndexEntry } from '../../src/readmodel/tenant-index.js';
import { compareD9 } from '../../src/storage/visibility.js';
import { turnsDuring } from '../support/event-loop.js';
import { prng } from '../support/random.js';

/**
 * A replay that catches an index up with many changes (an import of a thousand listings into a
 * tenant of 100,000) held the event loop about 30 ms at once: a seek per changed listing, then a
 * pass over the whole tenant. The merge now goes in slices with a turn of the event loop between
 * them, and gives the same order (the reads in slices: tenant-index.test.ts).
 */
describe('tenant index: a large replay in slices (unit)', () => {
  it(`merge: ${MERGE_SLICE} entries per turn, the same order as one sort of the result`, async () => {
    const rand = prng(20261124);
    const times = Array.from({ length: 40 }, (_, i) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 3_600_000).toISOString());
    const entry = (id: string): IndexEntry => ({
      id,
      changeSeq: 1,
      slot: 0,
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
