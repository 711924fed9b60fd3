import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { USAGE_TAXONOMY } from '../../src/listings/taxonomy.js';
import { prng } from '../support/random.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header, readFiltered } from './helpers.js';

/**
 * D26 (text search), D27 (facets) and D28 (location) through a listening server: every rule, and
 * an oracle that compares the list and the facets for hundreds of random queries with a
 * brute-force computation over the unfiltered list (read as a client would). Written from the
 * decisions' text: folding, prefix words, great-circle distance, boxes across the antimeridian.
 */
interface Listing {
  id: string;
  title: string | null;
  building_name: string | null;
  street_address: string | null;
  usage_types: string[];
  size_sqft: number | null;
  price: number | null;
  price_basis: string | null;
  currency: string;
  is_featured: boolean;
  is_takeover: boolean;
  location: { lat: number; lng: number } | null;
}

const USAGES = Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [[main], ...subs.map((sub) => [main, sub])]);
const NAMES = Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [main, ...subs]);
const TITLE_WORDS = ['Office', 'office', 'OFFICES', 'Café', 'cafe', 'Marina', 'marine', 'Bay', 'Über', 'uber', 'Straße', 'ﬁne', 'Ｆｕｌｌ', 'corner-unit', "shop's", '12', '120m²', 'Łódź', '中文'];
const BUILDINGS = ['Marina Bay Link', 'Orchard Gateway', 'Telok Ayer Point', 'Ōtemachi Tower', null];
const STREETS = ['8 Marina Boulevard', '277 Orchard Road', '18 Telok-Ayer Street', null];
/** Places: a city, both sides of the antimeridian, near a pole, and none. */
const CENTRES: Array<[number, number]> = [[1.29, 103.85], [-16.5, 179.9], [-16.6, -179.95], [89.7, 10], [51.5, -0.1]];

/** D26's comparison: NFKD, marks removed, lower case; words cut at anything but letters and digits. */
const fold = (text: string) => text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '');
const wordsOf = (text: string) => fold(text).split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '');

function haversine(a: { lat: number; lng: number }, b: { lat: number; lng: number }): number {
  const r = Math.PI / 180;
  const h = Math.sin(((b.lat - a.lat) * r) / 2) ** 2 + Math.cos(a.lat * r) * Math.cos(b.lat * r) * Math.sin(((b.lng - a.lng) * r) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(h)));
}

type Params = Record<string, string>;

