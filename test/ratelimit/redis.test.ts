import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { WINDOW_SECONDS, type RateLimitDecision } from '../../src/ratelimit/limiter.js';
import { RedisRateLimiter } from '../../src/ratelimit/redis.js';
import { MemoryRateLimiter } from '../../src/ratelimit/limiter.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestServer, TestClock, type TestResponse, type TestServer } from '../support/server.js';
import { countedInRedis, deleteKeys, prng, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from './helpers.js';

/**
 * The Redis store of the rate limiter (src/ratelimit/redis.ts) against the in-process one, which
 * test/unit/sliding-window.test.ts proves against a brute-force model of D14/D15: the same
 * sequences must give the same decisions. Clocks are injected; nothing sleeps. Every test works
 * under its own key prefix on the shared server and deletes only its own keys.
 */

const BASE = Date.parse('2026-11-22T10:00:00.000Z');

class ManualClock {
  constructor(public ms = BASE) {}
  readonly now = (): number => this.ms;
}

describe('Redis rate limiter (D5, D14, D15)', { skip: SKIP_NO_REDIS }, () => {
  let redis: Redis;
  const prefixes: string[] = [];
  const prefix = (label: string) => {
    const p = uniquePrefix(label);
    prefixes.push(p);
    return p;
  };

  before(async () => {
    redis = new Redis(TEST_REDIS_URL!);
  });
  after(async () => {
    for (const p of prefixes) await deleteKeys(redis, p);
    await redis.quit();
  });

  it('gives exactly the decisions of the in-process limiter on 40 seeded random sequences (same Remaining, Reset, Retry-After)', async () => {
    const limits = [1, 2, 3, 5, 10, 30, 60];
    let admitted = 0;
    let refused = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const random = prng(seed);
      const clock = new ManualClock(BASE + Math.floor(random() * 100_000));
      const memory = new MemoryRateLimiter(clock.now);
      const shared = new RedisRateLimiter(redis, { prefix: prefix(`eq${seed}`), clock: clock.now });
      const keys = ['a', 'b', 'c'];
      const limitOf = new Map(keys.map((k) => [k, limits[Math.floor(random() * limits.length)]!]));
      const lastRefusal = new Map<string, RateLimitDecision>();
      for (let i = 0; i < 250; i++) {
        const key = keys[Math.floor(random() * keys.length)]!;
        const refusal = lastRefusal.get(key);
        const r = random();
        let gap: number;
        if (refusal !== undefined && r < 0.15) gap = refusal.retryAfter * 1000; // an obedient client
        else if (refusal !== undefined && r < 0.2) gap = (refusal.retryAfter - 1) * 1000; // one second early
        else if (r < 0.45) gap = 0; // a burst
        else if (r < 0.8) gap = Math.floor(random() * 1500);
        else if (r < 0.95) gap = Math.floor(random() * 12_000);
        else gap = 30_000 + Math.floor(random() * 60_000); // idle
        clock.ms += gap;
        // An operator's set-limit now and then, lowering or raising the ceiling under load.
        if (random() < 0.03) limitOf.set(key, limits[Math.floor(random() * limits.length)]!);
        const limit = limitOf.get(key)!;
        const expected = memory.consume(key, limit);
        const actual = await shared.consume(key, limit);
        assert.deepEqual(actual, expected, `seed ${seed} step ${i} key ${key} (t=${clock.ms - BASE} ms, limit ${limit})`);
        if (actual.allowed) {
          admitted++;
          lastRefusal.delete(key);
        } else {
          refused++;
          lastRefusal.set(key, actual);
        }
      }
    }
    // The sequences exercised both answers, not just one.
    assert.ok(admitted > 1000 && refused > 1000, `admitted ${admitted}, refused ${refused}`);
  });

  it('decides what one turn asks in one script call, in the order asked: the answers of the in-process limiter asked in that order', async () => {
    // A real client whose script calls are counted.
    const client = new Redis(TEST_REDIS_URL!);
    let calls = 0;
    const evalsha = client.evalsha.bind(client) as (...args: unknown[]) => Promise<unknown>;
    client.evalsha = ((...args: unknown[]) => {
      calls++;
      return evalsha(...args);
    }) as Redis['evalsha'];
    try {
      let admitted = 0;
      let refused = 0;
      let peeked = 0;
      for (let seed = 1; seed <= 20; seed++) {
        const random = prng(1000 + seed);
        const clock = new ManualClock(BASE + Math.floor(random() * 100_000));
        const memory = new MemoryRateLimiter(clock.now);
        const shared = new RedisRateLimiter(client, { prefix: prefix(`turn${seed}`), clock: clock.now });
        for (let turn = 0; turn < 12; turn++) {
          clock.ms += Math.floor(random() * 8000);
          // One turn: up to 80 requests of three keys, some of them free revalidations (peek).
          const asked = Array.from({ length: 1 + Math.floor(random() * 80) }, () => ({
            key: ['a', 'b', 'c'][Math.floor(random() * 3)]!,
            limit: [1, 5, 20, 60][Math.floor(random() * 4)]!,
            mode: random() < 0.2 ? ('peek' as const) : ('consume' as const),
          }));
          const callsBefore = calls;
          const actual = await Promise.all(asked.map((a) => shared[a.mode](a.key, a.limit)));
          assert.equal(calls - callsBefore, 1, `seed ${seed} turn ${turn}: one call for ${asked.length} decisions`);
          asked.forEach((a, i) => {
            const expected = memory[a.mode](a.key, a.limit);
            assert.deepEqual(actual[i], expected, `seed ${seed} turn ${turn} request ${i} (${a.mode} ${a.key}, limit ${a.limit})`);
            if (a.mode === 'peek') peeked++;
            else if (expected.allowed) admitted++;
            else refused++;
          });
        }
      }
      assert.ok(admitted > 300 && refused > 300 && peeked > 200, `admitted ${admitted}, refused ${refused}, peeked ${peeked}`);
    } finally {
      await client.quit();
    }
  });

  it('a refused request writes nothing (D5) and old seconds are dropped: at most 60 counters per key', async () => {
    const clock = new ManualClock();
    const limiter = new RedisRateLimiter(redis, { prefix: prefix('writes'), clock: clock.now });
    const key = limiter.keyFor('k');
    for (let i = 0; i < 3; i++) assert.equal((await limiter.consume('k', 3)).allowed, true);
    const before = await redis.hgetall(key);
    clock.ms += 1000;
    for (let i = 0; i < 5; i++) assert.equal((await limiter.consume('k', 3)).allowed, false);
    assert.deepEqual(await redis.hgetall(key), before, 'refusals changed the counters');

    // One request a second for 100 s under a large limit: only the window's 60 seconds are kept.
    for (let s = 0; s < 100; s++) {
      clock.ms += 1000;
      assert.equal((await limiter.consume('k', 1000)).allowed, true);
    }
    const fields = Object.keys(await redis.hgetall(key)).map(Number);
    assert.equal(fields.length, WINDOW_SECONDS);
    assert.equal(Math.max(...fields) - Math.min(...fields), WINDOW_SECONDS - 1);
    assert.equal(Math.max(...fields), Math.floor(clock.ms / 1000));
    const ttl = await redis.ttl(key);
    assert.ok(ttl > WINDOW_SECONDS && ttl <= 120, `TTL ${ttl} s outlives the window and expires an idle key`);
  });

  it('without an injected clock it takes the time from Redis TIME', async () => {
    const limiter = new RedisRateLimiter(redis, { prefix: prefix('time') });
    const [beforeSeconds] = await redis.time();
    const decision = await limiter.consume('k', 5);
    const [afterSeconds] = await redis.time();
    assert.equal(decision.allowed, true);
    assert.equal(decision.remaining, 4);
    const second = decision.resetAt - WINDOW_SECONDS;
    assert.ok(second >= Number(beforeSeconds) && second <= Number(afterSeconds), `second ${second} is Redis's`);
    assert.deepEqual(await redis.hgetall(limiter.keyFor('k')), { [String(second)]: '1' });
  });

  it('is atomic: 500 concurrent requests from 5 connections under a limit of 100 admit exactly 100', async () => {
    const p = prefix('atomic');
    const clients = Array.from({ length: 5 }, () => new Redis(TEST_REDIS_URL!));
    try {
      const limiters = clients.map((c) => new RedisRateLimiter(c, { prefix: p })); // Redis TIME, as in production
      const decisions = await Promise.all(Array.from({ length: 500 }, (_, i) => limiters[i % limiters.length]!.consume('burst', 100)));
      const admitted = decisions.filter((d) => d.allowed);
      assert.equal(admitted.length, 100);
      // Each admitted request saw a different count: Remaining 99, 98, ..., 0, each exactly once.
      assert.deepEqual(admitted.map((d) => d.remaining).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i));
      for (const d of decisions.filter((x) => !x.allowed)) {
        assert.equal(d.remaining, 0);
        assert.ok(d.retryAfter >= 1 && d.retryAfter <= WINDOW_SECONDS, `retry-after ${d.retryAfter}`);
      }
      assert.equal(await countedInRedis(clients[0]!, `${p}burst`), 100, 'Redis counted exactly the admitted requests');
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
  });
});

