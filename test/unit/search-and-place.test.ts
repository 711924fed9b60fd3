import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseImportLine, ImportError } from '../../src/import/import.js';
import { listFacets } from '../../src/http/v1/endpoints/list-facets.js';
import { compileQueryValidator } from '../../src/http/v1/query.js';
import { listingSearchWords, searchWords } from '../../src/listings/search-words.js';
import { TenantSearch } from '../../src/readmodel/tenant-search.js';
import { distanceM, EARTH_RADIUS_M } from '../../src/readmodel/views.js';
import { prng } from '../support/random.js';

/** Unit tests of the subtle parts of D26-D28: folding, the import's location, the parameters' forms, distance, the word index. */

const line = (extra: Record<string, unknown>) => JSON.stringify({
  id: '3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71', owner_account_id: 'c2e4a6b8-1d3f-4a5c-8e7b-9f0a1b2c3d4e', country: 'sg',
  building_id: '9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35', usage_types: ['Office'], currency: 'SGD', status: 'active', url: 'https://www.example.com/l/1', ...extra,
});

describe('D26 words', () => {
  it('fold case, accents and compatibility forms, and split at anything but letters and digits', () => {
    assert.deepEqual(searchWords('Café, Marina-Bay'), ['cafe', 'marina', 'bay']);
    assert.deepEqual(searchWords('ＣＡＦＥ ﬁne Ōtemachi İstanbul'), ['cafe', 'fine', 'otemachi', 'istanbul']);
    assert.deepEqual(searchWords("shop's 120m² 中文 Łódź"), ['shop', 's', '120m2', '中文', 'łodz']);
    assert.deepEqual(searchWords(' -- !! '), []);
  });

  it('a listing\'s words: title, building, street and usage types, each once', () => {
    assert.equal(listingSearchWords({ title: 'Office, office', building_name: 'Marina Bay Link', street_address: null, usage_types: '["Office","Shared Office"]' }), 'office marina bay link shared');
    assert.equal(listingSearchWords({ title: null, building_name: null, street_address: null, usage_types: '["F&B","Cafe"]' }), 'f b cafe');
  });
});

describe('D28 location on an import line', () => {
  it('left out or null is null; a point is kept as its JSON', () => {
    assert.equal(parseImportLine(line({}), 1).row.location, null);
    assert.equal(parseImportLine(line({ location: null }), 1).row.location, null);
    assert.equal(parseImportLine(line({ location: { lat: -90, lng: 180 } }), 1).row.location, '{"lat":-90,"lng":180}');
    assert.equal(parseImportLine(line({ location: { lng: 103.8486, lat: 1.2812 } }), 1).row.location, '{"lat":1.2812,"lng":103.8486}');
  });

  it('out of range or malformed refuses the line, naming the field', () => {
    for (const bad of [{ lat: 90.1, lng: 0 }, { lat: 0, lng: -180.5 }, { lat: '1', lng: 2 }, { lat: 1 }, { lat: 1, lng: 2, alt: 3 }, [1, 2], '1,2', 0, { lat: null, lng: 1 }]) {
      assert.throws(() => parseImportLine(line({ location: bad }), 7), (error: unknown) =>
        error instanceof ImportError && error.message.startsWith('line 7, field "location": expected {"lat": -90 to 90, "lng": -180 to 180}'), JSON.stringify(bad));
    }
  });
});

describe('D26 and D28 parameters', () => {
  const validate = compileQueryValidator(listFacets.querystring!);
  const value = (query: Record<string, string>) => {
    const result = validate(query);
    if ('error' in result) throw result.error;
    return result.value;
  };
  it('q is trimmed, 1 to 200 code points, with a word', () => {
    assert.equal(value({ q: '  marina bay ' }).q, 'marina bay');
    assert.equal(value({ q: `${'😀'.repeat(199)}a` }).q, `${'😀'.repeat(199)}a`, '200 code points (399 UTF-16 units)');
    assert.throws(() => value({ q: 'a'.repeat(201) }), /"q" is 201 characters long/);
    assert.throws(() => value({ q: ' ' }), /"q" is empty/);
    assert.throws(() => value({ q: '?!' }), /"q" holds no word/);
  });

  it("near and bbox: signed decimals in range; a box's latitudes in order", () => {
    assert.deepEqual(value({ near: '-1.5,+103' }).near, { lat: -1.5, lng: 103 });
    assert.deepEqual(value({ bbox: '179,-1,-179,1' }).bbox, { minLng: 179, minLat: -1, maxLng: -179, maxLat: 1 });
    for (const bad of ['1', '1,2,3', '1.,2', '.1,2', '1e2,3', '1, 2', '--1,2', '90.0001,0', '0,-180.01', 'NaN,1']) assert.throws(() => value({ near: bad }), /"near"/, bad);
    for (const bad of ['0,0,1', '0,2,1,1', '-181,0,1,1', '0,0,1,91']) assert.throws(() => value({ bbox: bad }), /"bbox"/, bad);
    assert.throws(() => value({ radius_m: '100001' }), /"radius_m" is too large \(at most 100000\)/);
  });
});

