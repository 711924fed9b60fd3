import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, readAll } from './helpers.js';

const ENVELOPE = ['items', 'page', 'per_page', 'total', 'pages'];

describe('page envelope and paging (spec 2.3, 4.2, 8; D7, D8, D9)', () => {
  let server: TestServer;
  /** 105 listings: more than the per_page ceiling, so that clamping is visible. */
  let bigKey: string;
  /** No listings at all. */
  let emptyKey: string;
  /** Exactly 100 listings: a total that is a multiple of the page size. */
  let hundredKey: string;
  /** Listings made to test the D9 order, ties included. */
  let orderKey: string;
  let expectedOrder: string[];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // Rate limiting is tested in rate-limit.test.ts; here many requests share a key.
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000', DASHBOARD_PORT: 'off' });
    const big = await server.createAccount();
    bigKey = (await server.createKey(big)).key;
    await server.addListings(big, Array.from({ length: 105 }, (_, i) => ({ created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() })));

    const empty = await server.createAccount();
    emptyKey = (await server.createKey(empty)).key;
    // Listings the empty account cannot see: another country, and not active.
    await server.addListings(empty, [{ country: 'my', currency: 'MYR' }, { status: 'leased' }]);

    const hundred = await server.createAccount();
    hundredKey = (await server.createKey(hundred)).key;
    await server.addListings(hundred, Array.from({ length: 100 }, () => ({})));

    // D9: featured first, then newest first, then id ascending. Many ties on (featured, created_at),
    // inserted in an order unrelated to their ids, so that only the id tie-break orders them.
    const order = await server.createAccount();
    orderKey = (await server.createKey(order)).key;
    const rows: Array<{ id: string; is_featured: boolean; created_at: string }> = [];
    const times = ['2026-03-01T00:00:00.000Z', '2026-03-02T00:00:00.000Z', '2026-03-02T00:00:00.001Z', '2026-01-15T12:00:00.000Z'];
    let n = 0;
    for (const is_featured of [false, true]) {
      for (const created_at of times) {
        for (let copy = 0; copy < 4; copy++) {
          n++;
          // Ids whose order is scrambled relative to insertion order.
          const hex = ((n * 7919) % 4096).toString(16).padStart(3, '0');
          rows.push({ id: `${hex}aaaaa-0000-4000-8000-${n.toString().padStart(12, '0')}`, is_featured, created_at });
        }
      }
    }
    await server.addListings(order, rows);
    expectedOrder = [...rows]
      .sort((a, b) =>
        Number(b.is_featured) - Number(a.is_featured) ||
        (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => r.id);
  }

  const list = (query: string, key = bigKey) => server.get(`/v1/listings${query}`, { key });

  it('the envelope has items, page, per_page, total, pages; defaults page 1 and per_page 20 (2.3, 4.2)', async (t) => {
    await world(t);
    const res = await list('');
    assert.equal(res.status, 200);
    assert.match(header(res, 'content-type') ?? '', /^application\/json\b/);
    assert.deepEqual(Object.keys(res.json).sort(), [...ENVELOPE].sort());
    assert.equal(res.json.page, 1);
    assert.equal(res.json.per_page, 20);
    assert.equal(res.json.total, 105);
    assert.equal(res.json.pages, 6);
    assert.equal(res.json.items.length, 20);
    const last = await list('?page=6');
    assert.equal(last.json.items.length, 5);
    assert.equal(last.json.page, 6);
  });

  it('D7: base-10 integers are accepted, with an optional leading "+" raw or as %2B, and leading zeros', async (t) => {
    await world(t);
    const cases: Array<[string, number, number]> = [
      ['?page=2&per_page=10', 2, 10],
      ['?page=+2&per_page=+10', 2, 10],
      ['?page=%2B2&per_page=%2B10', 2, 10],
      ['?page=02&per_page=010', 2, 10],
      ['?per_page=1', 1, 1],
      ['?per_page=100', 1, 100],
    ];
    for (const [query, page, perPage] of cases) {
      const res = await list(query);
      assert.equal(res.status, 200, `${query}: ${res.body}`);
      assert.equal(res.json.page, page, query);
      assert.equal(res.json.per_page, perPage, query);
      assert.equal(res.json.items.length, Math.min(perPage, Math.max(0, 105 - (page - 1) * perPage)), query);
    }
    // The "+" form names the same page as the plain one.
    const plain = await list('?page=2&per_page=10');
    const plus = await list('?page=+2&per_page=%2B10');
    assert.deepEqual(plus.json, plain.json);
  });

  it('D7: malformed values give 400 bad_request: whitespace, decimals, exponent, signs, zero, too large, empty, not a number', async (t) => {
    await world(t);
    const bad = [
      'page=abc', 'page=', 'page=%202', 'page=2%20', 'page=%092', 'page=2%0A', 'page=+%202', 'page=%20',
      'page=1.0', 'page=1.5', 'page=2.', 'page=1e1', 'page=1E2', 'page=0x10', 'page=1_000', 'page=%EF%BC%92' /* fullwidth 2 */,
      'page=-1', 'page=-0', 'page=0', 'page=++2', 'page=%2B%2B2', 'page=+', 'page=Infinity', 'page=NaN',
      'page=2147483648', 'page=99999999999999999999', 'page=%2B2147483648',
      'per_page=abc', 'per_page=', 'per_page=%2010', 'per_page=10.0', 'per_page=1e2', 'per_page=-5', 'per_page=0',
      'per_page=-0', 'per_page=2147483648', 'per_page=18446744073709551616',
    ];
    for (const query of bad) {
      assertError(await list(`?${query}`), 400, 'bad_request', query);
    }
  });

  it('D7: 2^31-1 is the largest accepted value; a page that far is empty with the true total and pages', async (t) => {
    await world(t);
    const page = await list('?page=2147483647');
    assert.equal(page.status, 200, page.body);
    assert.deepEqual(page.json, { items: [], page: 2147483647, per_page: 20, total: 105, pages: 6 });
    const perPage = await list('?per_page=2147483647');
    assert.equal(perPage.status, 200, perPage.body);
    assert.equal(perPage.json.per_page, 100);
  });

  it('D7: a parameter given twice gives 400, even with equal values', async (t) => {
    await world(t);
    for (const query of ['page=1&page=2', 'page=1&page=1', 'per_page=10&per_page=10', 'page=1&per_page=5&page=1', 'per_page=5&per_page=']) {
      assertError(await list(`?${query}`), 400, 'bad_request', query);
    }
  });

  it('D7: unknown parameters are ignored, repeated or not', async (t) => {
    await world(t);
    const plain = await list('?page=2&per_page=5');
    for (const query of ['?page=2&per_page=5&order=price', '?foo=1&foo=2&page=2&per_page=5', '?page=2&per_page=5&Page=9&PER_PAGE=x', '?page=2&per_page=5&&x', '?page=2&per_page=5&status=leased']) {
      const res = await list(query);
      assert.equal(res.status, 200, `${query}: ${res.body}`);
      assert.deepEqual(res.json, plain.json, query);
    }
    const none = await list('?q=hello&limit=1000&offset=5');
    assert.equal(none.status, 200);
    assert.equal(none.json.page, 1);
    assert.equal(none.json.per_page, 20);
  });

  it('per_page above 100 is clamped to 100 and the envelope reports 100 (spec 8, D7)', async (t) => {
    await world(t);
    for (const value of ['101', '150', '1000', '+500', '2147483647']) {
      const res = await list(`?per_page=${value}`);
      assert.equal(res.status, 200, value);
      assert.equal(res.json.per_page, 100, value);
      assert.equal(res.json.items.length, 100, value);
      assert.equal(res.json.pages, 2, value);
    }
    const second = await list('?per_page=500&page=2');
    assert.equal(second.json.items.length, 5);
    assert.equal(second.json.page, 2);
  });

  it('a page beyond the last gives 200 with items [] and the true total and pages (D7)', async (t) => {
    await world(t);
    for (const [query, pages] of [['?page=7', 6], ['?page=1000&per_page=50', 3], ['?page=3&per_page=100', 2]] as const) {
      const res = await list(query);
      assert.equal(res.status, 200, query);
      assert.deepEqual(res.json.items, [], query);
      assert.equal(res.json.total, 105, query);
      assert.equal(res.json.pages, pages, query);
    }
  });

  it('D8: pages = max(1, ceil(total / per_page)), never 0, total 0 included; the read-all loop ends', async (t) => {
    await world(t);
    const empty = await list('', emptyKey);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.json, { items: [], page: 1, per_page: 20, total: 0, pages: 1 });
    for (const perPage of [1, 7, 100]) {
      const res = await list(`?per_page=${perPage}`, emptyKey);
      assert.equal(res.json.pages, 1);
      assert.equal(res.json.total, 0);
    }
    assert.deepEqual(await readAll(server, emptyKey, 20), { ids: [], total: 0, pages: 1 });

    for (const [perPage, pages] of [[100, 1], [50, 2], [20, 5], [30, 4], [99, 2], [1, 100]] as const) {
      const res = await list(`?per_page=${perPage}`, hundredKey);
      assert.equal(res.json.total, 100);
      assert.equal(res.json.pages, pages, `per_page=${perPage}`);
    }
    const exact = await list('?per_page=50&page=2', hundredKey);
    assert.equal(exact.json.items.length, 50);
    assert.equal(exact.json.pages, 2);
  });

  it('D9: featured first, then newest first, then id ascending', async (t) => {
    await world(t);
    const res = await list('?per_page=100', orderKey);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.items.map((l: { id: string }) => l.id), expectedOrder);
    const items = res.json.items as Array<{ is_featured: boolean; created_at: string }>;
    const firstPlain = items.findIndex((l) => !l.is_featured);
    assert.ok(firstPlain > 0 && items.slice(firstPlain).every((l) => !l.is_featured), 'featured listings come first');
  });

  it('D9: the read-all loop sees every listing exactly once, in the same order, at any page size', async (t) => {
    await world(t);
    for (const perPage of [1, 2, 3, 5, 7, 16, 31, 100]) {
      const { ids, total, pages } = await readAll(server, orderKey, perPage);
      assert.equal(total, expectedOrder.length);
      assert.equal(pages, Math.ceil(expectedOrder.length / perPage));
      assert.equal(new Set(ids).size, ids.length, `no listing twice at per_page=${perPage}`);
      assert.deepEqual(ids, expectedOrder, `per_page=${perPage}`);
    }
    const all = await readAll(server, bigKey, 20);
    assert.equal(all.ids.length, 105);
    assert.equal(new Set(all.ids).size, 105);
  });
});