describe('text search, facets and location (D26, D27, D28)', () => {
  let server: TestServer;
  let key: string;
  let all: Listing[];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { DASHBOARD_PORT: 'off' });
    const accountId = await server.createAccount();
    const rand = prng(2628);
    const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
    await server.addListings(accountId, Array.from({ length: 180 }, (_, i) => {
      const [lat, lng] = pick(CENTRES);
      return {
        title: rand() < 0.1 ? null : Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(TITLE_WORDS)).join(pick([' ', ', ', ' - '])),
        building_name: pick(BUILDINGS),
        street_address: pick(STREETS),
        usage_types: pick(USAGES),
        size_sqft: rand() < 0.15 ? null : pick([250, 500, 750.5, 1000, 4000]),
        price: rand() < 0.15 ? null : pick([1, 4.5, 5, 9.9, 3000]),
        price_basis: pick([null, 'per_sqft_per_month', 'per_month']),
        currency: pick(['SGD', 'SGD', 'USD']),
        is_featured: rand() < 0.2,
        is_takeover: rand() < 0.25,
        // Within about 20 km of a centre, longitudes wrapped into -180..180; a fifth without a place.
        location: rand() < 0.2 ? null : {
          lat: Math.max(-90, Math.min(90, lat + (rand() - 0.5) * 0.3)),
          lng: ((lng + (rand() - 0.5) * 0.3 + 540) % 360) - 180,
        },
        created_at: new Date(Date.parse('2026-01-01T00:00:00Z') + Math.floor(rand() * 60) * 86_400_000).toISOString(),
        // D10 holds in every view: some expired.
        expiry_date: i % 17 === 0 ? '2026-11-01T00:00:00.000Z' : null,
      };
    }));
    const created = await server.createKey(accountId);
    key = created.key;
    await server.service.store.keys.setRateLimit(created.id, 1_000_000);
    all = await readAll('');
  }

  const readAll = (query: string, perPage = 41) => readFiltered<Listing>(server, key, query, perPage);

  const queryOf = (p: Params) => Object.entries(p).map(([k, v]) => `&${k}=${encodeURIComponent(v)}`).join('');

  /** Each rule of D23, D26 and D28, but the ones named in `leaving` (D27's disjunctive counts). */
  function selects(p: Params, leaving: ReadonlySet<string> = new Set()): (l: Listing) => boolean {
    const names = p.usage_type?.split(',');
    const num = (name: string) => (p[name] === undefined ? undefined : Number(p[name]));
    const [minSize, maxSize, minPrice, maxPrice] = [num('min_size_sqft'), num('max_size_sqft'), num('min_price'), num('max_price')];
    const queryWords = p.q === undefined ? undefined : wordsOf(p.q);
    const near = p.near?.split(',').map(Number);
    const radius = Number(p.radius_m ?? 5000);
    const box = p.bbox?.split(',').map(Number);
    return (l) => {
      const own = [l.title, l.building_name, l.street_address, ...l.usage_types].flatMap((t) => (t === null ? [] : wordsOf(t)));
      return (leaving.has('usage_type') || names === undefined || names.some((n) => l.usage_types.includes(n))) &&
        (minSize === undefined || (l.size_sqft !== null && l.size_sqft >= minSize)) &&
        (maxSize === undefined || (l.size_sqft !== null && l.size_sqft <= maxSize)) &&
        (minPrice === undefined || (l.price !== null && l.price >= minPrice)) &&
        (maxPrice === undefined || (l.price !== null && l.price <= maxPrice)) &&
        (leaving.has('featured') || p.featured === undefined || l.is_featured === (p.featured === 'true')) &&
        (leaving.has('takeover') || p.takeover === undefined || l.is_takeover === (p.takeover === 'true')) &&
        (queryWords === undefined || queryWords.every((q) => own.some((w) => w.startsWith(q)))) &&
        (near === undefined || (l.location !== null && haversine({ lat: near[0]!, lng: near[1]! }, l.location) <= radius)) &&
        (box === undefined || (l.location !== null && l.location.lat >= box[1]! && l.location.lat <= box[3]! &&
          (box[0]! <= box[2]! ? l.location.lng >= box[0]! && l.location.lng <= box[2]! : l.location.lng >= box[0]! || l.location.lng <= box[2]!)));
    };
  }

  /** The list's reference: the selected listings in D9 order (the unfiltered list's), or by distance. */
  function reference(p: Params): string[] {
    const kept = all.filter(selects(p));
    if (p.sort === 'distance') {
      const [lat, lng] = p.near!.split(',').map(Number) as [number, number];
      kept.sort((a, b) => haversine({ lat, lng }, a.location!) - haversine({ lat, lng }, b.location!) || (a.id < b.id ? -1 : 1));
    }
    return kept.map((l) => l.id);
  }

  /** D27's reference. */
  function facetsReference(p: Params) {
    const selected = all.filter(selects(p));
    const minMaxCount = (values: number[]) =>
      ({ min: values.length === 0 ? null : Math.min(...values), max: values.length === 0 ? null : Math.max(...values), count: values.length });
    const byUsage = all.filter(selects(p, new Set(['usage_type'])));
    const byFeatured = all.filter(selects(p, new Set(['featured'])));
    const byTakeover = all.filter(selects(p, new Set(['takeover'])));
    const groups = new Map<string, number[]>();
    for (const l of selected) {
      if (l.price === null) continue;
      const group = JSON.stringify([l.currency, l.price_basis]);
      groups.set(group, [...(groups.get(group) ?? []), l.price]);
    }
    const price = [...groups].map(([group, prices]) => {
      const [currency, basis] = JSON.parse(group) as [string, string | null];
      return { currency, price_basis: basis, ...minMaxCount(prices) };
    }).sort((a, b) => (a.currency !== b.currency ? (a.currency < b.currency ? -1 : 1) : (a.price_basis ?? '\uffff') < (b.price_basis ?? '\uffff') ? -1 : 1));
    return {
      total: selected.length,
      usage_types: NAMES.map((name) => ({ name, count: byUsage.filter((l) => l.usage_types.includes(name)).length })),
      featured: { true: byFeatured.filter((l) => l.is_featured).length, false: byFeatured.filter((l) => !l.is_featured).length },
      takeover: { true: byTakeover.filter((l) => l.is_takeover).length, false: byTakeover.filter((l) => !l.is_takeover).length },
      price,
      size_sqft: minMaxCount(selected.flatMap((l) => (l.size_sqft === null ? [] : [l.size_sqft]))),
    };
  }

  function randomParams(rand: () => number): Params {
    const maybe = (chance: number) => rand() < chance;
    const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
    const p: Params = {};
    if (maybe(0.5)) {
      // Whole words, prefixes of them, other cases and accents, punctuation between.
      const word = () => {
        const w = pick([...TITLE_WORDS, 'Marina Bay', 'orch', 'telok', 'ayer', 'F&B', 'shared', 'ōte', 'OTE', 'caf', 'strasse', 'fi', 'full', 'm²', 'lodz']);
        return maybe(0.3) ? w.slice(0, 1 + Math.floor(rand() * w.length)) : maybe(0.2) ? w.toUpperCase() : w;
      };
      p.q = Array.from({ length: 1 + Math.floor(rand() * 3) }, word).join(pick([' ', ', ', '-', '  ']));
    }
    if (maybe(0.3)) p.usage_type = Array.from({ length: 1 + Math.floor(rand() * 2) }, () => pick(NAMES)).join(',');
    if (maybe(0.2)) p.min_price = pick(['1', '4.5', '9']);
    if (maybe(0.2)) p.max_size_sqft = pick(['500', '1000']);
    if (maybe(0.2)) p.featured = pick(['true', 'false']);
    if (maybe(0.2)) p.takeover = pick(['true', 'false']);
    const place = rand();
    if (place < 0.3) {
      const [lat, lng] = pick(CENTRES);
      p.near = `${lat},${lng}`;
      if (maybe(0.7)) p.radius_m = String(pick([1, 2500, 5000, 12000, 100000]));
      if (maybe(0.5)) p.sort = 'distance';
    } else if (place < 0.55) {
      const [lat, lng] = pick(CENTRES);
      const half = pick([0.02, 0.08, 0.2]);
      const wrap = (x: number) => ((x + 540) % 360) - 180;
      p.bbox = [wrap(lng - half), Math.max(-90, lat - half), wrap(lng + half), Math.min(90, lat + half)].map((x) => x.toFixed(4)).join(',');
    }
    return p;
  }

  it('oracle: 150 random queries (q, filters, near, bbox, sort=distance): the list, page by page, and the facets match a brute-force computation', async (t) => {
    await world(t);
    const rand = prng(262728);
    let matchedSome = 0;
    for (let round = 0; round < 150; round++) {
      const p = randomParams(rand);
      const query = queryOf(p);
      const got = (await readAll(query, 1 + Math.floor(rand() * 30))).map((l) => l.id);
      const want = reference(p);
      assert.deepEqual(got, want, `list ${query}`);
      if (want.length > 0 && want.length < all.length) matchedSome++;
      const { sort: _sort, ...filters } = p;
      const facets = await server.get(`/v1/listings/facets?${queryOf(filters).slice(1)}`, { key });
      assert.equal(facets.status, 200, facets.body);
      assert.deepEqual(facets.json, facetsReference(filters), `facets ${query}`);
    }
    assert.ok(matchedSome > 50, `the queries are not vacuous: ${matchedSome} of 150 selected some but not all`);
  });

  it('D26: case and accents do not matter (NFKD, marks removed, lower case); every word must start a word of title, building, street or usage', async (t) => {
    await world(t);
    const ids = async (q: string) => (await readAll(`&q=${encodeURIComponent(q)}`)).map((l) => l.id).sort();
    const cafe = await ids('cafe');
    assert.ok(cafe.length > 0);
    assert.deepEqual(await ids('CAFÉ'), cafe);
    assert.deepEqual(await ids('Cafe\u0301'), cafe, 'a combining accent is the same as a precomposed one');
    assert.deepEqual(await ids('ＣＡＦＥ'), cafe, 'full-width letters fold (NFKD)');
    // Prefixes: `off mar` matches "Office at Marina Bay" (here: Office ... Marina); `ffice` starts no word.
    const offMar = await ids('off mar');
    assert.deepEqual(offMar, all.filter(selects({ q: 'off mar' })).map((l) => l.id).sort());
    assert.ok(offMar.length > 0);
    assert.deepEqual(await ids('ffice'), []);
    // Punctuation splits words in the text and in the query alike: "18 Telok-Ayer Street" has `ayer`.
    assert.deepEqual(await ids('telok-ayer'), await ids('ayer telok'));
    // Usage types are searched: "Shared Office" listings match `shared`.
    const shared = await readAll('&q=shared');
    assert.ok(shared.length > 0 && shared.every((l) => l.usage_types.includes('Shared Office') || [l.title, l.building_name, l.street_address].some((t) => t !== null && wordsOf(t).some((w) => w.startsWith('shared')))));
    // The D9 order stays: the searched list is the unfiltered list's subsequence.
    const order = all.map((l) => l.id).filter((id) => cafe.includes(id));
    assert.deepEqual((await readAll('&q=cafe')).map((l) => l.id), order);
  });

  it('D26: q of 1 to 200 characters after trimming spaces, with a word; else 400 naming q', async (t) => {
    await world(t);
    const call = (q: string) => server.get(`/v1/listings?q=${encodeURIComponent(q)}`, { key });
    for (const bad of ['', '   ', '!!', '-- ,', 'a'.repeat(201), ` ${'b'.repeat(201)} `]) {
      const res = await call(bad);
      assertError(res, 400, 'bad_request', JSON.stringify(bad));
      assert.match(res.json.message, /"q"/);
    }
    assert.equal((await call(`  ${'c'.repeat(200)}  `)).status, 200, '200 characters once trimmed');
    assert.equal((await call('é'.normalize('NFD').repeat(100))).status, 200, '200 code points');
    const twice = await server.get('/v1/listings?q=cafe&q=bay', { key });
    assertError(twice, 400, 'bad_request');
    assert.match(twice.json.message, /"q" was given 2 times/);
    const facets = await server.get('/v1/listings/facets?q=%20', { key });
    assertError(facets, 400, 'bad_request');
    assert.match(facets.json.message, /"q"/);
  });

  it('D28: location in the object; near with radius_m (default 5000, 1..100000, inclusive) and bbox; 400s naming the parameter', async (t) => {
    await world(t);
    assert.ok(all.some((l) => l.location === null) && all.some((l) => l.location !== null));
    const expectations: Array<[string, string]> = [
      ['near=1.29', 'near'], ['near=91,0', 'near'], ['near=0,180.5', 'near'], ['near=1e1,2', 'near'], ['near=.5,2', 'near'], ['near=1.,2', 'near'], ['near=1,%202', 'near'],
      ['near=1,2&radius_m=0', 'radius_m'], ['near=1,2&radius_m=100001', 'radius_m'], ['near=1,2&radius_m=5.5', 'radius_m'], ['radius_m=500', 'radius_m'],
      ['bbox=1,2,3', 'bbox'], ['bbox=0,10,1,5', 'bbox'], ['bbox=-181,0,1,1', 'bbox'], ['bbox=0,-91,1,1', 'bbox'],
      ['near=1,2&bbox=0,0,1,1', 'near'], ['sort=distance', 'sort'], ['bbox=0,0,1,1&sort=distance', 'sort'],
    ];
    for (const [query, name] of expectations) {
      for (const path of ['/v1/listings', '/v1/listings/facets']) {
        if (path.endsWith('facets') && name === 'sort') continue;
        const res = await server.get(`${path}?${query}`, { key });
        assertError(res, 400, 'bad_request', `${path}?${query}`);
        assert.match(res.json.message, new RegExp(`"${name}"`), `${path}?${query}: ${res.json.message}`);
      }
    }
    // Signs and the D23 number form: `-` and `+` allowed, the default radius is 5000 m.
    const [lat, lng] = CENTRES[2]!;
    const byDefault = await readAll(`&near=${lat},${lng}`);
    assert.deepEqual(byDefault.map((l) => l.id), reference({ near: `${lat},${lng}`, radius_m: '5000' }));
    assert.ok(byDefault.length > 0);
    assert.deepEqual((await readAll('&near=%2B1.290,%2B103.8500&radius_m=5000')).map((l) => l.id), reference({ near: '1.29,103.85' }));
    // Inclusive: a radius of exactly a listing's distance includes it.
    const somewhere = all.find((l) => l.location !== null)!;
    const centre = `${somewhere.location!.lat},${somewhere.location!.lng}`;
    const itself = await readAll(`&near=${centre}&radius_m=1&sort=distance`);
    assert.equal(itself[0]?.id, somewhere.id, 'a listing at the point is at distance 0, nearest first');
    const box = `${somewhere.location!.lng},${somewhere.location!.lat},${somewhere.location!.lng},${somewhere.location!.lat}`;
    assert.ok((await readAll(`&bbox=${box}`)).some((l) => l.id === somewhere.id), 'a box of zero size includes a listing on its edge');
  });

  it('D28: a box across the antimeridian (min_lng above max_lng) takes both sides; listings without a location never match', async (t) => {
    await world(t);
    const across = await readAll('&bbox=179.5,-17,-179.5,-16');
    const west = across.filter((l) => l.location!.lng > 0);
    const east = across.filter((l) => l.location!.lng < 0);
    assert.ok(west.length > 0 && east.length > 0, 'both sides of the line');
    assert.deepEqual(across.map((l) => l.id), reference({ bbox: '179.5,-17,-179.5,-16' }));
    const everywhere = await readAll('&bbox=-180,-90,180,90');
    assert.equal(everywhere.length, all.filter((l) => l.location !== null).length, 'the whole world: every listing with a location, none without');
    const far = await readAll('&near=0,0&radius_m=100000');
    assert.ok(far.every((l) => l.location !== null));
    // Near the antimeridian, distance wraps: a point at 179.99 is near one at -179.99.
    const wrapped = await readAll('&near=-16.55,180&radius_m=20000&sort=distance');
    assert.ok(wrapped.some((l) => l.location!.lng < 0) && wrapped.some((l) => l.location!.lng > 0));
  });

  it('D27: disjunctive counts: a usage type filter leaves every type\'s count as it was, featured and takeover likewise', async (t) => {
    await world(t);
    const none = await server.get('/v1/listings/facets', { key });
    assert.equal(none.status, 200);
    assert.equal(none.json.total, all.length);
    assert.deepEqual(none.json.usage_types.map((u: { name: string }) => u.name), NAMES, 'every taxonomy name, in taxonomy order');
    const office = await server.get('/v1/listings/facets?usage_type=Office', { key });
    assert.deepEqual(office.json.usage_types, none.json.usage_types, 'the usage counts ignore the usage_type filter');
    assert.equal(office.json.total, all.filter((l) => l.usage_types.includes('Office')).length);
    const featured = await server.get('/v1/listings/facets?featured=true', { key });
    assert.deepEqual(featured.json.featured, none.json.featured);
    assert.equal(featured.json.total, none.json.featured.true);
    const takeover = await server.get('/v1/listings/facets?takeover=false&featured=true', { key });
    assert.deepEqual(takeover.json.takeover, featured.json.takeover, 'the takeover counts ignore only the takeover filter');
    // The facets' total is the list's total for the same filters; page, per_page and sort are ignored.
    const list = await server.get('/v1/listings?usage_type=Office&q=office', { key });
    const counted = await server.get('/v1/listings/facets?usage_type=Office&q=office&page=9&per_page=0&sort=nope', { key });
    assert.equal(counted.status, 200, counted.body);
    assert.equal(counted.json.total, list.json.total);
    // Nothing selected: zero counts, no price groups, null size range.
    const nothing = await server.get('/v1/listings/facets?q=zzzzzz', { key });
    const empty = { total: nothing.json.total, price: nothing.json.price, size: nothing.json.size_sqft };
    assert.deepEqual(empty, { total: 0, price: [], size: { min: null, max: null, count: 0 } });
  });

  it('D27 with D21: facets have a strong ETag and a free 304, and one request counts against the limit', async (t) => {
    await world(t);
    const first = await server.get('/v1/listings/facets?usage_type=Retail', { key });
    const etag = header(first, 'etag');
    assert.match(etag ?? '', /^"[^"]+"$/);
    const remaining = Number(header(first, 'x-ratelimit-remaining'));
    const again = await server.get('/v1/listings/facets?usage_type=Retail', { key, headers: { 'if-none-match': etag! } });
    assert.equal(again.status, 304);
    assert.equal(Number(header(again, 'x-ratelimit-remaining')), remaining, 'a 304 is free');
    const next = await server.get('/v1/listings/facets?usage_type=Retail', { key });
    assert.equal(Number(header(next, 'x-ratelimit-remaining')), remaining - 1, 'a 200 counts one');
    assert.equal(header(next, 'etag'), etag, 'the same counts, the same ETag');
  });

  it('D28: location travels in the change feed like any other field', async (t) => {
    await world(t);
    const feed = await server.get('/v1/listings/changes?limit=500', { key });
    assert.equal(feed.status, 200);
    const located = all.find((l) => l.location !== null)!;
    const event = feed.json.items.find((e: { id: string }) => e.id === located.id);
    assert.deepEqual(event.listing.location, located.location);
  });
});
