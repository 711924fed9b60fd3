import type { TestContext } from 'node:test';
import { startTestServer, TestClock, type TestServer } from './server.js';

/**
 * A fresh world for one test (issue 42): its own service, started on its own freshly migrated
 * database (support/database.ts) with its own TestClock, closed when the test ends. Nothing a test
 * does (data, caches, rate-limit counters, the clock) reaches another one, and each runs alone or
 * in any order. Tests that share setup call a local helper at their start, not a `before()`.
 */
export async function freshServer(
  t: TestContext,
  env: Record<string, string> = {},
  options: Parameters<typeof startTestServer>[2] & { clock?: TestClock } = {},
): Promise<TestServer> {
  const { clock = new TestClock(), ...rest } = options;
  const server = await startTestServer(env, clock, rest);
  atEnd(t, () => server.close());
  return server;
}

const cleanUps = new WeakMap<TestContext, Array<() => unknown>>();

/**
 * Runs `cleanUp` when the test ends, after whatever was made later in the test has been closed (last
 * made, first closed): a second server on the first one's database closes before the first drops it.
 */
export function atEnd(t: TestContext, cleanUp: () => unknown): void {
  let stack = cleanUps.get(t);
  if (stack === undefined) {
    const made: Array<() => unknown> = [];
    stack = made;
    cleanUps.set(t, made);
    t.after(async () => {
      // Each one, even when one before it failed; then the first failure.
      const failures: unknown[] = [];
      for (const fn of made.reverse()) await Promise.resolve().then(fn).catch((error: unknown) => failures.push(error));
      if (failures.length > 0) throw failures[0];
    });
  }
  stack.push(cleanUp);
}
