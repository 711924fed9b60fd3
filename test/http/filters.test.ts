import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { USAGE_TAXONOMY } from '../../src/listings/taxonomy.js';
import { prng } from '../support/random.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, readFiltered } from './helpers.js';

/**
 * D23 filters and sort on GET /v1/listings: every rule through a listening server, and a seeded
 * search over many combinations, each checked against a reference computed from the unfiltered
 * list (all pages, read as a client would).
 */
interface Listing {
  id: string;
  usage_types: string[];
  size_sqft: number | null;
  price: number | null;
  price_basis: string | null;
  is_featured: boolean;
  is_takeover: boolean;
  created_at: string;
}

const USAGES = Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [[main], ...subs.map((sub) => [main, sub])]);
const NAMES = Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [main, ...subs]);

describe('filters and sort (D23)', () => {
  let server: TestServer;
  let key: string;
  let all: Listing[];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    const accountId = await server.createAccount();
    const rand = prng(23);
    const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
    await server.addListings(accountId, Array.from({ length: 160 }, (_, i) => ({
      usage_types: pick(USAGES),
      // Nulls, ties and the bounds' edges are all represented.
      size_sqft: rand() < 0.15 ? null : pick([0, 250, 500, 500.5, 750, 1000, 1200, 2500.25, 4000]),
      price: rand() < 0.15 ? null : pick([0, 1, 4.5, 5, 5, 6.25, 9.9, 12, 30]),
      // D25: the basis never changes what a price filter or sort compares.
      price_basis: pick([null, 'per_sqft_per_month', 'per_month']),
      is_featured: rand() < 0.2,
      is_takeover: rand() < 0.25,
      created_at: new Date(Date.parse('2026-01-01T00:00:00Z') + Math.floor(rand() * 60) * 86_400_000).toISOString(),
      // Some expired, some expiring later (D10 still holds in a filtered view).
      expiry_date: i % 17 === 0 ? '2026-11-01T00:00:00.000Z' : i % 13 === 0 ? '2026-11-22T10:05:00.000Z' : null,
    })));
    const created = await server.createKey(accountId);
    key = created.key;
    await server.service.store.keys.setRateLimit(created.id, 1_000_000);
    all = await readAll('');
  }

  const readAll = (query: string, perPage = 37) => readFiltered<Listing>(server, key, query, perPage);

  /** The reference: D23's rules applied to the unfiltered list. */
  function reference(p: Record<string, string>): string[] {
    const names = p.usage_type?.split(',');
    const num = (name: string) => (p[name] === undefined ? undefined : Number(p[name]));
    const [minSize, maxSize, minPrice, maxPrice] = [num('min_size_sqft'), num('max_size_sqft'), num('min_price'), num('max_price')];
    let kept = all.filter((l) =>
      (names === undefined || names.some((n) => l.usage_types[0] === n || l.usage_types[1] === n)) &&
      (minSize === undefined || (l.size_sqft !== null && l.size_sqft >= minSize)) &&
      (maxSize === undefined || (l.size_sqft !== null && l.size_sqft <= maxSize)) &&
      (minPrice === undefined || (l.price !== null && l.price >= minPrice)) &&
      (maxPrice === undefined || (l.price !== null && l.price <= maxPrice)) &&
      (p.featured === undefined || l.is_featured === (p.featured === 'true')) &&
      (p.takeover === undefined || l.is_takeover === (p.takeover === 'true')));
    if (p.sort !== undefined) {
      const desc = p.sort.startsWith('-');
      const field = p.sort.replace(/^-/, '') as 'price' | 'size_sqft' | 'created_at';
      kept = [...kept].sort((a, b) => {
        const [x, y] = [a[field], b[field]];
        if (x === null || y === null) return x === y ? (a.id < b.id ? -1 : 1) : x === null ? 1 : -1; // nulls last, both ways
        if (x !== y) return (x < y ? -1 : 1) * (desc ? -1 : 1);
        return a.id < b.id ? -1 : 1;
      });
    }
    return kept.map((l) => l.id);
  }

  it('a seeded search over 200 combinations of filters and sorts matches the reference, page by page', async (t) => {
    await world(t);
    const rand = prng(2323);
    const maybe = (p: number) => rand() < p;
    const amount = (values: number[]) => String(values[Math.floor(rand() * values.length)]);
    for (let round = 0; round < 200; round++) {
      const p: Record<string, string> = {};
      if (maybe(0.4)) p.usage_type = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => NAMES[Math.floor(rand() * NAMES.length)]).join(',');
      if (maybe(0.3)) p.min_size_sqft = amount([0, 300, 500, 500.5, 1000]);
      if (maybe(0.3)) p.max_size_sqft = amount([500, 1000, 2500.25, 10000]);
      if (maybe(0.3)) p.min_price = amount([0, 4.5, 5, 6]);
      if (maybe(0.3)) p.max_price = amount([5, 9.9, 12, 100]);
      if (maybe(0.25)) p.featured = maybe(0.5) ? 'true' : 'false';
      if (maybe(0.25)) p.takeover = maybe(0.5) ? 'true' : 'false';
      if (maybe(0.6)) p.sort = ['price', '-price', 'size_sqft', '-size_sqft', 'created_at', '-created_at'][Math.floor(rand() * 6)]!;
      if (Number(p.min_size_sqft) > Number(p.max_size_sqft)) delete p.min_size_sqft;
      if (Number(p.min_price) > Number(p.max_price)) delete p.min_price;
      const query = Object.entries(p).map(([k, v]) => `&${k}=${encodeURIComponent(v)}`).join('');
      const got = (await readAll(query, 1 + Math.floor(rand() * 40))).map((l) => l.id);
      const want = reference(p);
      if (p.sort === undefined) assert.deepEqual(new Set(got), new Set(want), query);
      assert.deepEqual(p.sort === undefined ? [...got].sort() : got, p.sort === undefined ? [...want].sort() : want, query);
      if (p.sort === undefined) {
        // Without sort, D9's order is kept: the filtered list is the unfiltered one's subsequence.
        const order = all.map((l) => l.id).filter((id) => want.includes(id));
        assert.deepEqual(got, order, `${query}: D9 order`);
      }
    }
  });

  it('a main type matches every listing of that type; a sub-type only its own; several names any of them', async (t) => {
    await world(t);
    const office = await readAll('&usage_type=Office');
    assert.ok(office.length > 0 && office.every((l) => l.usage_types[0] === 'Office'));
    assert.ok(office.some((l) => l.usage_types[1] === 'Shared Office') && office.some((l) => l.usage_types.length === 1));
    const shared = await readAll('&usage_type=Shared%20Office');
    assert.ok(shared.every((l) => l.usage_types[1] === 'Shared Office'));
    const fb = await readAll('&usage_type=F%26B');
    assert.ok(fb.length > 0 && fb.every((l) => l.usage_types[0] === 'F&B'));
    const either = await readAll('&usage_type=Clinic,Kiosk');
    assert.ok(either.every((l) => l.usage_types[0] === 'Clinic' || l.usage_types[1] === 'Kiosk'));
    assert.equal(either.length, reference({ usage_type: 'Clinic,Kiosk' }).length);
  });

  it('bounds are inclusive, a null never matches a bound, and + is allowed', async (t) => {
    await world(t);
    const exact = await readAll('&min_price=5&max_price=5');
    assert.ok(exact.length > 0 && exact.every((l) => l.price === 5));
    assert.deepEqual((await readAll('&min_price=%2B5&max_price=+5')).map((l) => l.id), exact.map((l) => l.id));
    const sized = await readAll('&min_size_sqft=0');
    assert.ok(sized.every((l) => l.size_sqft !== null));
    assert.equal(sized.length, all.filter((l) => l.size_sqft !== null).length);
    const big = await readAll('&max_price=99999999999999999999999999999999.5');
    assert.equal(big.length, all.filter((l) => l.price !== null).length, 'no upper cap on a bound');
  });

  it('a bound past the largest double is its own filter: it never shares an answer with no bound or another bound', async (t) => {
    await world(t);
    // 10^309 reads as Infinity: a view or answer keyed as if it were absent would give (or leave
    // behind, for the next request) another filter's answer.
    const huge = `1${'0'.repeat(309)}`;
    const facetsTotal = async (query: string) => (await server.get(`/v1/listings/facets?takeover=true${query}`, { key })).json.total as number;
    for (const [name, field] of [['min_price', 'price'], ['max_price', 'price'], ['min_size_sqft', 'size_sqft'], ['max_size_sqft', 'size_sqft']] as const) {
      const priced = all.filter((l) => l[field] !== null);
      const takeover = all.filter((l) => l.is_takeover);
      const expected = name.startsWith('min') ? 0 : priced.length;
      const expectedFacets = name.startsWith('min') ? 0 : takeover.filter((l) => l[field] !== null).length;
      // Each asked first with the huge bound, then without it, then the other way round on a new view.
      assert.equal((await readAll(`&${name}=${huge}`)).length, expected, `${name}=10^309`);
      assert.equal((await readAll('')).length, all.length, `no bound after ${name}=10^309`);
      assert.equal(await facetsTotal(`&${name}=${huge}`), expectedFacets, `facets ${name}=10^309`);
      assert.equal(await facetsTotal(''), takeover.length, `facets without a bound after ${name}=10^309`);
    }
    assert.equal((await readAll(`&usage_type=Office&max_size_sqft=${huge}`)).length, all.filter((l) => l.size_sqft !== null && l.usage_types.includes('Office')).length);
    assert.equal((await readAll(`&usage_type=Office&min_size_sqft=${huge}`)).length, 0, 'the other huge bound of the same filter');
    assert.equal((await readAll('&usage_type=Office')).length, all.filter((l) => l.usage_types.includes('Office')).length);
  });

  it('price bounds and sort compare the number as given, whatever its price_basis (D25)', async (t) => {
    await world(t);
    const bounded = await readAll('&min_price=5&max_price=12&sort=price');
    const bases = new Set(bounded.map((l) => l.price_basis));
    assert.deepEqual([...bases].sort(), [null, 'per_month', 'per_sqft_per_month'].sort(), 'every basis in one filtered view');
    assert.ok(bounded.every((l, i) => l.price! >= 5 && l.price! <= 12 && (i === 0 || bounded[i - 1]!.price! <= l.price!)));
    assert.deepEqual(bounded.map((l) => l.id), reference({ min_price: '5', max_price: '12', sort: 'price' }));
  });

  it('sorts put nulls last in both directions and break ties by id; featured listings are not put first', async (t) => {
    await world(t);
    for (const sort of ['price', '-price', 'size_sqft', '-size_sqft']) {
      const items = await readAll(`&sort=${sort}`, 100);
      const field = sort.replace('-', '') as 'price' | 'size_sqft';
      const firstNull = items.findIndex((l) => l[field] === null);
      assert.ok(firstNull > 0 && items.slice(firstNull).every((l) => l[field] === null), `${sort}: nulls last`);
      const nulls = items.slice(firstNull).map((l) => l.id);
      assert.deepEqual(nulls, [...nulls].sort(), `${sort}: nulls by id`);
      assert.deepEqual(items.map((l) => l.id), reference({ sort }));
    }
    const byCreated = await readAll('&sort=created_at');
    assert.deepEqual(byCreated.map((l) => l.id), reference({ sort: 'created_at' }));
    assert.ok(byCreated.some((l, i) => i > 0 && l.is_featured && !byCreated[i - 1]!.is_featured), 'featured listings are mixed in, not first');
  });

  it('every malformed value, repeat, unknown name or min above max is a 400 naming the parameter', async (t) => {
    await world(t);
    const cases: Array<[string, string]> = [
      ['usage_type=office', 'usage_type'], ['usage_type=Office,', 'usage_type'], ['usage_type=', 'usage_type'],
      ['usage_type=Office,%20Retail', 'usage_type'], ['usage_type=Shared+Office', 'usage_type'], ['usage_type=Office&usage_type=Retail', 'usage_type'],
      ['min_size_sqft=.5', 'min_size_sqft'], ['max_size_sqft=5.', 'max_size_sqft'], ['min_price=-1', 'min_price'],
      ['max_price=1e3', 'max_price'], ['min_price=%201', 'min_price'], ['max_price=0x10', 'max_price'], ['min_price=', 'min_price'],
      ['min_price=1&min_price=2', 'min_price'], ['min_size_sqft=2000&max_size_sqft=1000', 'min_size_sqft'], ['min_price=9&max_price=8.5', 'min_price'],
      ['featured=TRUE', 'featured'], ['featured=1', 'featured'], ['takeover=', 'takeover'], ['takeover=true&takeover=false', 'takeover'],
      ['sort=PRICE', 'sort'], ['sort=+price', 'sort'], ['sort=price,id', 'sort'], ['sort=', 'sort'], ['sort=price&sort=-price', 'sort'],
    ];
    for (const [query, name] of cases) {
      const res = await server.get(`/v1/listings?${query}`, { key });
      assertError(res, 400, 'bad_request', query);
      assert.match(res.json.message, new RegExp(`"${name}"`), query);
    }
    // The numbers as sent, not as read: 10^309 is not "Infinity" to the client.
    const above = await server.get(`/v1/listings?min_price=${'9'.repeat(400)}&max_price=%2B8.50`, { key });
    assertError(above, 400, 'bad_request');
    assert.equal(above.json.message, `Query parameter "min_price" (${'9'.repeat(40)}…) is above "max_price" (+8.50).`);
  });

  it('a page beyond the last is empty with the filtered total; the detail and the feed ignore the parameters', async (t) => {
    await world(t);
    const featured = await readAll('&featured=true');
    const beyond = await server.get('/v1/listings?featured=true&page=999', { key });
    assert.equal(beyond.status, 200);
    assert.deepEqual(beyond.json.items, []);
    assert.equal(beyond.json.total, featured.length);
    const id = featured[0]!.id;
    assert.equal((await server.get(`/v1/listings/${id}?featured=false&sort=nonsense&min_price=-4`, { key })).status, 200);
    assert.equal((await server.get('/v1/listings/changes?featured=false&sort=nonsense', { key })).status, 200);
  });

  it('filtered views follow writes and expiries (D10) exactly', async (t) => {
    await world(t);
    const soon = await readAll('&sort=-price');
    server.clock.advance(6 * 60_000); // past 10:05: some listings expire, with no write
    const later = await readAll('&sort=-price');
    assert.ok(later.length < soon.length, 'expired listings left the sorted view');
    assert.deepEqual(later.map((l) => l.id), soon.filter((l) => later.some((x) => x.id === l.id)).map((l) => l.id));
    all = await readAll('');
    assert.deepEqual(later.map((l) => l.id), reference({ sort: '-price' }));

    // A write: the most expensive listing now, and the same filtered views show it at once.
    const owner = (await server.get('/v1/listings?per_page=1', { key })).json.items[0].org_id as string;
    await server.addListings(owner, [{ title: 'Top price', price: 31, usage_types: ['Clinic'] }]);
    const top = (await server.get('/v1/listings?sort=-price&per_page=1', { key })).json.items[0];
    assert.equal(top.title, 'Top price');
    assert.ok((await readAll('&usage_type=Clinic&min_price=31')).some((l) => l.id === top.id));
  });
});
