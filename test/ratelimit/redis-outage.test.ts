import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall, startTestServer, type TestResponse, type TestServer } from '../support/server.js';
import { countedInRedis, HAVE_REDIS_SERVER, REDIS_SERVER, sleep, SKIP_NO_REDIS, startRedisServer } from './helpers.js';
import { until } from '../support/until.js';

/**
 * A Redis outage is never a 500 and never a hung request: the limiter answers from the in-process
 * store, says so once in the log, and goes back to Redis when Redis is back.
 */

const FALLBACK = /falling back to in-process limits/;
const RECOVERED = /Redis is back/;

/** Requests one at a time; each must be 200 with the D15 headers and answered within `boundMs`. */
async function steadyRequests(port: number, key: string, count: number, boundMs: number): Promise<TestResponse[]> {
  const responses: TestResponse[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await httpCall(port, '/v1/listings', { key });
    const ms = performance.now() - started;
    assert.equal(res.status, 200, `request ${i + 1}: ${res.body}`);
    assert.match(String(res.headers['x-ratelimit-remaining']), /^[0-9]+$/);
    assert.ok(ms < boundMs, `request ${i + 1} took ${Math.round(ms)} ms (bound ${boundMs} ms)`);
    responses.push(res);
  }
  return responses;
}

describe('Redis unreachable from the start: in-process limits, one warning (in-process server, injected clock)', () => {
  let server: TestServer;
  before(async () => {
    const port = await freePort(); // nothing listens there
    server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}` });
  });
  after(() => server?.close());

  it('serves 200s with correct limits from memory and warns exactly once', async () => {
    const org = await server.createAccount();
    const { id, key } = await server.createKey(org);
    await server.service.store.keys.setRateLimit(id, 3);
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const res = await server.get('/v1/listings', { key });
      assert.equal(res.status, 200);
      assert.equal(res.headers['x-ratelimit-remaining'], String(2 - i));
      assert.ok(performance.now() - started < 1000, 'answered without waiting for Redis');
    }
    const refused = await server.get('/v1/listings', { key });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '60');
    server.clock.advance(60_000);
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    const warnings = server.logs.lines.filter((l) => l.level === 40 && FALLBACK.test(String(l.msg)));
    assert.equal(warnings.length, 1, 'one warning, not one per request');
    assert.ok(!server.logs.lines.some((l) => Number(l.level) >= 50), 'no error was logged');
  });
});

const skipOutage = SKIP_NO_REDIS || (HAVE_REDIS_SERVER ? false : `${REDIS_SERVER} not found: Redis outage suite skipped`);

describe('Redis outage and recovery under a real server process (own redis-server)', { skip: skipOutage }, () => {
  let redisPort: number;
  let redisServer: Awaited<ReturnType<typeof startRedisServer>>;
  let database: TestDatabase;
  let server: ServerProcess;
  let keyId: string;
  let key: string;
  const redisKey = () => `listings:rl:${keyId}`; // the default REDIS_KEY_PREFIX

  const logLines = () =>
    server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; error?: unknown; err?: unknown; outage_ms?: unknown });
  const warnings = () => logLines().filter((l) => l.level === 40 && FALLBACK.test(l.msg)).length;
  const recoveries = () => logLines().filter((l) => l.level === 30 && RECOVERED.test(l.msg)).length;

  /** What this Redis has counted for the key (a fresh connection: the server may have restarted). */
  async function counted(): Promise<number> {
    const client = new Redis(redisPort, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      return await countedInRedis(client, redisKey());
    } finally {
      client.disconnect();
    }
  }

  /** Sends requests (all must be 200) until this Redis has counted one; proves the service is back on Redis. */
  async function untilCountedInRedis(): Promise<void> {
    const deadline = Date.now() + 15_000;
    while ((await counted()) === 0) {
      assert.ok(Date.now() < deadline, 'the service did not return to Redis within 15 s');
      await steadyRequests(server.port, key, 1, 2000);
      await sleep(200);
    }
  }

  before(async () => {
    redisPort = await freePort();
    redisServer = await startRedisServer(redisPort);
    database = await createTestDatabase('sqlite');
    const env = { DATABASE_URL: database.url };
    const accountId = runCli(['account', 'create', '--name', 'Org', '--json'], env).json.id;
    const created = runCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'outage', '--json'], env).json;
    keyId = created.id;
    key = created.key;
    assert.equal(runCli(['key', 'set-limit', keyId, '100000'], env).status, 0);
    server = await startServerProcess({ ...env, REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'info' }, ['--workers', '1']);
  });
  after(async () => {
    await server?.stop();
    await redisServer?.stop();
    await database?.drop();
  });

  it('while Redis answers, every request is counted in Redis', async () => {
    const responses = await steadyRequests(server.port, key, 5, 2000);
    assert.equal(await counted(), 5);
    assert.equal(responses.at(-1)!.headers['x-ratelimit-remaining'], String(100000 - 5));
    assert.equal(warnings(), 0);
  });

  it('Redis killed: requests still answer 200, quickly, and ONE warning is logged', async () => {
    await redisServer.stop('SIGKILL');
    await steadyRequests(server.port, key, 30, 1000);
    const burst = await Promise.all(Array.from({ length: 20 }, () => httpCall(server.port, '/v1/listings', { key })));
    assert.deepEqual([...new Set(burst.map((r) => r.status))], [200]);
    assert.equal(warnings(), 1);
    assert.equal(recoveries(), 0);
    // Issue 30 item 5: the error's message, not a stack trace.
    const warning = logLines().find((l) => l.level === 40 && FALLBACK.test(l.msg))!;
    assert.equal(typeof warning.error, 'string');
    assert.equal(warning.err, undefined);
    assert.equal((await httpCall(server.port, '/healthz')).status, 200);
  });

  it('Redis restarted on the same port: the service returns to Redis and logs the recovery', async () => {
    redisServer = await startRedisServer(redisPort); // empty: no counters, no cached script (NOSCRIPT -> EVAL)
    // Issue 30 item 4: the way back is logged once the client has reconnected, without waiting
    // for a request, with how long the outage lasted.
    await until(() => recoveries() === 1, { what: 'the recovery line, without a request', timeoutMs: 10_000 });
    assert.equal(typeof logLines().find((l) => l.level === 30 && RECOVERED.test(l.msg))!.outage_ms, 'number');
    await untilCountedInRedis();
    const before = await counted();
    await steadyRequests(server.port, key, 5, 2000);
    assert.equal(await counted(), before + 5, 'every request is counted in Redis again');
    assert.equal(recoveries(), 1);
    assert.equal(warnings(), 1, 'still the one warning of the outage');
  });

  it('Redis hung (SIGSTOP): requests are answered within the timeout, one more warning; SIGCONT: back again', async () => {
    redisServer.child.kill('SIGSTOP');
    try {
      await steadyRequests(server.port, key, 20, 1000);
      assert.equal(warnings(), 2, 'one warning for this second outage');
    } finally {
      redisServer.child.kill('SIGCONT');
    }
    const deadline = Date.now() + 15_000;
    while (recoveries() < 2) {
      assert.ok(Date.now() < deadline, 'no recovery logged within 15 s after SIGCONT');
      await steadyRequests(server.port, key, 1, 2000);
      await sleep(200);
    }
    const before = await counted();
    await steadyRequests(server.port, key, 5, 2000);
    assert.equal(await counted(), before + 5);
    assert.equal(warnings(), 2);
  });

  it('the server never answered 500 and stops gracefully (exit 0)', async () => {
    assert.ok(!logLines().some((l) => l.level >= 50), 'no error was logged');
    assert.equal(await server.stop(), 0);
  });
});
