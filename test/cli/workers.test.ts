import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { BIN, callCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, isRunning, startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall } from '../support/server.js';
import { deleteKeys, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { until } from '../support/until.js';

/**
 * `serve --workers N`: N processes on one port (node:cluster), limits shared through Redis; more
 * than one worker without REDIS_URL is refused (it would multiply every key's limit).
 */

/** The pids that wrote request log lines (pino puts the process id on every line). */
function servingPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; pid?: number };
    if (entry.msg === 'request' && typeof entry.pid === 'number') pids.add(entry.pid);
  }
  return pids;
}

async function refusesConnections(port: number): Promise<boolean> {
  try {
    await httpCall(port, '/healthz');
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ECONNREFUSED';
  }
}

/** `listings-api serve ARGS` expected to exit by itself; a server that starts instead fails the test. */
function serveExpectingExit(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [BIN, 'serve', ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', REDIS_URL: '', ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(result.signal, null, 'the command exited by itself (it did not start serving)');
  return result;
}

describe('serve --workers: usage without Redis', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  it('--workers 2 without REDIS_URL is refused with one line (exit 2) and nothing listens', async () => {
    const port = await freePort();
    const result = serveExpectingExit(['--workers', '2'], { DATABASE_URL: database.url, PORT: String(port) });
    assert.equal(result.status, 2, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^listings-api: --workers 2 needs REDIS_URL: .*limit/);
    assert.equal(result.stderr.trim().split('\n').length, 1, 'one line');
    assert.ok(await refusesConnections(port), 'nothing listens on the port');
  });

  it('a --workers value that is not a whole number >= 1 is a usage error (exit 2)', () => {
    for (const value of ['0', '-1', 'two', '1.5']) {
      const result = serveExpectingExit([`--workers=${value}`], { DATABASE_URL: database.url, PORT: '0' });
      assert.equal(result.status, 2, `${value}: ${result.stderr}`);
      assert.match(result.stderr, /^listings-api: --workers/, value);
    }
  });

  it('--workers 1 (and the default without REDIS_URL) runs one process: nothing is forked', async () => {
    for (const args of [['--workers', '1'], []]) {
      const server = await startServerProcess({ DATABASE_URL: database.url, REDIS_URL: '', LOG_LEVEL: 'info' }, args);
      try {
        // Requests logged at info (the health checks are logged at debug): 401s, without a key.
        for (let i = 0; i < 4; i++) assert.equal((await httpCall(server.port, '/v1/listings')).status, 401);
        await until(() => servingPids(server.output()).size > 0, { what: 'request log lines' });
        assert.deepEqual([...servingPids(server.output())], [server.child.pid], `${args.join(' ')}: the serve process itself answers`);
        assert.doesNotMatch(server.output(), /worker started/);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    }
  });
});

describe('serve --workers 2 with REDIS_URL', { skip: SKIP_NO_REDIS }, () => {
  const prefix = uniquePrefix('workers');
  let database: TestDatabase;
  let server: ServerProcess;
  let key: string;
  let workerPids: number[] = [];

  before(async () => {
    database = await createTestDatabase('sqlite');
    const env = { DATABASE_URL: database.url };
    // Set-up, in-process (the serve processes below are what this suite is about).
    const accountId = (await callCli(['account', 'create', '--name', 'Org', '--json'], env)).json.id;
    const created = (await callCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'workers', '--json'], env)).json;
    key = created.key;
    assert.equal((await callCli(['key', 'set-limit', created.id, '6'], env)).status, 0);
    server = await startServerProcess({ ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info' }, ['--workers', '2']);
  });
  after(async () => {
    if (server?.child.exitCode === null) await server.stop();
    for (const pid of workerPids) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    const redis = new Redis(TEST_REDIS_URL!);
    await deleteKeys(redis, prefix);
    await redis.quit();
    await database?.drop();
  });

  it('serves one port from two worker processes that share the rate limit', async () => {
    await until(() => /listening on 127\.0\.0\.1:\d+ with 2 worker processes/.test(server.output()), { what: 'the listening line' });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await httpCall(server.port, '/v1/listings', { key })).status);
    // Limit 6, shared in Redis: 6 admitted in total, not 6 per worker.
    assert.deepEqual(statuses, [...Array(6).fill(200), ...Array(6).fill(429)]);
    await until(() => servingPids(server.output()).size >= 2, { what: 'request lines from two pids' });
    workerPids = [...servingPids(server.output())];
    assert.equal(workerPids.length, 2);
    assert.ok(!workerPids.includes(server.child.pid!), 'the primary does not serve requests itself');
  });

  it('a crashed worker is restarted, with a log line, and the service keeps answering', async () => {
    const [victim, survivor] = workerPids as [number, number];
    process.kill(victim, 'SIGKILL');
    await until(() => new RegExp(`worker ${victim} exited unexpectedly; starting a replacement`).test(server.output()), { what: 'the restart line' });
    let replacement: number | undefined;
    await until(() => {
      replacement = [...servingPids(server.output())].find((pid) => !workerPids.includes(pid));
      if (replacement === undefined) void httpCall(server.port, '/v1/listings').catch(() => undefined);
      return replacement !== undefined;
    }, { what: 'requests answered by the replacement worker' });
    assert.ok(!isRunning(victim));
    assert.ok(isRunning(survivor));
    for (let i = 0; i < 4; i++) assert.equal((await httpCall(server.port, '/healthz')).status, 200);
    workerPids = [survivor, replacement!];
  });

  it('SIGTERM stops the primary and every worker cleanly (exit 0) and frees the port', async () => {
    assert.equal(await server.stop(), 0, server.output());
    await until(() => workerPids.every((pid) => !isRunning(pid)), { what: 'the workers to exit', timeoutMs: 5000 });
    assert.ok(await refusesConnections(server.port));
    assert.doesNotMatch(server.output(), /"level":(50|60)/, 'no error was logged');
  });
});

describe('serve with REDIS_URL and no --workers: one worker per core', { skip: SKIP_NO_REDIS || (availableParallelism() > 4 ? `${availableParallelism()} cores: default-worker test skipped to keep the machine light` : false) }, () => {
  it(`runs ${availableParallelism()} serving process(es)`, async () => {
    const database = await createTestDatabase('sqlite');
    const prefix = uniquePrefix('default-workers');
    const cores = availableParallelism();
    const server = await startServerProcess({ DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info' });
    try {
      await until(() => /Listings API listening on/.test(server.output()), { what: 'the listening line' });
      if (cores > 1) assert.match(server.output(), new RegExp(`with ${cores} worker processes`));
      const deadline = Date.now() + 10_000;
      while (servingPids(server.output()).size < cores && Date.now() < deadline) await httpCall(server.port, '/v1/listings');
      assert.equal(servingPids(server.output()).size, cores);
    } finally {
      assert.equal(await server.stop(), 0);
      await database.drop();
    }
  });
});
