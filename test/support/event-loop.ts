/**
 * How many turns of the event loop (check phases) passed while `work` ran: the tests of work that
 * goes in slices (SQLite's driver is synchronous, so a slice holds the loop until it yields) count
 * them, since without a yield the count stays 0 however long the work takes.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    running = false;
  }
}
