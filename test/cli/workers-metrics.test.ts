import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { callCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/process.js';
import { parseScrape, sampleValue } from '../support/prometheus.js';
import { httpCall } from '../support/server.js';
import { deleteKeys, sleep, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';

/**
 * METRICS_PORT with `serve --workers 2` (issue 12): the primary listens for scrapes and one scrape
 * sums every worker's counts (prom-client's AggregatorRegistry), read with a Prometheus parser.
 */
function servingPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; pid?: number; route?: string };
    if (entry.msg === 'request' && entry.route === '/v1/listings' && typeof entry.pid === 'number') pids.add(entry.pid);
  }
  return pids;
}

describe('serve --workers 2 with METRICS_PORT: one scrape shows every worker\'s counts', { skip: SKIP_NO_REDIS }, () => {
  const prefix = uniquePrefix('workers-metrics');
  let database: TestDatabase;
  let server: ServerProcess;
  let metricsPort: number;
  let key: string;

  before(async () => {
    database = await createTestDatabase('sqlite');
    const env = { DATABASE_URL: database.url };
    const accountId = (await callCli(['account', 'create', '--name', 'Org', '--json'], env)).json.id;
    const created = (await callCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'metrics', '--json'], env)).json;
    key = created.key;
    assert.equal((await callCli(['key', 'set-limit', created.id, '100000'], env)).status, 0);
    metricsPort = await freePort();
    server = await startServerProcess({ ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort) }, ['--workers', '2']);
  });
  after(async () => {
    if (server?.child.exitCode === null) await server.stop();
    const redis = new Redis(TEST_REDIS_URL!);
    await deleteKeys(redis, prefix);
    await redis.quit();
    await database?.drop();
  });

  it('the request counts of both workers add up to every request made', async () => {
    let made = 0;
    // Connections alternate between the workers; go on until both have answered some.
    for (let round = 0; round < 50 && (made < 20 || servingPids(server.output()).size < 2); round++) {
      for (let i = 0; i < 10; i++) {
        assert.equal((await httpCall(server.port, '/v1/listings', { key })).status, 200);
        made++;
      }
      await sleep(20);
    }
    const pids = servingPids(server.output());
    assert.equal(pids.size, 2, 'both workers answered');

    const res = await httpCall(metricsPort, '/metrics', { host: '127.0.0.1' });
    assert.equal(res.status, 200);
    const scrape = parseScrape(res.body);
    assert.equal(sampleValue(scrape, 'listings_http_requests_total', { route: '/v1/listings', status: '200', code: 'none' }), made);
    assert.equal(sampleValue(scrape, 'listings_http_request_duration_seconds_count', { route: '/v1/listings' }), made);
    assert.equal(sampleValue(scrape, 'listings_rate_limit_decisions_total', { outcome: 'admitted' }), made);
    assert.ok(scrape.has('nodejs_eventloop_lag_seconds') && scrape.has('process_cpu_seconds_total'));
    assert.equal((await httpCall(server.port, '/metrics')).status, 404, 'not on the API port');
  });
});
