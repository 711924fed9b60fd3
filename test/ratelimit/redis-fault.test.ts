import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { FaultProxy } from '../support/fault-proxy.js';
import { parseScrape, sampleValue } from '../support/prometheus.js';
import { httpCall, startTestServer, type TestServer } from '../support/server.js';
import { deleteKeys, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from './helpers.js';
import { Redis } from 'ioredis';
import { until } from '../support/until.js';

/**
 * Issue 40: Redis faults injected on the connection itself, through a TCP proxy in the test
 * (support/fault-proxy.ts): a stalled Redis (a partition, a hung server: the connection stays
 * open and nothing comes back) and connections reset (a restart, a failover). Either costs no
 * request an error or more than a bounded wait, `listings_rate_limit_fallback` says while the
 * process limits keys on its own, and limits are shared again once Redis answers.
 */
describe('Redis stalled or cut under a serving process (fault proxy)', { skip: SKIP_NO_REDIS }, () => {
  const prefix = uniquePrefix('redis-fault');
  let link: FaultProxy;
  let server: TestServer;
  let key: string;

  before(async () => {
    const proxied = await FaultProxy.inFrontOf(TEST_REDIS_URL!);
    link = proxied.proxy;
    server = await startTestServer({ REDIS_URL: proxied.url, REDIS_KEY_PREFIX: prefix, METRICS_PORT: '0' });
    const owner = await server.createAccount();
    const created = await server.createKey(owner);
    key = created.key;
    await server.service.store.keys.setRateLimit(created.id, 100_000);
    await server.addListings(owner, [{}]);
  });
  after(async () => {
    await server?.close();
    await link?.close();
    const redis = new Redis(TEST_REDIS_URL!);
    await deleteKeys(redis, prefix);
    await redis.quit();
  });

  const fallbackGauge = async () => {
    const res = await httpCall(server.service.metricsPort()!, '/metrics', { host: '127.0.0.1' });
    return sampleValue(parseScrape(res.body), 'listings_rate_limit_fallback');
  };

  /** `count` requests one after another: each a 200 with the D15 headers, answered within `boundMs`. */
  const served = async (count: number, boundMs: number) => {
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      const res = await server.get('/v1/listings', { key });
      const ms = performance.now() - started;
      assert.equal(res.status, 200, res.body);
      assert.match(String(res.headers['x-ratelimit-remaining']), /^[0-9]+$/);
      assert.ok(ms < boundMs, `request ${i + 1} took ${Math.round(ms)} ms (bound ${boundMs} ms)`);
    }
  };

  it('shared through Redis to begin with: the fallback gauge reads 0', async () => {
    await served(3, 1000);
    assert.equal(await fallbackGauge(), 0);
  });

  it('stalled: answered from memory after one bounded wait, the gauge reads 1; restored: shared again, the gauge 0', async () => {
    link.stall();
    try {
      await served(20, 1000);
      assert.equal(await fallbackGauge(), 1);
      assert.equal(server.logs.lines.filter((l) => /falling back to in-process limits \(per process\)/.test(String(l.msg))).length, 1);
    } finally {
      link.restore();
    }
    await until(async () => {
      await served(1, 1000);
      return (await fallbackGauge()) === 0;
    }, { what: 'limits shared through Redis again', timeoutMs: 10_000 });
  });

  it('every connection closed: no request fails, and it finds Redis again by itself', async () => {
    link.cut();
    await served(20, 1000);
    await until(async () => {
      await served(1, 1000);
      return (await fallbackGauge()) === 0;
    }, { what: 'limits shared through Redis again', timeoutMs: 10_000 });
    assert.ok(link.connections >= 1, 'reconnected through the proxy');
  });
});
