import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { WINDOW_SECONDS } from '../../src/ratelimit/limiter.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall, type TestResponse } from '../support/server.js';
import { countedInRedis, deleteKeys, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from './helpers.js';

/**
 * D14 across instances: two real `listings-api serve` processes (different ports) share one Redis
 * and one database; a burst at both for one key admits exactly Limit requests in total. Real time
 * here (separate processes); the exact Retry-After maths are proven with an injected clock in
 * redis.test.ts, so this only checks the 429 headers for form and mutual consistency.
 */

const stores = (['sqlite', 'postgres'] as const).filter((s) => s === 'sqlite' || process.env.TEST_DATABASE_URL);

for (const store of stores) {
  describe(`a key's limit is shared by two server processes through Redis, on ${store} (D5, D14, D15)`, { skip: SKIP_NO_REDIS }, () => {
    const LIMIT = 50;
    const prefix = uniquePrefix('multi');
    let database: TestDatabase;
    let redis: Redis;
    const servers: ServerProcess[] = [];
    let keyId: string;
    let key: string;

    before(async () => {
      database = await createTestDatabase(store);
      const env = { DATABASE_URL: database.url };
      const accountId = runCli(['account', 'create', '--name', 'Org', '--json'], env).json.id;
      const created = runCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'burst', '--json'], env).json;
      keyId = created.id;
      key = created.key;
      const limit = runCli(['key', 'set-limit', keyId, String(LIMIT)], env);
      assert.equal(limit.status, 0, limit.stderr);
      const serverEnv = { ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix };
      servers.push(await startServerProcess(serverEnv, ['--workers', '1']), await startServerProcess(serverEnv, ['--workers', '1']));
      redis = new Redis(TEST_REDIS_URL!);
    });
    after(async () => {
      for (const s of servers) await s.stop();
      if (redis) {
        await deleteKeys(redis, prefix);
        await redis.quit();
      }
      await database?.drop();
    });

    it(`a burst of ${LIMIT * 2} requests at both processes admits exactly ${LIMIT}, with consistent headers`, async () => {
      assert.notEqual(servers[0]!.port, servers[1]!.port);
      const sentAt = Math.floor(Date.now() / 1000);
      const responses = await Promise.all(
        Array.from({ length: LIMIT * 2 }, (_, i) => httpCall(servers[i % 2]!.port, '/v1/listings', { key }).then((res) => ({ res, server: i % 2 }))),
      );
      const doneAt = Math.ceil(Date.now() / 1000);
      const n = (res: TestResponse, name: string) => {
        const value = res.headers[name];
        assert.match(String(value), /^[0-9]+$/, `${name} is an integer: ${value}`);
        return Number(value);
      };

      const statuses = responses.map(({ res }) => res.status);
      assert.ok(statuses.every((s) => s === 200 || s === 429), `only 200 and 429: ${[...new Set(statuses)]}`);
      const admitted = responses.filter(({ res }) => res.status === 200);
      const refused = responses.filter(({ res }) => res.status === 429);
      assert.equal(admitted.length, LIMIT, 'exactly Limit admitted in total');
      assert.equal(refused.length, LIMIT);
      // Both instances answered part of the burst (the test really spans two processes).
      for (const server of [0, 1]) assert.ok(responses.some((r) => r.server === server));

      // Remaining: every admitted response saw a different count, from Limit-1 down to 0.
      const remaining = admitted.map(({ res }) => n(res, 'x-ratelimit-remaining')).sort((a, b) => a - b);
      assert.deepEqual(remaining, Array.from({ length: LIMIT }, (_, i) => i));
      for (const { res } of responses) {
        assert.equal(n(res, 'x-ratelimit-limit'), LIMIT);
        const reset = n(res, 'x-ratelimit-reset');
        assert.ok(reset >= sentAt + WINDOW_SECONDS - 1 && reset <= doneAt + WINDOW_SECONDS, `Reset ${reset} is a minute after the burst (${sentAt}..${doneAt})`);
      }
      for (const { res } of refused) {
        assert.equal(n(res, 'x-ratelimit-remaining'), 0);
        assert.equal(res.json.error, 'rate_limited');
        const retryAfter = n(res, 'retry-after');
        const reset = n(res, 'x-ratelimit-reset');
        assert.ok(retryAfter >= 1 && retryAfter <= WINDOW_SECONDS, `Retry-After ${retryAfter} in 1..60`);
        // The limit is partly back after Retry-After and fully back at Reset: never the other way round.
        assert.ok(reset - retryAfter >= sentAt - 1 && reset - retryAfter <= doneAt + 1, `Retry-After ${retryAfter} consistent with Reset ${reset} (burst ${sentAt}..${doneAt})`);
      }

      // Redis holds exactly the admitted requests: the refused half was not counted (D5).
      assert.equal(await countedInRedis(redis, `${prefix}${keyId}`), LIMIT);
      // And the next request, at either instance, is still refused.
      for (const s of servers) assert.equal((await httpCall(s.port, '/v1/listings', { key })).status, 429);
    });

    it('both processes stop gracefully on SIGTERM (exit 0)', async () => {
      for (const s of servers.splice(0)) assert.equal(await s.stop(), 0);
    });
  });
}
