import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ImportError, parseImportLine, parseIsoDate } from '../../src/import/import.js';
import { USAGE_TAXONOMY, usageTypesProblem } from '../../src/listings/taxonomy.js';

const NOW = '2026-11-22T10:00:00.000Z';
const OWNER = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

/** The smallest valid line: exactly the required fields. */
function minimal(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b',
    owner_account_id: OWNER,
    country: 'sg',
    building_id: '11111111-1111-4111-8111-111111111111',
    usage_types: ['Office'],
    currency: 'SGD',
    status: 'active',
    url: 'https://www.example.com/listings/1',
    ...overrides,
  };
}

function parse(obj: Record<string, unknown>, line = 1) {
  return parseImportLine(JSON.stringify(obj), line);
}

/** Asserts the line is refused, naming the line and the field, and the message matches. */
function refused(text: string, line: number, field: string | undefined, words?: RegExp): void {
  assert.throws(() => parseImportLine(text, line), (error: unknown) => {
    assert.ok(error instanceof ImportError, `${text}: expected an ImportError, got ${String(error)}`);
    assert.equal(error.line, line, text);
    assert.equal(error.field, field, `${text}: ${error.message}`);
    assert.ok(error.message.startsWith(`line ${line}`), error.message);
    if (field !== undefined) assert.ok(error.message.includes(`field "${field}"`), error.message);
    if (words) assert.match(error.message, words, text);
    assert.ok(!error.message.includes('\n'), 'one line');
    return true;
  }, text);
}

const refusedField = (overrides: Record<string, unknown>, field: string, words?: RegExp, line = 7) =>
  refused(JSON.stringify(minimal(overrides)), line, field, words);

describe('price_basis (D25)', () => {
  it('is optional: left out or null gives null; each basis is kept as given', () => {
    assert.equal(parse(minimal()).row.price_basis, null);
    assert.equal(parse(minimal({ price_basis: null })).row.price_basis, null);
    assert.equal(parse(minimal({ price_basis: 'per_sqft_per_month' })).row.price_basis, 'per_sqft_per_month');
    assert.equal(parse(minimal({ price_basis: 'per_month', price: 30000 })).row.price_basis, 'per_month');
  });

  it('anything else is refused, naming the field and the bases', () => {
    for (const bad of ['psf', 'Per_Month', '', 'per_sqft_per_month ', 12, true, ['per_month'], {}]) {
      refusedField({ price_basis: bad }, 'price_basis', /"per_sqft_per_month", "per_month" or null/);
    }
  });
});

