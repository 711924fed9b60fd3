import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { DashboardClient } from '../dashboard/helpers.js';
import { deleteKeys, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { BIN, runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, isRunning, startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall } from '../support/server.js';
import { until } from '../support/until.js';

/**
 * `listings-api serve` as an operator runs it (issue 8, items 1, 2, 5 and 10): instances side by
 * side on one host with nothing but PORT set apart, start-up failures that end the command with one
 * line instead of a restart loop, crash restarts with a limit, and a shutdown that answers what it
 * accepted and ends within SHUTDOWN_TIMEOUT_MS whatever the clients do.
 */

/** `serve ARGS` expected to exit by itself, quickly; a server that starts serving instead fails the test. */
function serveExpectingExit(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [BIN, 'serve', ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', REDIS_URL: '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.signal, null, `the command exited by itself (it did not keep running): ${result.stderr}`);
  return result;
}

/** Exactly one line on stderr, prefixed like every CLI error. */
function oneStderrLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
  assert.match(lines[0]!, /^listings-api: /);
  return lines[0]!;
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** JSON log lines of a process's stdout. */
function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('serve: two default instances on one host (SQLite, one process each)', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  it('both start with only PORT apart, and each serves the API and the dashboard on its one port', async () => {
    const env = { DATABASE_URL: database.url, REDIS_URL: '' };
    const a = await startServerProcess(env);
    const b = await startServerProcess(env);
    try {
      for (const s of [a, b]) {
        assert.equal((await httpCall(s.port, '/v1/listings')).status, 401);
        const page = await new DashboardClient(s.port, `dashboard.localhost:${s.port}`).get('/sign-in');
        assert.equal(page.status, 200);
        await until(() => s.stderr().includes(`Dashboard (Settings > Developer: keys and origins) at http://dashboard.localhost:${s.port}\n`), { what: 'the dashboard line' });
      }
    } finally {
      assert.equal(await a.stop(), 0);
      assert.equal(await b.stop(), 0);
    }
  });
});

describe('serve: two default instances on one host on PostgreSQL and Redis (two workers each)', { skip: SKIP_NO_REDIS || (process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set') }, () => {
  const prefix = uniquePrefix('side-by-side');
  let database: TestDatabase;
  const servers: ServerProcess[] = [];
  let key: string;

  before(async () => {
    database = await createTestDatabase('postgres');
    const env = { DATABASE_URL: database.url };
    const accountId = runCli(['account', 'create', '--name', 'Org', '--json'], env).json.id;
    const created = runCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'both', '--json'], env).json;
    key = created.key;
    assert.equal(runCli(['key', 'set-limit', created.id, '4'], env).status, 0);
    // Nothing but PORT differs (REDIS_KEY_PREFIX only keeps this test's Redis keys its own).
    for (let i = 0; i < 2; i++) servers.push(await startServerProcess({ ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix }));
  });
  after(async () => {
    for (const s of servers) await s.stop();
    const redis = new Redis(TEST_REDIS_URL!);
    await deleteKeys(redis, prefix);
    await redis.quit();
    await database.drop();
  });

  it('both serve the API and the dashboard, and share one rate limit', async () => {
    for (const s of servers) {
      await until(() => /Listings API listening on 127\.0\.0\.1:\d+ with \d+ worker processes/.test(s.stderr()), { what: 'the listening line' });
      assert.equal((await new DashboardClient(s.port, `dashboard.localhost:${s.port}`).get('/sign-in')).status, 200);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await httpCall(servers[i % 2]!.port, '/v1/listings', { key })).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429, 429, 429], 'limit 4 across both instances');
  });
});