describe('D28 distance', () => {
  it("a degree of latitude is a 360th of the sphere's circumference; across the antimeridian is short", () => {
    assert.ok(Math.abs(distanceM(0, 0, 1, 0) - (2 * Math.PI * EARTH_RADIUS_M) / 360) < 1e-6);
    assert.ok(Math.abs(distanceM(0, 179.9, 0, -179.9) - distanceM(0, 0, 0, 0.2)) < 1e-6);
    assert.equal(distanceM(89.9, 0, 89.9, 180) < 30_000, true, 'over the pole');
    assert.equal(distanceM(1.29, 103.85, 1.29, 103.85), 0);
  });
});

describe('TenantSearch (the per-tenant word index)', () => {
  it('prefixes match through the built dictionary and through words added since; every query word must match', () => {
    const search = new TenantSearch();
    const a = search.add(null, 'SGD', null, 'office marina bay');
    const b = search.add('{"lat":1,"lng":2}', 'SGD', 'per_month', 'cafe marine');
    search.finishBuild();
    const c = search.add(null, 'USD', null, 'marinade office');
    const marks = search.markWords(['mar', 'off']);
    assert.deepEqual([a, b, c].map((slot) => marks[slot]), [2, 1, 2]);
    assert.deepEqual([...search.markWords(['zzz'])], [0, 0, 0]);
    assert.deepEqual([...search.coords.subarray(0, 6)].map(String), ['NaN', 'NaN', '1', '2', 'NaN', 'NaN']);
    assert.notEqual(search.priceGroups[a], search.priceGroups[b]);
  });

  it('the packed dictionary finds every word a prefix starts, as startsWith over each listing would', () => {
    const rand = prng(4526);
    // Words that share prefixes, are prefixes of each other, and leave the one-byte range (the
    // dictionary is then a two-byte string; comparison is by UTF-16 unit, as `<` sorts).
    const alphabet = ['a', 'b', 'ab', 'abc', '9', '90', 'ß', '東', '東京', '😀', 'z'];
    const wordOf = () => Array.from({ length: 1 + Math.floor(rand() * 3) }, () => alphabet[Math.floor(rand() * alphabet.length)]!).join('');
    const listings = Array.from({ length: 300 }, () => [...new Set(Array.from({ length: Math.floor(rand() * 5) }, wordOf))]);
    const search = new TenantSearch();
    const slots = listings.map((words) => search.add(null, 'SGD', null, words.join(' ')));
    search.finishBuild();
    const prefixes = [...new Set([...alphabet, ...Array.from({ length: 200 }, wordOf), 'abcabcabcabc', '0', '\uffff'])];
    for (const prefix of prefixes) {
      const marks = search.markWords([prefix]);
      const expected = listings.map((words) => (words.some((word) => word.startsWith(prefix)) ? 1 : 0));
      assert.deepEqual(slots.map((slot) => marks[slot]), expected, `prefix ${prefix}`);
    }
    assert.deepEqual([...new TenantSearch().markWords(['a'])], [], 'an empty index');
  });

  it('slots far apart (gaps of one, two and three varint bytes) come back exact', () => {
    const search = new TenantSearch();
    const rare = new Set([0, 1, 127, 128, 300, 16_383, 16_384, 16_385, 40_000]);
    for (let i = 0; i <= 40_000; i++) search.add(null, 'SGD', null, rare.has(i) ? `common rare${i % 2}` : 'common');
    search.finishBuild();
    const marks = search.markWords(['rare']);
    assert.deepEqual([...marks.keys()].filter((slot) => marks[slot] === 1), [...rare]);
    assert.equal(search.markWords(['common']).every((mark) => mark === 1), true);
  });

  it('is worn once changes leave more retired slots than live ones', () => {
    const search = new TenantSearch();
    for (let i = 0; i < 2000; i++) search.add(null, 'SGD', null, `w${i}`);
    search.finishBuild();
    assert.equal(search.worn, false);
    const replace = (count: number) => {
      for (let i = 0; i < count; i++) {
        search.retire();
        search.add(null, 'SGD', null, `v${i}`);
      }
    };
    replace(2000);
    assert.equal(search.worn, false, 'as many retired as live');
    replace(1);
    assert.equal(search.worn, true);
  });
});