describe('parseIsoDate (D13)', () => {
  it('accepts UTC date-times with Z and stores them with milliseconds', () => {
    assert.equal(parseIsoDate('2026-10-01T08:30:00Z'), '2026-10-01T08:30:00.000Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00.000Z'), '2026-10-01T08:30:00.000Z');
    assert.equal(parseIsoDate('2026-10-01T08:30Z'), '2026-10-01T08:30:00.000Z');
    assert.equal(parseIsoDate('2026-12-31T23:59:59Z'), '2026-12-31T23:59:59.000Z');
  });

  it('converts offsets to UTC, across day and year boundaries', () => {
    assert.equal(parseIsoDate('2026-10-01T08:30:00+08:00'), '2026-10-01T00:30:00.000Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00-05:00'), '2026-10-01T13:30:00.000Z');
    assert.equal(parseIsoDate('2026-01-01T00:30:00+01:00'), '2025-12-31T23:30:00.000Z');
    assert.equal(parseIsoDate('2026-12-31T23:30:00-01:00'), '2027-01-01T00:30:00.000Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00+00:00'), '2026-10-01T08:30:00.000Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00+05:30'), '2026-10-01T03:00:00.000Z');
  });

  it('takes a bare date as midnight UTC', () => {
    assert.equal(parseIsoDate('2026-10-01'), '2026-10-01T00:00:00.000Z');
  });

  it('keeps milliseconds of fractions and drops finer digits (no rounding up into the next second)', () => {
    assert.equal(parseIsoDate('2026-10-01T08:30:00.5Z'), '2026-10-01T08:30:00.500Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00.12Z'), '2026-10-01T08:30:00.120Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00.1234Z'), '2026-10-01T08:30:00.123Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:59.999999999Z'), '2026-10-01T08:30:59.999Z');
    assert.equal(parseIsoDate('2026-10-01T08:30:00.5+08:00'), '2026-10-01T00:30:00.500Z');
  });

  it('knows leap years', () => {
    assert.equal(parseIsoDate('2028-02-29'), '2028-02-29T00:00:00.000Z');
    assert.equal(parseIsoDate('2000-02-29T12:00:00Z'), '2000-02-29T12:00:00.000Z');
    assert.equal(parseIsoDate('2026-02-29'), undefined);
    assert.equal(parseIsoDate('1900-02-29'), undefined);
    assert.equal(parseIsoDate('2100-02-29T00:00:00Z'), undefined);
    // Years 0 to 99 are years 0 to 99 (Date.UTC would read them as 1900 to 1999), in either form.
    for (const value of ['0000-02-29', '0000-02-29T00:00:00Z', '0000-02-29T00:00:00.000Z', '0004-02-29T12:00:00Z']) {
      assert.equal(parseIsoDate(value)?.slice(0, 10), value.slice(0, 10), value);
    }
    for (const value of ['0100-02-29', '0100-02-29T00:00:00Z', '0100-02-29T00:00:00.000Z', '0001-02-29']) {
      assert.equal(parseIsoDate(value), undefined, value);
    }
  });

  it('refuses impossible dates and times instead of rolling them over', () => {
    for (const value of [
      '2026-02-30', '2026-02-30T00:00:00Z', '2026-04-31', '2026-06-31T10:00:00Z', '2026-13-01', '2026-00-10', '2026-01-00',
      '2026-01-32', '2026-01-01T24:00:00Z', '2026-01-01T23:60:00Z', '2026-01-01T23:59:60Z', '2026-01-01T10:00:00+24:00',
      '2026-01-01T10:00:00+99:99',
    ]) {
      assert.equal(parseIsoDate(value), undefined, value);
    }
  });

  it('takes a date in its stored form as it is, and still refuses an impossible one in that form', () => {
    for (const value of ['2026-10-01T08:30:00.000Z', '2028-02-29T23:59:59.999Z', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
      assert.equal(parseIsoDate(value), value);
    }
    for (const value of ['2026-02-29T00:00:00.000Z', '2026-04-31T00:00:00.000Z', '2026-01-01T24:00:00.000Z', '2026-01-01T23:60:00.000Z', '2026-01-01T23:59:60.000Z', '2026-13-01T00:00:00.000Z', '2026-00-01T00:00:00.000Z']) {
      assert.equal(parseIsoDate(value), undefined, value);
    }
  });

  it('refuses garbage and other formats', () => {
    for (const value of [
      '', ' ', 'tomorrow', 'now', '2026', '2026-10', '2026/10/01', '01/10/2026', '20261001', '2026-1-1', '2026-10-1',
      '2026-10-01T08:30:00', '2026-10-01T08', '2026-10-01 08:30:00Z', '2026-10-01T08:30:00z', '2026-10-01T08:30:00+0800',
      '2026-10-01T08:30:00+08', ' 2026-10-01', '2026-10-01 ', '+02026-10-01', '2026-10-01T08:30:00.Z', '2026-10-01T08:30:00.1234567890Z',
      'Thu, 01 Oct 2026 08:30:00 GMT', '1790000000000', '2026-10-01T08:30:00ZZ', '２０２６-10-01',
    ]) {
      assert.equal(parseIsoDate(value), undefined, JSON.stringify(value));
    }
  });
});

