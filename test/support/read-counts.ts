import assert from 'node:assert/strict';
import { parseScrape, sampleValue } from './prometheus.js';
import { httpCall, type TestServer } from './server.js';

/**
 * What the read model has done, as an operator sees it: a scrape of the server's /metrics
 * (METRICS_PORT), not its internal counters (issue 42, item 4). The server must have been started
 * with `METRICS_PORT: '0'`.
 */
export async function readCounts(server: TestServer) {
  const port = server.service.metricsPort();
  assert.ok(port !== undefined && port > 0, 'the test server was started with METRICS_PORT');
  const res = await httpCall(port, '/metrics', { host: '127.0.0.1' });
  assert.equal(res.status, 200);
  const scrape = parseScrape(res.body);
  const cache = (name: string) => ({
    hits: sampleValue(scrape, 'listings_cache_requests_total', { cache: name, result: 'hit' }),
    misses: sampleValue(scrape, 'listings_cache_requests_total', { cache: name, result: 'miss' }),
  });
  return {
    pages: cache('pages'),
    details: cache('details'),
    keys: cache('keys'),
    origins: cache('origins'),
    indexBuilds: sampleValue(scrape, 'listings_index_builds_total'),
    indexReplays: sampleValue(scrape, 'listings_index_replays_total'),
    indexEvictions: sampleValue(scrape, 'listings_index_evictions_total'),
    indexBytes: sampleValue(scrape, 'listings_index_bytes'),
    viewsHeld: sampleValue(scrape, 'listings_index_views'),
    listingRowReads: sampleValue(scrape, 'listings_listing_row_reads_total'),
    coldReads: sampleValue(scrape, 'listings_cold_reads_total'),
    refreshedAhead: sampleValue(scrape, 'listings_cache_refreshes_ahead_total'),
    tenants: sampleValue(scrape, 'listings_indexed_tenants'),
    listings: sampleValue(scrape, 'listings_indexed_listings'),
  };
}
