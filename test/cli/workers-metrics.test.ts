import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { callCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/process.js';
import { counterDrops, increase, parseScrape, sampleValue } from '../support/prometheus.js';
import { httpCall } from '../support/server.js';
import { cleanUpServerOnRedis, sleep, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { until } from '../support/until.js';

/**
 * METRICS_PORT with `serve --workers 2` (issues 12 and 30): the primary listens for scrapes and one
 * scrape sums every worker's counts, those of workers that exited included (src/metrics/cluster.ts),
 * read with a Prometheus parser.
 */

/** Pids of the workers whose request log lines show they answered GET /v1/listings. */
function servingPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const entry of logLines(output)) {
    if (entry.msg === 'request' && entry.route === '/v1/listings' && typeof entry.pid === 'number') pids.add(entry.pid);
  }
  return pids;
}

/** An organisation's sg key whose limit the tests never reach, made through the CLI. */
async function keyThatIsNeverLimited(env: Record<string, string>): Promise<string> {
  const accountId = (await callCli(['account', 'create', '--name', 'Org', '--json'], env)).json.id;
  const created = (await callCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'metrics', '--json'], env)).json;
  assert.equal((await callCli(['key', 'set-limit', created.id, '100000'], env)).status, 0);
  return created.key;
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
    key = await keyThatIsNeverLimited(env);
    metricsPort = await freePort();
    server = await startServerProcess({ ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort) }, ['--workers', '2']);
  });
  after(() => cleanUpServerOnRedis(server, prefix, database));

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

/** The log's JSON lines (a line still being written is skipped). */
function logLines(output: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // the last line, not complete yet
    }
  }
  return lines;
}

/** Pids of the workers serving now, in the order they started serving (the primary's log). */
function servingWorkers(output: string): number[] {
  const pids: number[] = [];
  for (const entry of logLines(output)) {
    if (entry.msg === 'worker serving') pids.push(entry.worker_pid as number);
    if (typeof entry.msg === 'string' && entry.msg.endsWith('exited unexpectedly; starting a replacement')) pids.splice(pids.indexOf(entry.worker_pid as number), 1);
  }
  return pids;
}

/** One GET /metrics, timed: what it answered and how long it took. */
async function timedScrape(port: number): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  const res = await httpCall(port, '/metrics', { host: '127.0.0.1' });
  return { status: res.status, body: res.body, ms: performance.now() - started };
}

/** Scrapes every 25 ms until stopped, from before the primary listens (refused connections until then). */
function watchScrapes(port: number) {
  const answers: Array<{ status: number; body: string; ms: number }> = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        answers.push(await timedScrape(port));
      } catch (error) {
        if ((error as { code?: string }).code !== 'ECONNREFUSED' || answers.length > 0) throw error;
      }
      await sleep(25);
    }
  })();
  return {
    answers,
    async stop() {
      stopped = true;
      await loop;
      return answers;
    },
  };
}

/** A scrape must never keep Prometheus waiting: answered within this, even while workers start (issue 30 item 3). */
const SCRAPE_LIMIT_MS = 2_000;