describe('taxonomy (spec 2.2)', () => {
  it('is exactly the table of the specification', () => {
    assert.deepEqual(USAGE_TAXONOMY, {
      Office: ['Shared Office'],
      'F&B': ['Pub', 'Cafe', 'Restaurant', 'Cloud Kitchen'],
      Industrial: ['Food Factory', 'Warehouse'],
      Retail: ['Kiosk', 'Shop', 'Anchor'],
      Clinic: [],
    });
  });

  it('accepts every main type alone and with each of its sub-types', () => {
    for (const [main, subs] of Object.entries(USAGE_TAXONOMY)) {
      assert.equal(usageTypesProblem([main]), undefined, main);
      for (const sub of subs) assert.equal(usageTypesProblem([main, sub]), undefined, `${main} / ${sub}`);
    }
  });

  it('refuses empty lists, unknown or mis-cased types, a sub-type of another main type, extras and prototype names', () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /must hold the main type/],
      [['Shop'], /"Shop" is not a main usage type/],
      [['office'], /"office" is not a main usage type/],
      [['Office '], /is not a main usage type/],
      [['Warehouse', 'Industrial'], /not a main usage type/],
      [['Retail', 'Cafe'], /"Cafe" is not a sub-type of "Retail"/],
      [['F&B', 'Shop'], /"Shop" is not a sub-type of "F&B"/],
      [['Office', 'Office'], /not a sub-type/],
      [['Clinic', 'Pub'], /"Clinic" has no sub-types/],
      [['Office', 'Shared Office', 'Retail'], /at most two entries/],
      [['Retail', 'Shop', 'Shop'], /at most two entries/],
      [['constructor'], /not a main usage type/],
      [['toString'], /not a main usage type/],
      [['__proto__'], /not a main usage type/],
      [['hasOwnProperty'], /not a main usage type/],
    ];
    for (const [value, words] of cases) {
      const problem = usageTypesProblem(value);
      assert.ok(problem !== undefined, JSON.stringify(value));
      assert.match(problem, words, JSON.stringify(value));
    }
  });
});

