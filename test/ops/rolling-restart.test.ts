import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { isRunning, startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall, startTestServer, TestClock } from '../support/server.js';
import { cleanUpServerOnRedis, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { until } from '../support/until.js';

/**
 * The rolling-restart story with `serve --workers` (issue 30 item 4): every worker warms the
 * indexes of the tenants read in the last hour BEFORE it listens, so the primary (which hands
 * connections to every listening worker, ready or not) never gives a cold worker a request:
 * neither at start nor when a crashed worker is replaced while the others answer. Each worker
 * tells the primary it is serving only after that.
 */
type Line = { msg?: string; time: number; pid?: number; worker_pid?: number; warmed?: number; listings?: number; stopped?: string };

function logLines(output: string): Line[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Line);
}

/**
 * The primary's "worker serving" lines, each with its worker's warm-up line, if there is one. By
 * their times, not their order in the output: the processes share it, and a worker's line may
 * reach the pipe after the primary's although it was logged first.
 */
function servingAfterWarmUp(output: string) {
  const lines = logLines(output);
  return lines
    .filter((l) => l.msg === 'worker serving')
    .map((serving) => ({ pid: serving.worker_pid!, at: serving.time, warmUp: lines.find((l) => l.pid === serving.worker_pid && /^warm-up done/.test(String(l.msg))) }));
}

/** Waits until every "worker serving" line has its worker's warm-up line (or fails naming the one without). */
async function warmUpLinesOfServing(server: ServerProcess, count: number) {
  await until(() => servingAfterWarmUp(server.output()).length >= count, { what: `${count} workers serving` });
  await until(() => servingAfterWarmUp(server.output()).every((w) => w.warmUp !== undefined), { what: `the warm-up line of every serving worker\n${server.output()}`, timeoutMs: 5000 });
  const workers = servingAfterWarmUp(server.output());
  for (const worker of workers) assert.ok(worker.warmUp!.time <= worker.at, `worker ${worker.pid} warmed up before it reported serving`);
  return workers;
}

describe('serve --workers 2: each worker warms before it listens (issue 30 item 4)', { skip: SKIP_NO_REDIS }, () => {
  const prefix = uniquePrefix('rolling');
  const LISTINGS = 500;
  let database: TestDatabase;
  let server: ServerProcess;
  let key: string;

  before(async () => {
    database = await createTestDatabase('sqlite');
    // A tenant read a moment ago (the server processes below run on the real clock).
    const first = await startTestServer({ DATABASE_URL: database.url }, new TestClock(Date.now()));
    const account = await first.createAccount();
    await first.addListings(account, Array.from({ length: LISTINGS }, () => ({})));
    key = (await first.createKey(account)).key;
    assert.equal((await first.get('/v1/listings', { key })).status, 200);
    await first.close();
    server = await startServerProcess({ DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info' }, ['--workers', '2']);
  });
  after(() => cleanUpServerOnRedis(server, prefix, database));

  it('both workers report serving only after their warm-up built the tenant read recently', async () => {
    await until(() => /listening on 127\.0\.0\.1:\d+ with 2 worker processes/.test(server.output()), { what: 'the listening line' });
    const workers = await warmUpLinesOfServing(server, 2);
    assert.equal(workers.length, 2);
    for (const worker of workers) {
      assert.ok(worker.warmUp !== undefined);
      assert.equal(worker.warmUp.warmed, 1);
      assert.equal(worker.warmUp.listings, LISTINGS);
      assert.equal(worker.warmUp.stopped, 'done');
    }
    assert.equal((await httpCall(server.port, '/readyz')).status, 200);
    assert.equal((await httpCall(server.port, '/v1/listings', { key })).json.total, LISTINGS);
  });

  it('a crashed worker is replaced by one that warms before it takes a connection', async () => {
    const [victim] = servingAfterWarmUp(server.output()).map((w) => w.pid);
    process.kill(victim!, 'SIGKILL');
    const replacement = (await warmUpLinesOfServing(server, 3))[2]!;
    assert.ok(isRunning(replacement.pid));
    assert.equal(replacement.warmUp!.listings, LISTINGS);
    assert.equal(await server.stop(), 0);
  });
});
