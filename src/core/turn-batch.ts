import DataLoader from 'dataloader';

/** `LISTINGS_TURN_BATCH=off` (read once): each look-up is loaded alone, at once; the switch of the design record's A/B (bench/ab.ts). */
const BATCHED = process.env.LISTINGS_TURN_BATCH !== 'off';

/**
 * Look-ups by key, made together: every key asked for during one turn of the event loop is passed
 * to `loadMany` once, at the end of that turn's I/O (DataLoader, scheduled with `setImmediate`),
 * and each caller gets its own value (undefined when `loadMany` found none). A key asked for twice
 * in a turn is loaded once; nothing is cached from one turn to the next. If `loadMany` fails,
 * every caller of its turn gets the error.
 *
 * Why: requests that arrive together are handled in one turn (up to one per connection), and when
 * they miss the cache each would read the database alone: fifty reads of one row cost about ten
 * times one read of fifty (docs/design/turn-batched-reads.md).
 */
export function batchPerTurn<K, V>(loadMany: (keys: K[]) => Promise<ReadonlyMap<K, V>>): (key: K) => Promise<V | undefined> {
  if (!BATCHED) return async (key) => (await loadMany([key])).get(key);
  const loader = new DataLoader<K, V | undefined>(
    async (keys) => {
      const found = await loadMany([...new Set(keys)]);
      return keys.map((key) => found.get(key));
    },
    // No cache: a row read in one turn may have changed by the next. Duplicates are merged above.
    { cache: false, batchScheduleFn: (run) => setImmediate(run) },
  );
  return (key) => loader.load(key);
}
