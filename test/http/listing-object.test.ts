import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.js';

const FIELDS = [
  'id', 'building_id', 'org_id', 'title', 'size_sqft', 'usage_types', 'price', 'currency', 'is_takeover',
  'is_featured', 'status', 'expiry_date', 'available_from', 'min_lease_tenure', 'view_count', 'inquiry_count',
  'building_name', 'street_address', 'images', 'cover_image_index', 'url', 'created_at',
];

describe('listing object (spec 2.1, D12, D13)', () => {
  let server: TestServer;
  let key: string;
  let orgId: string;
  const sparseId = '22222222-2222-4222-8222-222222222222';

  before(async () => {
    server = await startTestServer();
    orgId = await server.createAccount('organisation');
    key = (await server.createKey(orgId)).key;
    await server.addListings(orgId, [
      { id: sparseId, title: null, size_sqft: null, price: null, building_name: null, street_address: null },
    ]);
  });
  after(() => server.close());

  it('list and detail carry all 22 fields, in the same shape, null where unset', async () => {
    const list = await server.get('/v1/listings', { key });
    assert.equal(list.status, 200);
    const item = list.json.items[0];
    assert.deepEqual(Object.keys(item).sort(), [...FIELDS].sort());
    const detail = await server.get(`/v1/listings/${sparseId}`, { key });
    assert.equal(detail.status, 200);
    assert.deepEqual(detail.json, item);
    assert.equal(item.title, null);
    assert.equal(item.min_lease_tenure, null);
    assert.deepEqual(item.images, []);
    assert.equal(item.org_id, orgId);
    assert.equal(item.status, 'active');
    assert.match(item.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });
});