for (const store of ['sqlite', 'postgres'] as const) {
  const skip = SKIP_NO_REDIS || (store === 'postgres' && !process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL is not set: the PostgreSQL run is skipped' : false);

  describe(`serve --workers 2 on ${store}: metrics across start-up, a worker's crash and its replacement (issue 30 item 3)`, { skip }, () => {
    const prefix = uniquePrefix('workers-restart-metrics');
    let database: TestDatabase;
    let server: ServerProcess;
    let metricsPort: number;
    let key: string;
    let startup: Array<{ status: number; body: string; ms: number }> = [];

    before(async () => {
      database = await createTestDatabase(store);
      const env = { DATABASE_URL: database.url };
      key = await keyThatIsNeverLimited(env);
      metricsPort = await freePort();
      // Scraped from the moment the primary listens until both workers serve.
      const watching = watchScrapes(metricsPort);
      try {
        server = await startServerProcess({ ...env, REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort) }, ['--workers', '2']);
        await until(() => servingWorkers(server.output()).length === 2, { what: 'both workers serving' });
        const seen = watching.answers.length;
        await until(() => watching.answers.length > seen, { what: 'a scrape once both serve' });
      } finally {
        startup = await watching.stop();
      }
    });
    after(() => cleanUpServerOnRedis(server, prefix, database));

    it('scrapes while the workers start answer within 2 s: 503 until a worker serves, never a hang', () => {
      for (const answer of startup) {
        assert.ok(answer.ms < SCRAPE_LIMIT_MS, `a start-up scrape took ${Math.round(answer.ms)} ms (${answer.status}: ${answer.body.slice(0, 100)})`);
        assert.ok(answer.status === 200 || answer.status === 503, `${answer.status}: ${answer.body.slice(0, 100)}`);
      }
      assert.ok(startup.length >= 2, `${startup.length} scrapes`);
      assert.equal(startup[0]!.status, 503, 'the first scrape comes before any worker serves');
      assert.match(startup[0]!.body, /No worker is serving yet/);
      assert.equal(startup.at(-1)!.status, 200);
      assert.ok(parseScrape(startup.at(-1)!.body).has('listings_http_requests_total'));
    });

    it('a worker killed with kill -9, twice: every counter only grows, and increase() over the scrapes is exactly what was answered', async () => {
      const scrapes: Array<ReturnType<typeof parseScrape>> = [];
      const scrape = async () => {
        const answer = await timedScrape(metricsPort);
        assert.equal(answer.status, 200, answer.body);
        assert.ok(answer.ms < SCRAPE_LIMIT_MS, `a scrape took ${Math.round(answer.ms)} ms`);
        scrapes.push(parseScrape(answer.body));
      };
      let api = 0;
      let pages = 0;
      // Connections alternate between the workers: each answers about half.
      const traffic = async (n: number) => {
        for (let i = 0; i < n; i++) {
          assert.equal((await httpCall(server.port, '/v1/listings', { key })).status, 200);
          api++;
          if (i % 5 === 0) {
            assert.equal((await httpCall(server.port, '/sign-in', { host: 'dashboard.localhost' })).status, 200);
            pages++;
          }
        }
      };
      // Both workers have answered API and dashboard requests before the first scrape, so that
      // the series exist there (increase() needs an earlier sample to rise from).
      await until(async () => {
        await traffic(10);
        return servingPids(server.output()).size === 2;
      }, { what: 'both workers answering' });
      await scrape();
      api = 0;
      pages = 0;

      for (let round = 1; round <= 2; round++) {
        await traffic(20);
        // The dead worker's last scrape: nothing is answered between it and the kill, so nothing
        // it counted is unknown to the primary (what a worker answers after the last scrape
        // before it dies is lost, as for a single process).
        await scrape();
        // The longest-serving worker: the first round kills one original, the second the other.
        const victim = servingWorkers(server.output())[0]!;
        process.kill(victim, 'SIGKILL');
        await until(() => !servingWorkers(server.output()).includes(victim), { what: `the primary noticed worker ${victim} died` });
        // While its replacement starts, the survivor answers, and every scrape answers at once.
        do {
          await traffic(5);
          await scrape();
        } while (servingWorkers(server.output()).length < 2);
        const replacement = servingWorkers(server.output()).at(-1)!;
        await until(async () => {
          await traffic(5);
          return servingPids(server.output()).has(replacement);
        }, { what: `the replacement ${replacement} answering` });
        await scrape();
      }

      assert.deepEqual(counterDrops(scrapes), [], 'no counter series drops or vanishes: Prometheus would read a reset');
      assert.equal(increase(scrapes, 'listings_http_requests_total', { route: '/v1/listings', status: '200', code: 'none' }), api);
      assert.equal(increase(scrapes, 'listings_http_request_duration_seconds_count', { route: '/v1/listings' }), api);
      assert.equal(increase(scrapes, 'listings_http_request_duration_seconds_bucket', { route: '/v1/listings', le: '+Inf' }), api);
      assert.equal(increase(scrapes, 'listings_rate_limit_decisions_total', { outcome: 'admitted' }), api);
      assert.equal(increase(scrapes, 'listings_dashboard_requests_total', { method: 'GET', route: '/sign-in', status: '200' }), pages);
      assert.ok(increase(scrapes, 'process_cpu_seconds_total') > 0);
    });

    it('a serving worker that cannot answer (stopped with SIGSTOP): the scrape is a 503 within 2 s, and the counts are whole again after', async () => {
      const before = await timedScrape(metricsPort);
      assert.equal(before.status, 200);
      const stopped = servingWorkers(server.output())[0]!;
      process.kill(stopped, 'SIGSTOP');
      let during: Awaited<ReturnType<typeof timedScrape>>;
      try {
        during = await timedScrape(metricsPort);
      } finally {
        process.kill(stopped, 'SIGCONT');
      }
      assert.equal(during.status, 503, during.body);
      assert.ok(during.ms < SCRAPE_LIMIT_MS, `the scrape took ${Math.round(during.ms)} ms`);
      assert.match(during.body, new RegExp(`Worker ${stopped} did not report its metrics`));
      const after = await timedScrape(metricsPort);
      assert.equal(after.status, 200, after.body);
      assert.deepEqual(counterDrops([parseScrape(before.body), parseScrape(after.body)]), []);
    });
  });
}
