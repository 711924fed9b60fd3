import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { generateKey } from '../../src/auth/key-format.js';
import { TEST_STORE } from '../support/database.js';
import { parseScrape, sampleValue, samples } from '../support/prometheus.js';
import { httpCall, startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

/**
 * Prometheus metrics (issue 12) at GET /metrics on METRICS_PORT, read with a real Prometheus
 * text-format parser: request counts by route, status and code, latency histograms, rate-limit
 * decisions, read-cache hits and misses, and the process defaults with the event-loop delay.
 */
describe(`Prometheus metrics on METRICS_PORT on ${TEST_STORE} (issue 12)`, () => {
  let server: TestServer;
  let metricsPort: number;
  let key: string;
  let keyId: string;
  const scrape = async () => {
    const res = await httpCall(metricsPort, '/metrics', { host: '127.0.0.1' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return parseScrape(res.body);
  };

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { METRICS_PORT: '0' });
    metricsPort = server.service.metricsPort()!;
    assert.ok(metricsPort > 0 && metricsPort !== server.port);
    const accountId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'One' }]);
    ({ key, id: keyId } = await server.createKey(accountId));
  }

  /** Traffic of every kind the scrape counts: answers of each route and status, cache hits, each rate-limit decision. */
  async function traffic(): Promise<void> {
    const ok = await server.get('/v1/listings', { key });
    assert.equal(ok.status, 200);
    assert.equal((await server.get(`/v1/listings/${ok.json.items[0].id as string}`, { key })).status, 200);
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await server.get('/v1/listings/not-an-id', { key })).status, 404);
    assert.equal((await server.get('/v1/listings?page=0', { key })).status, 400);
    assert.equal((await server.get('/v1/listings', { key: generateKey('sg') })).status, 401);
    assert.equal((await server.get('/nowhere')).status, 404);
    await server.service.store.keys.setRateLimit(keyId, 1);
    server.clock.advance(120_000); // a fresh window
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await server.get('/v1/listings', { key })).status, 429);
    assert.equal((await server.get('/v1/listings', { key, headers: { 'if-none-match': String(ok.headers.etag) } })).status, 304);
  }

  it('the API port does not serve /metrics (404), and the metrics port serves nothing else', async (t) => {
    await world(t);
    const onApi = await server.get('/metrics');
    assert.equal(onApi.status, 404);
    assert.equal(onApi.json.error, 'not_found');
    assert.equal((await httpCall(server.port, '/metrics', { host: '127.0.0.1' })).status, 404);
    assert.equal((await httpCall(metricsPort, '/v1/listings', { host: '127.0.0.1', key })).status, 404);
  });

  it('counts answers by route, status and code, with a latency histogram per route', async (t) => {
    await world(t);
    const before = await scrape();
    const count = (scraped: typeof before, labels: Record<string, string>) => sampleValue(scraped, 'listings_http_requests_total', labels);
    const ok = await server.get('/v1/listings', { key });
    assert.equal(ok.status, 200);
    const id = ok.json.items[0].id as string;
    assert.equal((await server.get(`/v1/listings/${id}`, { key })).status, 200);
    assert.equal((await server.get('/v1/listings/not-an-id', { key })).status, 404);
    assert.equal((await server.get('/v1/listings?page=0', { key })).status, 400);
    assert.equal((await server.get('/v1/listings', { key: generateKey('sg') })).status, 401);
    assert.equal((await server.get('/nowhere')).status, 404);

    const after = await scrape();
    const diff = (labels: Record<string, string>) => count(after, labels) - count(before, labels);
    assert.equal(diff({ route: '/v1/listings', status: '200', code: 'none' }), 1);
    assert.equal(diff({ route: '/v1/listings/:id', status: '200', code: 'none' }), 1);
    assert.equal(diff({ route: '/v1/listings/:id', status: '404', code: 'not_found' }), 1);
    assert.equal(diff({ route: '/v1/listings', status: '400', code: 'bad_request' }), 1);
    assert.equal(diff({ route: '/v1/listings', status: '401', code: 'unauthorized' }), 1);
    assert.equal(diff({ route: 'unmatched', status: '404', code: 'not_found' }), 1);

    assert.equal(after.types.get('listings_http_request_duration_seconds'), 'HISTOGRAM');
    const name = 'listings_http_request_duration_seconds';
    const route = { route: '/v1/listings' };
    const answers = count(after, route);
    assert.equal(sampleValue(after, `${name}_count`, route), answers, 'the histogram counts every answer of the route');
    assert.equal(sampleValue(after, `${name}_bucket`, { ...route, le: '+Inf' }), answers);
    const buckets = samples(after, `${name}_bucket`, route).filter((s) => s.labels!.le !== '+Inf');
    const cumulative = buckets.sort((x, y) => Number(x.labels!.le) - Number(y.labels!.le)).map((s) => Number(s.value));
    assert.ok(cumulative.length >= 10);
    assert.deepEqual(cumulative, [...cumulative].sort((x, y) => x - y), 'buckets are cumulative');
    assert.ok(cumulative.at(-1)! <= answers);
    assert.ok(sampleValue(after, `${name}_sum`, route) > 0);
  });

  it('rate-limit decisions: admitted, limited (429) and revalidated (a free 304)', async (t) => {
    await world(t);
    await server.service.store.keys.setRateLimit(keyId, 2);
    server.clock.advance(120_000); // a fresh window
    const before = await scrape();
    const decisions = (scraped: typeof before, outcome: string) => sampleValue(scraped, 'listings_rate_limit_decisions_total', { outcome });
    const first = await server.get('/v1/listings', { key });
    assert.equal(first.status, 200);
    assert.equal((await server.get('/v1/listings', { key, headers: { 'if-none-match': String(first.headers.etag) } })).status, 304);
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal((await server.get('/v1/listings', { key })).status, 429);
    assert.equal((await server.get('/v1/listings', { key, headers: { 'if-none-match': '"other"' } })).status, 429);
    assert.equal((await server.get('/v1/listings', { key, headers: { 'if-none-match': String(first.headers.etag) } })).status, 304, 'free even with no request left');
    const after = await scrape();
    assert.equal(decisions(after, 'admitted') - decisions(before, 'admitted'), 2);
    assert.equal(decisions(after, 'limited') - decisions(before, 'limited'), 2);
    assert.equal(decisions(after, 'revalidated') - decisions(before, 'revalidated'), 2);
  });

  it('read-cache hits and misses, from the read model\'s own counters', async (t) => {
    await world(t);
    await traffic();
    const scraped = await scrape();
    const stats = server.service.reads.stats();
    for (const cache of ['keys', 'origins', 'pages', 'details'] as const) {
      assert.equal(sampleValue(scraped, 'listings_cache_requests_total', { cache, result: 'hit' }), stats[cache].hits, `${cache} hits`);
      assert.equal(sampleValue(scraped, 'listings_cache_requests_total', { cache, result: 'miss' }), stats[cache].misses, `${cache} misses`);
    }
    assert.ok(sampleValue(scraped, 'listings_cache_requests_total', { result: 'hit' }) > 0);
    // The read model's other counts, which tests read through these metrics (test/support/read-counts.ts).
    const counts: Array<[string, number]> = [
      ['listings_index_builds_total', stats.indexBuilds], ['listings_index_replays_total', stats.indexReplays],
      ['listings_listing_row_reads_total', stats.listingRowReads], ['listings_cache_refreshes_ahead_total', stats.refreshedAhead],
      ['listings_indexed_tenants', stats.tenants], ['listings_indexed_listings', stats.listings],
      ['listings_index_bytes', stats.indexBytes], ['listings_index_views', stats.viewsHeld], ['listings_index_evictions_total', stats.indexEvictions],
    ];
    for (const [name, value] of counts) assert.equal(sampleValue(scraped, name), value, name);
    assert.ok(stats.indexBuilds > 0 && stats.listings > 0, 'the read model has built an index');
  });

  it('every query of the Grafana dashboard (docs/grafana-dashboard.json) names metrics this scrape exports', async (t) => {
    await world(t);
    await traffic();
    const scraped = await scrape();
    const dashboard = JSON.parse(readFileSync(new URL('../../../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    assert.ok(dashboard.panels.length >= 6);
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        const names = [...expr.matchAll(/\b(?:listings|nodejs|process)_[a-z0-9_]+/g)].map((m) => m[0]);
        assert.ok(names.length > 0, `${panel.title}: ${expr}`);
        for (const name of names) assert.ok(scraped.has(name), `${panel.title}: ${name} is exported`);
      }
    }
  });

  it('the event-loop delay is sampled every millisecond: an idle loop reads about 1 ms late, not 10 (issue 30 item 3)', async (t) => {
    await world(t);
    // prom-client empties the delay histogram at every scrape: the next one covers only this wait.
    await scrape();
    // Real time is the point: the histogram samples the real event loop while it idles (not a test clock).
    await new Promise((resolve) => setTimeout(resolve, 100));
    const scraped = await scrape();
    // Each sample includes the sampling interval: at prom-client's default of 10 ms no sample is
    // under 10 ms, so an idle loop read as 10 ms late (and p99 < 10 ms could never show).
    const min = sampleValue(scraped, 'nodejs_eventloop_lag_min_seconds');
    assert.ok(min < 0.005, `the smallest delay sampled: ${(min * 1000).toFixed(2)} ms`);
  });

  it('the process defaults and the event-loop delay are there', async (t) => {
    await world(t);
    const scraped = await scrape();
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(scraped.has(name), `${name} is exported`);
    }
  });
});

describe('METRICS_PORT unset (the default): no metrics listener, nothing counted for them', () => {
  it('the service has no metrics and /metrics is a 404 on the API port', async () => {
    const server = await startTestServer();
    try {
      assert.equal(server.service.metrics, undefined);
      assert.equal(server.service.metricsPort(), undefined);
      assert.equal((await server.get('/metrics')).status, 404);
    } finally {
      await server.close();
    }
  });
});
