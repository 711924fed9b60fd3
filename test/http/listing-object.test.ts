import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { header, readAll } from './helpers.js';

const FIELDS = [
  'id', 'building_id', 'org_id', 'title', 'size_sqft', 'usage_types', 'price', 'price_basis', 'currency', 'is_takeover',
  'is_featured', 'status', 'expiry_date', 'available_from', 'min_lease_tenure', 'view_count', 'inquiry_count',
  'building_name', 'street_address', 'location', 'images', 'cover_image_index', 'url', 'created_at',
];
/** D13: one form for every date, ISO 8601 UTC with milliseconds and Z. */
const DATE_FORM = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('listing object (spec 2.1, D12, D13)', () => {
  let server: TestServer;
  let key: string;
  let orgId: string;
  let individualId: string;
  let individualKey: string;
  const sparseId = '22222222-2222-4222-8222-222222222222';
  const fullId = '33333333-3333-4333-8333-333333333333';
  const coverId = '44444444-4444-4444-8444-444444444444';
  const datesId = '55555555-5555-4555-8555-555555555555';
  const landlordListingId = '66666666-6666-4666-8666-666666666666';
  /** Every row of the spec 2.2 taxonomy, main type alone and with each sub-type. */
  const usageCases: string[][] = [
    ['Office'], ['Office', 'Shared Office'],
    ['F&B'], ['F&B', 'Pub'], ['F&B', 'Cafe'], ['F&B', 'Restaurant'], ['F&B', 'Cloud Kitchen'],
    ['Industrial'], ['Industrial', 'Food Factory'], ['Industrial', 'Warehouse'],
    ['Retail'], ['Retail', 'Kiosk'], ['Retail', 'Shop'], ['Retail', 'Anchor'],
    ['Clinic'],
  ];
  const usageIds = usageCases.map((_, i) => `77777777-7777-4777-8777-${i.toString().padStart(12, '0')}`);
  const images = [
    'https://cdn.example.com/listings/a/1.jpg',
    'https://cdn.example.com/listings/a/2.jpg',
    'https://cdn.example.com/listings/a/3.jpg',
  ];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    // Rate limiting is tested in rate-limit.test.ts; here many requests share a key.
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000', DASHBOARD_PORT: 'off' });
    orgId = await server.createAccount('organisation');
    key = (await server.createKey(orgId)).key;
    individualId = await server.createAccount('individual');
    individualKey = (await server.createKey(individualId)).key;
    await server.addListings(orgId, [
      { id: sparseId, title: null, size_sqft: null, price: null, building_name: null, street_address: null },
      {
        id: fullId,
        title: 'Corner shop on Orchard Road',
        size_sqft: 1234.5,
        usage_types: ['Retail', 'Shop'],
        price: 8.75,
        price_basis: 'per_sqft_per_month',
        currency: 'SGD',
        is_takeover: true,
        is_featured: true,
        expiry_date: '2027-03-01T00:00:00Z',
        available_from: '2026-12-15T00:00:00Z',
        min_lease_tenure: '24 months',
        view_count: 321,
        inquiry_count: 7,
        building_name: 'Orchard Plaza',
        street_address: '1 Orchard Road',
        location: { lat: 1.3048, lng: -0.5 },
        images: ['https://cdn.example.com/listings/full/1.jpg'],
        url: 'https://www.example.com/listings/corner-shop',
        created_at: '2026-06-01T09:00:00Z',
      },
      { id: coverId, images, cover_image_index: 2 },
      {
        id: datesId,
        // Imported in three different ISO 8601 forms; the API shows one (D13).
        expiry_date: '2027-01-10T08:30:00+08:00',
        available_from: '2027-02-01',
        created_at: '2026-05-05T05:05:05.123456Z',
      },
      ...usageCases.map((usage_types, i) => ({ id: usageIds[i], usage_types })),
    ]);
    // An individual landlord's listing: org_id is null even though the line gives no org_id (D1).
    await server.addListings(individualId, [{ id: landlordListingId }]);
  }

  it('list and detail carry all 24 fields, in the same shape, null where unset', async (t) => {
    await world(t);
    const list = await server.get('/v1/listings', { key });
    assert.equal(list.status, 200);
    const item = list.json.items.find((l: { id: string }) => l.id === sparseId);
    assert.deepEqual(Object.keys(item).sort(), [...FIELDS].sort());
    const detail = await server.get(`/v1/listings/${sparseId}`, { key });
    assert.equal(detail.status, 200);
    assert.deepEqual(detail.json, item);
    assert.equal(item.title, null);
    assert.equal(item.size_sqft, null);
    assert.equal(item.price, null);
    // D25: an import line without a basis gives null.
    assert.equal(item.price_basis, null);
    assert.equal(item.building_name, null);
    assert.equal(item.street_address, null);
    // D28: an import line without a location gives null.
    assert.equal(item.location, null);
    assert.equal(item.min_lease_tenure, null);
    assert.equal(item.expiry_date, null);
    assert.equal(item.available_from, null);
    // Spec 2.1 rule 1: no photos is an empty array, not an omitted field.
    assert.deepEqual(item.images, []);
    assert.equal(item.cover_image_index, 0);
    assert.equal(item.org_id, orgId);
    assert.equal(item.status, 'active');
    assert.match(item.created_at, DATE_FORM);
  });

  it('every listing: the detail body equals its items[] element and has exactly the schema fields (D12)', async (t) => {
    await world(t);
    const { ids } = await readAll(server, key, 7);
    assert.equal(ids.length, 4 + usageCases.length);
    const list = await server.get('/v1/listings?per_page=100', { key });
    for (const item of list.json.items) {
      assert.deepEqual(Object.keys(item).sort(), [...FIELDS].sort(), item.id);
      const detail = await server.get(`/v1/listings/${item.id}`, { key });
      assert.equal(detail.status, 200);
      assert.match(header(detail, 'content-type') ?? '', /^application\/json\b/);
      // A bare listing, not an envelope (spec 4.3).
      assert.equal(detail.json.items, undefined);
      assert.deepEqual(detail.json, item);
    }
  });

  it('field types and values are as imported; money is numeric price plus ISO currency (spec 2.1 rule 5)', async (t) => {
    await world(t);
    const res = await server.get(`/v1/listings/${fullId}`, { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, {
      id: fullId,
      building_id: '11111111-1111-4111-8111-111111111111',
      org_id: orgId,
      title: 'Corner shop on Orchard Road',
      size_sqft: 1234.5,
      usage_types: ['Retail', 'Shop'],
      price: 8.75,
      price_basis: 'per_sqft_per_month',
      currency: 'SGD',
      is_takeover: true,
      is_featured: true,
      status: 'active',
      expiry_date: '2027-03-01T00:00:00.000Z',
      available_from: '2026-12-15T00:00:00.000Z',
      min_lease_tenure: '24 months',
      view_count: 321,
      inquiry_count: 7,
      building_name: 'Orchard Plaza',
      street_address: '1 Orchard Road',
      location: { lat: 1.3048, lng: -0.5 },
      images: ['https://cdn.example.com/listings/full/1.jpg'],
      cover_image_index: 0,
      url: 'https://www.example.com/listings/corner-shop',
      created_at: '2026-06-01T09:00:00.000Z',
    });
    // Defaults of an import line that gives none of them.
    const sparse = (await server.get(`/v1/listings/${sparseId}`, { key })).json;
    assert.equal(sparse.is_takeover, false);
    assert.equal(sparse.is_featured, false);
    assert.equal(sparse.view_count, 0);
    assert.equal(sparse.inquiry_count, 0);
    assert.ok(Number.isInteger(sparse.view_count) && Number.isInteger(sparse.inquiry_count));
    assert.match(res.json.id, UUID);
    assert.match(res.json.building_id, UUID);
  });

  it('usage_types: main type first, then the sub-type where set, for every row of the taxonomy (spec 2.2)', async (t) => {
    await world(t);
    for (const [i, expected] of usageCases.entries()) {
      const res = await server.get(`/v1/listings/${usageIds[i]}`, { key });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json.usage_types, expected);
    }
  });

  it('images keep their order as absolute https URLs; images[cover_image_index] is the cover (spec 2.1 rule 2, D13)', async (t) => {
    await world(t);
    const res = await server.get(`/v1/listings/${coverId}`, { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.images, images);
    assert.equal(res.json.cover_image_index, 2);
    assert.equal(res.json.images[res.json.cover_image_index], 'https://cdn.example.com/listings/a/3.jpg');
    const list = await server.get('/v1/listings?per_page=100', { key });
    for (const item of list.json.items) {
      assert.ok(Number.isInteger(item.cover_image_index));
      if (item.images.length > 0) {
        assert.ok(item.cover_image_index >= 0 && item.cover_image_index < item.images.length, item.id);
      }
      for (const url of item.images) assert.equal(new URL(url).protocol, 'https:', url);
    }
  });

  it('dates are ISO 8601 UTC in one form throughout, whatever form they were imported in (D13)', async (t) => {
    await world(t);
    const res = await server.get(`/v1/listings/${datesId}`, { key });
    assert.equal(res.status, 200);
    assert.equal(res.json.expiry_date, '2027-01-10T00:30:00.000Z');
    assert.equal(res.json.available_from, '2027-02-01T00:00:00.000Z');
    assert.equal(res.json.created_at, '2026-05-05T05:05:05.123Z');
    const list = await server.get('/v1/listings?per_page=100', { key });
    for (const item of list.json.items) {
      assert.match(item.created_at, DATE_FORM, item.id);
      for (const field of ['expiry_date', 'available_from']) {
        if (item[field] !== null) assert.match(item[field], DATE_FORM, `${item.id} ${field}`);
      }
    }
  });

  it('org_id is null for an individual landlord\'s listing and the organisation id otherwise (D1)', async (t) => {
    await world(t);
    const list = await server.get('/v1/listings', { key: individualKey });
    assert.equal(list.status, 200);
    assert.equal(list.json.total, 1);
    assert.equal(list.json.items[0].id, landlordListingId);
    assert.equal(list.json.items[0].org_id, null);
    const detail = await server.get(`/v1/listings/${landlordListingId}`, { key: individualKey });
    assert.equal(detail.status, 200);
    assert.ok('org_id' in detail.json);
    assert.equal(detail.json.org_id, null);
    const orgList = await server.get('/v1/listings?per_page=100', { key });
    for (const item of orgList.json.items) assert.equal(item.org_id, orgId);
  });
});