describe('serve: a start-up failure ends the command with one line (exit 1), never a restart loop', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  /** The one line for a port in use (issue 30 item 6): where, and the setting that names it. */
  const inUse = (port: number, setting: string) =>
    `cannot listen on 127.0.0.1:${port}: the port is in use by another program (this server, already running?); set ${setting} to a free port, or stop that program`;
  /** The demo keys in the database, revoked or not: a start that fails must add or revoke none. */
  const demoKeys = () => {
    const db = new BetterSqlite3(database.url.slice('file:'.length), { fileMustExist: true });
    try {
      return db.prepare("SELECT id, revoked_at FROM api_keys WHERE label = 'demo' ORDER BY id").all();
    } finally {
      db.close();
    }
  };

  it('port in use by a running `serve --demo` (npm start twice): one line naming PORT, no credentials, its demo key still works', async () => {
    const running = await startServerProcess({ DATABASE_URL: database.url }, ['--demo']);
    try {
      await until(() => /Demo API key/.test(running.stderr()), { what: 'the first banner' });
      const key = /Demo API key \(sg, shown once\): {2}(sg_live_\w+)\n/.exec(running.stderr())![1]!;
      const keys = demoKeys();
      const result = serveExpectingExit(['--demo'], { DATABASE_URL: database.url, PORT: String(running.port) });
      assert.equal(result.status, 1);
      // Before: the demo banner (a new key, the running server's revoked; a new dashboard password), then EADDRINUSE.
      assert.equal(oneStderrLine(result.stderr), `listings-api: ${inUse(running.port, 'PORT')}`);
      assert.deepEqual(demoKeys(), keys, 'no demo key added or revoked');
      assert.equal((await httpCall(running.port, '/v1/listings', { key })).status, 200, "the running server's demo key works");
    } finally {
      assert.equal(await running.stop(), 0);
    }
  });

  it('DASHBOARD_PORT or METRICS_PORT in use, one process: one line naming it, no credentials', async () => {
    for (const setting of ['DASHBOARD_PORT', 'METRICS_PORT']) {
      const busy = await freePort();
      const blocker = await listen(busy);
      try {
        const keys = demoKeys();
        const result = serveExpectingExit(['--demo'], { DATABASE_URL: database.url, PORT: String(await freePort()), [setting]: String(busy) });
        assert.equal(result.status, 1, setting);
        assert.equal(oneStderrLine(result.stderr), `listings-api: ${inUse(busy, setting)}`);
        assert.deepEqual(demoKeys(), keys, `${setting}: no demo key added or revoked`);
      } finally {
        blocker.close();
      }
    }
  });

  it('HOST not an address of this machine: one line naming HOST, no credentials', async () => {
    const keys = demoKeys();
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never a local address.
    const result = serveExpectingExit(['--demo'], { DATABASE_URL: database.url, HOST: '192.0.2.1', PORT: String(await freePort()) });
    assert.equal(result.status, 1);
    assert.match(oneStderrLine(result.stderr), /^listings-api: cannot listen on 192\.0\.2\.1:\d+: 192\.0\.2\.1 is not an address of this machine; set HOST to one that is$/);
    assert.deepEqual(demoKeys(), keys, 'no demo key added or revoked');
  });

  it('D29: a malformed API_DEPRECATIONS, or a prefix that covers no endpoint, is one line naming it, before anything starts', async () => {
    const keys = demoKeys();
    const link = 'https://developers.example.com/changelog';
    const cases: Array<[string, RegExp]> = [
      ['[{"prefix": "/v1/listings/changes", "since": "2026-12-01"', /^listings-api: configuration: API_DEPRECATIONS: is not JSON \(.+\); expected e\.g\. \[/],
      [`[{"prefix": "/v1/listing", "since": "2026-12-01", "link": "${link}"}]`, /^listings-api: configuration: API_DEPRECATIONS: prefix "\/v1\/listing" covers no endpoint; the API serves \/v1\/listings, /],
    ];
    for (const [value, line] of cases) {
      const result = serveExpectingExit(['--demo'], { DATABASE_URL: database.url, PORT: String(await freePort()), API_DEPRECATIONS: value });
      assert.equal(result.status, 1, result.stderr);
      assert.match(oneStderrLine(result.stderr), line);
    }
    assert.deepEqual(demoKeys(), keys, 'no demo key added or revoked');
  });

  it('port in use, with workers: the primary stops at the first worker that cannot listen, naming the setting, before any credentials', { skip: SKIP_NO_REDIS }, async () => {
    // PORT for the API, DASHBOARD_PORT for the dashboard (both in the workers), METRICS_PORT in the primary.
    for (const [setting, prefix] of [['PORT', 'a worker could not start: '], ['DASHBOARD_PORT', 'a worker could not start: '], ['METRICS_PORT', '']] as const) {
      const busy = await freePort();
      const blocker = await listen(busy);
      try {
        const keys = demoKeys();
        const env = { DATABASE_URL: database.url, PORT: String(await freePort()), REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: uniquePrefix('eaddrinuse'), [setting]: String(busy) };
        const result = serveExpectingExit(['--workers', '2', '--demo'], env);
        assert.equal(result.status, 1, setting);
        assert.equal(oneStderrLine(result.stderr), `listings-api: ${prefix}${inUse(busy, setting)}`);
        assert.deepEqual(demoKeys(), keys, `${setting}: no demo key added or revoked`);
        const started = logLines(result.stdout).filter((l) => l.msg === 'worker started').length;
        assert.equal(started, setting === 'METRICS_PORT' ? 0 : 2, `${setting}: no worker was started again`);
      } finally {
        blocker.close();
      }
    }
  });

  it('a new SQLite database: a notice on stderr with its path, then the service (issue 30 item 6)', async () => {
    const file = join(dirname(database.url.slice('file:'.length)), 'fresh', 'listings.db');
    const server = await startServerProcess({ DATABASE_URL: `file:${file}` });
    try {
      assert.ok(
        server.stderr().startsWith(`notice: creating a new, empty SQLite database at ${file} (DATABASE_URL=file:${file}); a server started from another folder or with another DATABASE_URL does not use it\n`),
        server.stderr(),
      );
      assert.ok(existsSync(file));
    } finally {
      assert.equal(await server.stop(), 0);
    }
    const again = await startServerProcess({ DATABASE_URL: `file:${file}` });
    try {
      await until(() => /Listings API listening/.test(again.stderr()), { what: 'the listening line' });
      assert.doesNotMatch(again.stderr(), /notice/, 'an existing database: no notice');
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });

  it('a database that cannot be reached, and one whose migration fails', async () => {
    const unreachable = serveExpectingExit([], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', PORT: '0' });
    assert.equal(unreachable.status, 1);
    assert.match(oneStderrLine(unreachable.stderr), /ECONNREFUSED/);

    const notADatabase = join(database.url.slice('file:'.length, database.url.lastIndexOf('/')), 'garbage.db');
    writeFileSync(notADatabase, 'this is not an SQLite database, whatever its name says\n'.repeat(100));
    const broken = serveExpectingExit([], { DATABASE_URL: `file:${notADatabase}`, PORT: '0' });
    assert.equal(broken.status, 1);
    assert.match(oneStderrLine(broken.stderr), /not a database/);
  });
});

describe('serve --workers: crashes after start are restarted with backoff, up to a limit', { skip: SKIP_NO_REDIS }, () => {
  it('five crashes within a minute end the command (exit 1, one line); the replacements served meanwhile', async () => {
    const database = await createTestDatabase('sqlite');
    const server = await startServerProcess({ DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: uniquePrefix('crashes'), LOG_LEVEL: 'info' }, ['--workers', '2']);
    try {
      const serving = () => logLines(server.stdout()).filter((l) => l.msg === 'worker serving').map((l) => l.worker_pid as number);
      const killed: number[] = [];
      for (let crash = 1; crash <= 5; crash++) {
        await until(() => serving().filter((pid) => !killed.includes(pid)).length >= 2, { what: `two serving workers before crash ${crash}` });
        const victim = serving().find((pid) => !killed.includes(pid))!;
        killed.push(victim);
        process.kill(victim, 'SIGKILL');
        if (crash < 5) {
          await until(() => new RegExp(`worker ${victim} exited unexpectedly; starting a replacement`).test(server.stdout()), { what: `restart ${crash}` });
          assert.equal((await httpCall(server.port, '/healthz')).status, 200, 'the other worker answers meanwhile');
        }
      }
      assert.equal(await server.exited, 1);
      assert.match(oneStderrLine(server.stderr().replace(/^(Listings API|Dashboard).*\n/gm, '')), /^listings-api: workers crashed 5 times within 60 s/);
      const delays = logLines(server.stdout()).filter((l) => typeof l.restart_in_ms === 'number').map((l) => l.restart_in_ms);
      assert.deepEqual(delays, [100, 200, 400, 800], 'exponential backoff');
      for (const pid of serving()) assert.ok(!isRunning(pid), `worker ${pid} is gone`);
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await database.drop();
    }
  });
});

describe('serve: shutdown answers what it accepted and ends within SHUTDOWN_TIMEOUT_MS', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  it('a client trickling its headers does not keep the process alive past the drain limit', async () => {
    const server = await startServerProcess({ DATABASE_URL: database.url, SHUTDOWN_TIMEOUT_MS: '500', LOG_LEVEL: 'info' });
    const socket = connect(server.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.on('error', () => {});
    socket.write('GET /v1/listings HTTP/1.1\r\nHost: api.localhost\r\n');
    let trickled: () => void = () => {};
    const trickling = new Promise<void>((resolve) => (trickled = resolve));
    // Real time is the point: a header line every 100 ms, the client's own pace, through the drain.
    const trickle = setInterval(() => socket.write('X-Slow: yes\r\n', () => trickled()), 100);
    try {
      await trickling;
      server.child.kill('SIGTERM');
      // Before: 25-40 s (until Node's own header timeout). Now: the drain limit, then exit 0.
      await until(() => server.child.exitCode !== null, { what: 'the process to exit', timeoutMs: 8_000 });
      assert.equal(server.child.exitCode, 0);
      assert.match(server.stdout(), /closed connections still open at the drain deadline/);
    } finally {
      clearInterval(trickle);
      socket.destroy();
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
  });

  it('an idle keep-alive connection does not hold the shutdown until the drain limit', async () => {
    const server = await startServerProcess({ DATABASE_URL: database.url, SHUTDOWN_TIMEOUT_MS: '60000' });
    const socket: Socket = connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    const answered = new Promise((resolve) => socket.once('data', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: api.localhost\r\n\r\n');
    await answered;
    server.child.kill('SIGTERM');
    await until(() => server.child.exitCode !== null, { what: 'the process to exit', timeoutMs: 8_000 });
    assert.equal(server.child.exitCode, 0);
    socket.destroy();
  });
});

describe('serve: the log stream', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  it('300 parallel dashboard requests: their log lines are batched, no listener pile-up warning (issue 8, item 12)', async () => {
    const server = await startServerProcess({ DATABASE_URL: database.url, LOG_LEVEL: 'info' });
    try {
      const client = new DashboardClient(server.port, `dashboard.localhost:${server.port}`);
      const statuses = await Promise.all(Array.from({ length: 300 }, () => client.get('/sign-in').then((r) => r.status)));
      assert.deepEqual(new Set(statuses), new Set([200]));
      await until(() => logLines(server.stdout()).filter((l) => l.msg === 'dashboard request').length >= 300, { what: 'the 300 log lines' });
    } finally {
      assert.equal(await server.stop(), 0);
    }
    assert.doesNotMatch(server.stderr(), /MaxListenersExceededWarning|Warning/);
  });

  it('on a terminal the log is readable lines, not JSON; in a pipe it is JSON (issue 8, item 21)', { skip: spawnSync('script', ['--version']).status === 0 ? false : 'util-linux script(1) is not installed' }, async () => {
    const port = await freePort();
    // script(1) gives the server a terminal for stdout; the test reads what it printed there. The
    // server is stopped once it answers /healthz (it has said it listens by then), not after a
    // guessed 3 s that a slow machine could spend starting.
    const healthy = `let t=Date.now();(function go(){require("http").get("http://127.0.0.1:${port}/healthz",(r)=>{r.resume();r.statusCode===200?process.exit(0):setTimeout(go,20)})
      .on("error",()=>Date.now()-t<15000?setTimeout(go,20):process.exit(1))})()`.replace(/\n\s*/g, '');
    const serve = `PORT=${port} HOST=127.0.0.1 DATABASE_URL=${database.url} LOG_LEVEL=info ${process.execPath} ${BIN} serve`;
    const command = `${serve} & server=$!; ${process.execPath} -e '${healthy}'; kill -TERM $server; wait $server`;
    const result = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', timeout: 20_000 });
    const printed = result.stdout.replace(/\r/g, '');
    assert.match(printed, /INFO.*Server listening at http:\/\/127\.0\.0\.1:\d+/, printed);
    assert.doesNotMatch(printed, /^\{"level":/m, 'no JSON lines on a terminal');
  });
});