describe('parseImportLine (OPERATIONS "Import format")', () => {
  it('fills the documented defaults for a line with only the required fields', () => {
    const { line, row, orgId } = parse(minimal(), 3);
    assert.equal(line, 3);
    assert.equal(orgId, undefined, 'org_id is derived from the owner later (D1)');
    assert.deepEqual(row, {
      id: '3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b',
      line: 3,
      owner_account_id: OWNER,
      country: 'sg',
      org_id: null,
      building_id: '11111111-1111-4111-8111-111111111111',
      title: null,
      size_sqft: null,
      usage_types: '["Office"]',
      price: null,
      price_basis: null,
      currency: 'SGD',
      is_takeover: 0,
      is_featured: 0,
      status: 'active',
      expiry_date: null,
      available_from: null,
      min_lease_tenure: null,
      view_count: 0,
      inquiry_count: 0,
      building_name: null,
      street_address: null,
      location: null,
      images: '[]',
      cover_image_index: 0,
      url: 'https://www.example.com/listings/1',
      // Not given: an update keeps the stored one, an insert takes the import time (test/storage).
      created_at: null,
      // D26: the words of the searched fields, folded (here the usage type alone).
      search_words: 'office',
    });
  });

  it('treats null like omitted for the nullable fields', () => {
    const { row } = parse(minimal({
      title: null, size_sqft: null, price: null, expiry_date: null, available_from: null, min_lease_tenure: null,
      building_name: null, street_address: null, images: null, created_at: null,
    }));
    assert.equal(row.title, null);
    assert.equal(row.images, '[]');
    assert.equal(row.created_at, null);
  });

  it('keeps every given field, normalising ids to lowercase and dates to UTC with milliseconds', () => {
    const { row, orgId } = parse(minimal({
      id: '3F1E2D4C-5B6A-4798-8A9B-0C1D2E3F4A5B',
      owner_account_id: OWNER.toUpperCase(),
      org_id: OWNER.toUpperCase(),
      country: 'my',
      title: 'Corner shop',
      size_sqft: 1234.5,
      usage_types: ['Retail', 'Shop'],
      price: 7.25,
      currency: 'MYR',
      is_takeover: true,
      is_featured: true,
      status: 'leased',
      expiry_date: '2027-01-01T00:00:00+08:00',
      available_from: '2026-12-01',
      min_lease_tenure: '12 months',
      view_count: 42,
      inquiry_count: 3,
      building_name: 'Menara',
      street_address: '1 Jalan',
      images: ['https://img.example.com/1.jpg', 'https://img.example.com/2.jpg'],
      cover_image_index: 1,
      url: 'http://www.example.com/listings/2',
      created_at: '2026-05-05T05:05:05.5Z',
    }), 9);
    assert.equal(orgId, OWNER);
    assert.equal(row.id, '3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b');
    assert.equal(row.owner_account_id, OWNER);
    assert.equal(row.country, 'my');
    assert.equal(row.title, 'Corner shop');
    assert.equal(row.size_sqft, 1234.5);
    assert.equal(row.usage_types, '["Retail","Shop"]');
    assert.equal(row.price, 7.25);
    assert.equal(row.currency, 'MYR');
    assert.equal(row.is_takeover, 1);
    assert.equal(row.is_featured, 1);
    assert.equal(row.status, 'leased');
    assert.equal(row.expiry_date, '2026-12-31T16:00:00.000Z');
    assert.equal(row.available_from, '2026-12-01T00:00:00.000Z');
    assert.equal(row.min_lease_tenure, '12 months');
    assert.equal(row.view_count, 42);
    assert.equal(row.inquiry_count, 3);
    assert.equal(row.building_name, 'Menara');
    assert.equal(row.street_address, '1 Jalan');
    assert.equal(row.images, '["https://img.example.com/1.jpg","https://img.example.com/2.jpg"]');
    assert.equal(row.cover_image_index, 1);
    assert.equal(row.url, 'http://www.example.com/listings/2');
    assert.equal(row.created_at, '2026-05-05T05:05:05.500Z');
    assert.equal(parse(minimal({ org_id: null })).orgId, null);
  });

  it('accepts every country code, and "1 month" / "36 months" tenures', () => {
    for (const country of ['sg', 'my', 'uk', 'in', 'us', 'ca', 'au', 'nz']) assert.equal(parse(minimal({ country })).row.country, country);
    assert.equal(parse(minimal({ min_lease_tenure: '1 month' })).row.min_lease_tenure, '1 month');
    assert.equal(parse(minimal({ min_lease_tenure: '36 months' })).row.min_lease_tenure, '36 months');
    assert.equal(parse(minimal({ cover_image_index: 0, images: [] })).row.cover_image_index, 0);
    assert.equal(parse(minimal({ view_count: 2 ** 31 - 1 })).row.view_count, 2 ** 31 - 1);
    assert.equal(parse(minimal({ size_sqft: 0, price: 0 })).row.price, 0);
  });

  it('refuses a line that is not JSON, or not an object, naming the line', () => {
    for (const text of ['{', '{"id": }', 'not json', "{'id': 'x'}", '{"a":1}{"b":2}', '{"id":"x",}']) refused(text, 12, undefined, /not valid JSON/);
    for (const text of ['[]', '[{"id":"x"}]', '"text"', '42', 'null', 'true']) refused(text, 4, undefined, /expected a JSON object/);
  });

  it('refuses an unknown field, naming it', () => {
    refusedField({ colour: 'red' }, 'colour', /is not a field of a listing/);
    refusedField({ Title: 'x' }, 'Title');
    refusedField({ updated_at: NOW }, 'updated_at');
    refusedField({ __proto__x: 1 }, '__proto__x');
  });

  it('refuses a missing or null required field, naming it', () => {
    for (const field of ['id', 'owner_account_id', 'country', 'building_id', 'usage_types', 'currency', 'status', 'url']) {
      const line = minimal();
      delete line[field];
      refused(JSON.stringify(line), 5, field, /is required/);
      refused(JSON.stringify({ ...line, [field]: null }), 6, field, /is required/);
    }
  });

  it('refuses a wrong type or form in every typed field, naming the field', () => {
    const cases: Array<[string, unknown[]]> = [
      ['id', [123, 'not-a-uuid', '3f1e2d4c5b6a47988a9b0c1d2e3f4a5b', '{3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b}', true]],
      ['owner_account_id', [1, 'x', ['a']]],
      ['building_id', [1, '', 'building-1']],
      ['org_id', [123, 'acme', true]],
      ['country', ['SG', 'xx', 'sgp', 5, true, ['sg']]],
      ['title', [5, true, ['x'], { a: 1 }]],
      ['size_sqft', ['1000', -1, true, [1000]]],
      ['usage_types', ['Office', [1], [['Office']], { 0: 'Office' }, 5]],
      ['price', ['5.50', -0.01, false]],
      ['currency', ['sgd', 'SG', 'SGDX', 5, '$']],
      ['is_takeover', ['true', 1, 0, 'yes', null]],
      ['is_featured', ['false', 1, null]],
      ['status', [5, 'Active', 'ACTIVE', '', ' active', 'on hold', true]],
      ['expiry_date', [12345, 'soon', '2026-02-30', true]],
      ['available_from', ['next week', 20261001, '2026-13-01']],
      ['min_lease_tenure', ['a year', 12, '12', '12 weeks', 'twelve months', '12 months minimum']],
      ['view_count', [1.5, -1, '3', true, null, 2 ** 31]],
      ['inquiry_count', [0.5, -2, '0', null]],
      ['building_name', [1, false, {}]],
      ['street_address', [{}, 2, []]],
      ['images', ['https://img.example.com/1.jpg', [1], [null], { 0: 'x' }, true]],
      ['cover_image_index', [-1, 1.5, '0', null, true]],
      ['url', ['not a url', 5, 'ftp://example.com/x', '/listings/1', 'www.example.com', 'javascript:alert(1)', '']],
      ['created_at', ['yesterday', 1790000000, '2026-02-30T00:00:00Z']],
    ];
    for (const [field, values] of cases) {
      for (const value of values) refusedField({ [field]: value }, field);
    }
  });

  it('names the field and the problem in the message', () => {
    refusedField({ size_sqft: 'big' }, 'size_sqft', /line 7, field "size_sqft": expected a non-negative number or null, got "big"/);
    refusedField({ expiry_date: '2026-02-30' }, 'expiry_date', /ISO 8601.*got "2026-02-30"/);
    refusedField({ country: 'xx' }, 'country', /expected one of sg, my, uk, in, us, ca, au, nz, got "xx"/);
    refusedField({ title: 'x'.repeat(500), size_sqft: 'y'.repeat(500) }, 'size_sqft', /\.\.\./);
  });

  it('refuses usage_types outside the taxonomy, a sub-type of the wrong main type, and too many entries', () => {
    refusedField({ usage_types: [] }, 'usage_types', /main type/);
    refusedField({ usage_types: ['Warehouse'] }, 'usage_types', /not a main usage type/);
    refusedField({ usage_types: ['Retail', 'Cafe'] }, 'usage_types', /"Cafe" is not a sub-type of "Retail"/);
    refusedField({ usage_types: ['Industrial', 'Shop'] }, 'usage_types', /not a sub-type of "Industrial"/);
    refusedField({ usage_types: ['Clinic', 'Kiosk'] }, 'usage_types', /has no sub-types/);
    refusedField({ usage_types: ['Office', 'Shared Office', 'Cafe'] }, 'usage_types', /at most two/);
  });

  it('refuses images that are not absolute https URLs, naming the entry', () => {
    refusedField({ images: ['http://img.example.com/1.jpg'] }, 'images', /entry 0 is not an absolute https URL/);
    refusedField({ images: ['https://img.example.com/1.jpg', '/2.jpg'] }, 'images', /entry 1/);
    refusedField({ images: ['https://'] }, 'images');
    refusedField({ images: ['ftp://img.example.com/1.jpg'] }, 'images');
    refusedField({ images: ['//img.example.com/1.jpg'] }, 'images');
    refusedField({ images: [''] }, 'images');
    // Plain http only on a loopback host, which browsers treat as secure (the demo's own photos).
    for (const host of ['localhost.example.com', '128.0.0.1', '10.0.0.1', 'mylocalhost', '[::2]']) {
      refusedField({ images: [`http://${host}/1.jpg`] }, 'images', /entry 0 is not an absolute https URL/);
    }
  });

  it('takes plain http image URLs on a loopback host (a local server, the demo)', () => {
    const hosts = ['localhost:3000', 'api.localhost:3000', '127.0.0.1', '127.1.2.3:8080', '[::1]:3000'];
    const images = hosts.map((host) => `http://${host}/demo/images/cafe-1.svg`);
    assert.equal(parse(minimal({ images })).row.images, JSON.stringify(images));
  });

  it('refuses cover_image_index outside images', () => {
    refusedField({ images: [], cover_image_index: 1 }, 'cover_image_index', /must be 0 when there are no images/);
    refusedField({ cover_image_index: 1 }, 'cover_image_index', /must be 0 when there are no images/);
    refusedField({ images: ['https://img.example.com/1.jpg'], cover_image_index: 1 }, 'cover_image_index', /0 to 0/);
    refusedField({ images: ['https://a.example.com/1.jpg', 'https://a.example.com/2.jpg'], cover_image_index: 2 }, 'cover_image_index', /0 to 1/);
    assert.equal(parse(minimal({ images: ['https://a.example.com/1.jpg', 'https://a.example.com/2.jpg'], cover_image_index: 1 })).row.cover_image_index, 1);
  });

  it('reports the line number it is given', () => {
    for (const line of [1, 2, 99, 100_000]) refused(JSON.stringify(minimal({ country: 'zz' })), line, 'country');
  });
});