describe('two in-process instances sharing Redis, injected clock (D14, D15 over HTTP)', { skip: SKIP_NO_REDIS }, () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let redis: Redis;
  const clock = new TestClock();
  const prefix = uniquePrefix('http');

  before(async () => {
    database = await createTestDatabase();
    const env = { DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix };
    a = await startTestServer(env, clock);
    b = await startTestServer(env, clock);
    redis = new Redis(TEST_REDIS_URL!);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await deleteKeys(redis, prefix);
    await redis.quit();
    await database.drop();
  });

  const header = (res: TestResponse, name: string) => Number(res.headers[name]);

  it('share one window: Remaining counts down across both, Retry-After is exact, refusals do not count', async () => {
    const org = await a.createAccount();
    const { id, key } = await a.createKey(org);
    await a.service.store.keys.setRateLimit(id, 10);
    const t0 = Math.floor(clock.now() / 1000);

    // 4 requests at t0 and 6 at t0+5, alternating between the instances: one shared count.
    const remaining: number[] = [];
    for (let i = 0; i < 10; i++) {
      if (i === 4) clock.advance(5000);
      const res = await (i % 2 === 0 ? a : b).get('/v1/listings', { key });
      assert.equal(res.status, 200, `request ${i + 1}`);
      assert.equal(header(res, 'x-ratelimit-limit'), 10);
      assert.equal(header(res, 'x-ratelimit-reset'), (i < 4 ? t0 : t0 + 5) + 60);
      // D29: the last request taken says when the next is admitted: the 4 of t0 leave at t0+60.
      assert.equal(res.headers['ratelimit'], `"key";r=${9 - i};t=${i === 9 ? 55 : 0}`);
      remaining.push(header(res, 'x-ratelimit-remaining'));
    }
    assert.deepEqual(remaining, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    // D29's fields come from the shared decision too: the last one taken says when the next is admitted (t0+60).
    const last = await a.get('/v1/listings', { key, headers: { 'if-none-match': '*' } });
    assert.equal(last.status, 304);
    assert.equal(last.headers['ratelimit'], '"key";r=0;t=55');
    assert.equal(last.headers['ratelimit-policy'], '"key";q=10;w=60');

    // At t0+20 both refuse; the 4 requests of t0 leave the window at t0+60: Retry-After 40.
    clock.advance(15_000);
    for (const server of [a, b, a, b]) {
      const res = await server.get('/v1/listings', { key });
      assert.equal(res.status, 429);
      assert.equal(res.headers['retry-after'], '40');
      assert.equal(res.headers['ratelimit'], '"key";r=0;t=40', 'D29: t is Retry-After');
      assert.equal(header(res, 'x-ratelimit-remaining'), 0);
      assert.equal(header(res, 'x-ratelimit-reset'), t0 + 65);
    }
    // One second early is still refused, with Retry-After 1 ...
    clock.advance(39_000);
    const early = await b.get('/v1/listings', { key });
    assert.equal(early.status, 429);
    assert.equal(early.headers['retry-after'], '1');
    // ... and after exactly Retry-After the other instance admits it: the refusals did not count (D5).
    clock.advance(1000);
    const admitted = await a.get('/v1/listings', { key });
    assert.equal(admitted.status, 200);
    assert.equal(header(admitted, 'x-ratelimit-remaining'), 10 - 6 - 1);
    assert.equal(await countedInRedis(redis, `${prefix}${id}`), 7);
  });
});
