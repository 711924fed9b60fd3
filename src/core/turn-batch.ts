/**
 * Look-ups by key, made together: every key asked for during one turn of the event loop is passed
 * to `loadMany` once, at the end of that turn's I/O (a `setImmediate`), and each caller gets its
 * own value (undefined when `loadMany` found none). A key asked for twice in a turn is loaded once.
 * If `loadMany` fails, every caller of its turn gets the error.
 *
 * Why: requests that arrive together are handled in one turn (up to one per connection), and when
 * they miss the cache each would read the database alone: fifty reads of one row cost about ten
 * times one read of fifty (DataLoader's batching, for the same reason).
 */
export function batchPerTurn<K, V>(loadMany: (keys: K[]) => Promise<ReadonlyMap<K, V>>): (key: K) => Promise<V | undefined> {
  let batch: Map<K, Waiting<V>> | undefined;

  const run = async (keys: Map<K, Waiting<V>>): Promise<void> => {
    try {
      const found = await loadMany([...keys.keys()]);
      for (const [key, waiting] of keys) waiting.resolve(found.get(key));
    } catch (error) {
      for (const waiting of keys.values()) waiting.reject(error);
    }
  };

  return (key) => {
    if (batch === undefined) {
      const mine = new Map<K, Waiting<V>>();
      batch = mine;
      setImmediate(() => {
        batch = undefined;
        void run(mine);
      });
    }
    let waiting = batch.get(key);
    if (waiting === undefined) {
      waiting = waitingFor<V>();
      batch.set(key, waiting);
    }
    return waiting.promise;
  };
}

interface Waiting<V> {
  promise: Promise<V | undefined>;
  resolve(value: V | undefined): void;
  reject(error: unknown): void;
}

function waitingFor<V>(): Waiting<V> {
  let resolve!: (value: V | undefined) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<V | undefined>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
