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
  t.after(() => server.close());
  return server;
}
