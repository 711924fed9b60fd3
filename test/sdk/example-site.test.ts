import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ListingsClient } from '@listings-api/sdk';
import { createSite, type Site } from '@listings-api/example-website';
import { dom, only } from '../support/html.js';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';

/**
 * The example website (examples/website) over real HTTP, without a browser, against a real API
 * server: what an anonymous visitor can send it (issue 29). The pages themselves are
 * test/browser/example-website.test.ts.
 */
describe('example website: what an anonymous visitor can send it (issue 29)', () => {
  let api: TestServer;
  let accountId: string;

  before(async () => {
    api = await startTestServer();
    accountId = await api.createAccount();
    await api.addListings(accountId, Array.from({ length: 15 }, (_, i) => ({
      title: `Unit ${i}`,
      usage_types: i % 3 === 0 ? ['Office', 'Shared Office'] : ['F&B', 'Cafe'],
      price: 4 + i,
      created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
    })));
  });
  after(() => api?.close());

  /** The site with a key of its own, at the default limit (60 a minute); no retries, so that nothing waits. */
  async function start(): Promise<{ site: Site; port: number; clock: TestClock; key: string }> {
    const clock = new TestClock();
    const key = (await api.createKey(accountId, 'sg', 'website')).key;
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    const site = createSite({ client, now: clock.now });
    return { site, port: await site.listen(0), clock, key };
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

  /** How many of each status. */
  const count = (statuses: number[]) => statuses.reduce<Record<number, number>>((all, s) => ({ ...all, [s]: (all[s] ?? 0) + 1 }), {});

  /** Requests the API was asked (its log lines), from `before` on. */
  const apiRequests = (before: number) => api.logs.lines.slice(before).filter((l) => String(l.path).startsWith('/v1/')).length;

  it('item 2: the proxy reads + as the API does and refuses locally what the API would refuse, so 65 malformed requests leave the key\'s limit untouched', async () => {
    const { site, port, key } = await start();
    const a = { localAddress: '127.0.0.2' };
    try {
      const plus = await httpCall(port, '/api/v1/listings?page=+1&per_page=3', a);
      assert.equal(plus.status, 200);
      assert.equal(plus.json.page, 1);
      const price = await httpCall(port, '/api/v1/listings?min_price=+5', a);
      assert.equal(price.status, 200);
      assert.equal(price.json.total, 14, 'prices 5 to 18');
      const shared = await httpCall(port, '/api/v1/listings?usage_type=Shared+Office', a);
      assert.equal(shared.status, 400);
      assert.equal(shared.json.error, 'bad_request');
      assert.match(shared.json.message, /^Query parameter "usage_type" holds "Shared\+Office"/);
      assert.equal((await httpCall(port, '/api/v1/listings?usage_type=Shared%20Office', a)).json.total, 5);

      const before = api.logs.lines.length;
      const statuses = [];
      for (let i = 0; i < 65; i++) statuses.push((await httpCall(port, `/api/v1/listings?page=x${i}`, a)).status);
      assert.deepEqual(statuses, Array(65).fill(400));
      assert.equal(apiRequests(before), 0, 'none of them reached the API');
      // Another visitor's uncached page is answered at once, and the key has used 3 of its 60.
      const other = await httpCall(port, '/api/v1/listings?per_page=7', { localAddress: '127.0.0.3' });
      assert.equal(other.status, 200);
      assert.equal(other.json.items.length, 7);
      assert.equal((await api.get('/v1/listings?per_page=1', { key })).headers['x-ratelimit-remaining'], '55');
    } finally {
      await site.close();
    }
  });

  it('item 2: one visitor, through /api or the server-rendered pages, causes at most 20 look-ups a minute; the others are served', async () => {
    const { site, port, clock, key } = await start();
    const a = { localAddress: '127.0.0.2' };
    const c = { localAddress: '127.0.0.4' };
    try {
      const before = api.logs.lines.length;
      const viaApi = [];
      for (let page = 1; page <= 65; page++) viaApi.push(await httpCall(port, `/api/v1/listings?page=${page}&per_page=1`, a));
      assert.deepEqual(viaApi.map((r) => r.status), [...Array(20).fill(200), ...Array(45).fill(429)]);
      assert.equal(viaApi[64]!.json.error, 'rate_limited');
      assert.equal(viaApi[64]!.headers['retry-after'], '3');
      // The same visitor's pages: a page not in the copy is a 429 page; one in the copy is served.
      const page = await httpCall(port, '/?page=30', a);
      assert.equal(page.status, 429);
      assert.equal(page.headers['retry-after'], '3');
      assert.match(page.body, /Too many requests/);
      // A minute later (on the site's clock: the API's does not move, so the key's window still
      // holds all of these), so that the site's share of the key (45 a minute, issue 40 item 5)
      // does not cut the second visitor short. Pages 1, 2, ... of the site itself, from another
      // visitor: the same budget rule.
      clock.advance(60_000);
      const pages = [];
      for (let n = 1; n <= 30; n++) pages.push((await httpCall(port, `/?page=${n}`, c)).status);
      // (15 listings are two pages: from page 3 on, a 404 "No page N", which took a look-up all the
      // same. Page 1 also reads the facets for the usage type chips, one look-up more (issue 45
      // item 4); the other pages find them in the shared copy.)
      assert.deepEqual(pages, [200, 200, ...Array(17).fill(404), ...Array(11).fill(429)]);
      assert.equal(apiRequests(before), 40);
      // A third visitor is served, pages and /api alike.
      const b = { localAddress: '127.0.0.3' };
      assert.equal((await httpCall(port, '/?usage=Office', b)).status, 200);
      assert.equal((await httpCall(port, '/api/v1/listings?per_page=5', b)).status, 200);
      assert.equal((await api.get('/v1/listings?per_page=1', { key })).headers['x-ratelimit-remaining'], '17');
      // After that minute, the first visitor has a whole budget again: the page is read (and there is no page 30).
      const again = await httpCall(port, '/?page=30', a);
      assert.equal(again.status, 404);
      assert.match(again.body, /No page 30/);
    } finally {
      await site.close();
    }
  });

  it('issue 40 item 11: a page past the last is a 404 "No page N" with a link to the last page, never "page 9 of 2"', async () => {
    const { site, port } = await start();
    try {
      const past = await httpCall(port, '/?page=9');
      assert.equal(past.status, 404);
      assert.match(past.headers['content-type'] as string, /^text\/html/);
      const page = dom(past.body);
      assert.equal(only(page, 'h1').text, 'No page 9');
      assert.equal(only(page, 'a[rel="last"]').getAttribute('href'), '/?page=2');
      assert.doesNotMatch(past.body, /page 9 of/);
      const last = await httpCall(port, '/?page=2');
      assert.equal(last.status, 200);
      assert.match(last.body, /15 listings, page 2 of 2/);
      // With a filter: five offices are one page.
      const filtered = await httpCall(port, '/?usage=Office&page=2');
      assert.equal(filtered.status, 404);
      assert.match(filtered.body, /href="\/\?usage=Office" rel="last"/);
    } finally {
      await site.close();
    }
  });

  it('issue 40 item 5: four addresses x 20 distinct URLs leave the key its reserve, and new visitors are answered for the rest of the minute', async () => {
    // The site's clock is the API's: the key's rolling minute and its X-RateLimit-Reset are on it.
    const { clock } = api;
    const key = (await api.createKey(accountId, 'sg', 'website')).key;
    const client = new ListingsClient({ apiKey: key, baseUrl: `http://api.localhost:${api.port}`, maxRetries: 0 });
    const site = createSite({ client, now: clock.now });
    const port = await site.listen(0);
    try {
      // A visitor before the attack: the home page and the next page are in the copy.
      const regular = { localAddress: '127.0.0.9' };
      const home = await httpCall(port, '/', regular);
      assert.equal(home.status, 200);
      assert.equal((await httpCall(port, '/?page=2', regular)).status, 200);
      const ids = [...home.body.matchAll(/href="\/listings\/([0-9a-f-]{36})"/g)].map((m) => m[1]!);

      // Four addresses, 20 distinct URLs each, all at once.
      const start = api.logs.lines.length;
      const attackers = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
      const attack = await Promise.all(attackers.map(async (address, a) => {
        const statuses: number[] = [];
        for (let i = 1; i <= 20; i++) statuses.push((await httpCall(port, `/api/v1/listings?page=${i}&per_page=${a + 2}`, { localAddress: address })).status);
        return statuses;
      }));
      const attackedAt = clock.ms;
      const sent = apiRequests(start);
      const statuses = attack.flat();
      const figures = () => `${sent} look-ups reached the API during the attack; the key has ${client.rateLimit?.remaining} of 60 left; ` +
        `the attackers got ${JSON.stringify(count(statuses))}`;
      // The site's share is 45 of the key's 60 (three quarters), 3 of which the regular visitor used
      // (the home page's listings and facets, and the next page).
      assert.ok(sent <= 42, figures());
      assert.ok(client.rateLimit!.remaining >= 15, figures());
      assert.ok(statuses.every((s) => s === 200 || s === 503), figures());

      // For the rest of the minute, new visitors are answered: from a copy (revalidated for free), or
      // with a look-up from the part of the share kept for visitors new to the site. (15 look-ups:
      // each visitor here may cause four, the home page's listings and facets revalidated, a
      // listing not viewed before and a page not viewed before, so three such visitors.)
      for (const [i, second] of [15, 35, 55].entries()) {
        clock.ms = attackedAt + second * 1000;
        const visitor = { localAddress: `127.0.0.${20 + i}` };
        const page = await httpCall(port, '/', visitor);
        assert.equal(page.status, 200, `${second} s: the home page`);
        const detail = await httpCall(port, `/listings/${ids[i]}`, visitor);
        assert.equal(detail.status, 200, `${second} s: a listing not viewed before: ${detail.status}; ${figures()}`);
        const uncached = await httpCall(port, `/api/v1/listings?per_page=3&sort=price&page=${i + 1}`, visitor);
        assert.equal(uncached.status, 200, `${second} s: a page not viewed before, through /api: ${uncached.status}`);
      }
      // An attacker asking again gets its old copy, marked stale: the share is not theirs to spend.
      const again = await httpCall(port, '/api/v1/listings?page=1&per_page=2', { localAddress: '127.0.0.2' });
      assert.equal(again.status, 200);
      assert.equal(again.headers['x-listings-cache'], 'stale');
      assert.ok(client.rateLimit!.remaining >= 15, `the key's last quarter is left: ${client.rateLimit!.remaining}`);
    } finally {
      await site.close();
    }
  });
});
