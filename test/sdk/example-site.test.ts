import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListingsClient } from '@listings-api/sdk';
import { createSite, type Site } from '@listings-api/example-website';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';

/**
 * The example website (examples/website) over real HTTP, without a browser, against a real API
 * server: what an anonymous visitor can send it (issue 29). The pages themselves are
 * test/browser/example-website.test.ts.
 */
describe('example website: what an anonymous visitor can send it (issue 29)', () => {
  let api: TestServer;
  let key: string;

  before(async () => {
    api = await startTestServer();
    const accountId = await api.createAccount();
    key = (await api.createKey(accountId, 'sg')).key;
    await api.addListings(accountId, Array.from({ length: 15 }, (_, i) => ({
      title: `Unit ${i}`,
      usage_types: i % 3 === 0 ? ['Office', 'Shared Office'] : ['F&B', 'Cafe'],
      price: 4 + i,
      created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
    })));
  });
  after(() => api?.close());

  async function start(): Promise<{ site: Site; port: number; clock: TestClock }> {
    const clock = new TestClock();
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    const site = createSite({ client, now: clock.now });
    return { site, port: await site.listen(0), clock };
  }

  it('item 1: TRACE, an unparsable request target or an undecodable id are 4xx answers, and the site keeps serving', async () => {
    const { site, port } = await start();
    try {
      const trace = await httpCall(port, '/api/v1/listings', { method: 'TRACE' });
      assert.equal(trace.status, 405);
      assert.equal(trace.json.error, 'method_not_allowed');
      assert.equal(trace.headers.allow, 'GET, HEAD');
      assert.equal((await httpCall(port, '/', { method: 'TRACE' })).status, 405);
      for (const target of ['http://[', 'http://[/api/v1/listings']) {
        const res = await httpCall(port, target);
        assert.equal(res.status, 400, target);
        assert.match(res.headers['content-type'] as string, /^text\/html/);
      }
      const undecodable = await httpCall(port, '/listings/%E0%A4%A');
      assert.equal(undecodable.status, 404);
      const home = await httpCall(port, '/');
      assert.equal(home.status, 200);
      assert.match(home.body, /15 listings/);
    } finally {
      await site.close();
    }
  });
});
