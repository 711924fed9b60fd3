import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idLists } from '../../src/storage/listings.js';

describe('idLists (the `id in (...)` lists of by-id reads)', () => {
  it('pads each list to the next of a few lengths with its last id, so that a few SQL texts serve every count', () => {
    assert.deepEqual(idLists([]), []);
    assert.deepEqual(idLists(['a']), [['a']]);
    assert.deepEqual(idLists(['a', 'b', 'c']), [['a', 'b', 'c', 'c']]);
    const lengths = new Set<number>();
    for (let n = 1; n <= 1200; n++) {
      const ids = Array.from({ length: n }, (_, i) => `id${i}`);
      const lists = idLists(ids);
      for (const list of lists) lengths.add(list.length);
      assert.deepEqual([...new Set(lists.flat())], ids, `every id once, in order, for ${n}`);
      assert.ok(lists.every((list) => list.length <= 128), 'at most 128 a list: a statement holds the event loop');
    }
    assert.deepEqual([...lengths].sort((x, y) => x - y), [1, 2, 4, 8, 16, 32, 64, 128]);
  });
});
