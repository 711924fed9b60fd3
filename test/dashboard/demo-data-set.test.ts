import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { COUNTRY_CODES } from '../../src/core/countries.js';
import { DEMO_ORG_ID, ensureDemo } from '../../src/demo/demo-data.js';
import { demoImage } from '../../src/http/demo-images.js';
import { USAGE_TAXONOMY } from '../../src/listings/taxonomy.js';
import { HTMLElement } from 'node-html-parser';
import { dom } from '../support/html.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

interface Listing {
  id: string;
  usage_types: string[];
  price: number | null;
  price_basis: string | null;
  size_sqft: number | null;
  images: string[];
  is_featured: boolean;
  is_takeover: boolean;
}

/**
 * The demo data set (issue 33 item 6): something to build a page on, from `npm start` alone. Read
 * through the API with demo keys, as a developer would; photos served by this program.
 */
describe('demo data set: every usage type, country and state a page needs, photos that load offline', () => {
  let server: TestServer;
  let base: string;
  const everywhere: Listing[] = [];

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000' });
    base = `http://api.localhost:${server.port}`;
    everywhere.length = 0;
    await ensureDemo(server.service.store, new Date(server.clock.now()), base);
    for (const country of COUNTRY_CODES) {
      const key = (await server.createKey(DEMO_ORG_ID, country)).key;
      const host = country === 'sg' ? 'api.localhost' : `api.${country}.localhost`;
      const res = await server.get('/v1/listings?per_page=100', { key, host });
      assert.equal(res.status, 200, country);
      assert.ok(res.json.total >= 2, `${country}: ${res.json.total} listings`);
      everywhere.push(...res.json.items);
    }
  }

  it('about 60 visible listings, over every row of the taxonomy', async (t) => {
    await world(t);
    assert.ok(everywhere.length >= 55 && everywhere.length <= 70, `${everywhere.length}`);
    const rows = new Set(everywhere.map((l) => l.usage_types.join(' / ')));
    for (const [main, subs] of Object.entries(USAGE_TAXONOMY)) {
      for (const row of [main, ...subs.map((sub) => `${main} / ${sub}`)]) assert.ok(rows.has(row), `no demo listing of ${row}`);
    }
  });

  it('featured and takeover listings; with and without price, price basis (D25), size and photos', async (t) => {
    await world(t);
    const some = (what: string, test: (l: Listing) => boolean) => assert.ok(everywhere.some(test), `no demo listing ${what}`);
    some('featured', (l) => l.is_featured);
    some('not featured', (l) => !l.is_featured);
    some('that is a takeover', (l) => l.is_takeover);
    some('without a price', (l) => l.price === null && l.price_basis === null);
    some('priced per square foot per month', (l) => l.price !== null && l.price_basis === 'per_sqft_per_month');
    some('priced per month', (l) => l.price !== null && l.price_basis === 'per_month');
    some('priced without a basis', (l) => l.price !== null && l.price_basis === null);
    some('without a size', (l) => l.size_sqft === null);
    some('without photos', (l) => l.images.length === 0);
    some('with several photos', (l) => l.images.length > 1);
  });

  it('every photo is served by this program, with no key: an SVG image, cached', async (t) => {
    await world(t);
    const photos = new Set(everywhere.flatMap((l) => l.images));
    assert.ok(photos.size > 10);
    for (const url of photos) {
      assert.ok(url.startsWith(`${base}/demo/images/`), url);
      const res = await server.get(new URL(url).pathname, { host: 'api.localhost' });
      assert.equal(res.status, 200, url);
      assert.match(res.headers['content-type'] as string, /^image\/svg\+xml/);
      assert.match(res.headers['cache-control'] as string, /public/);
      const image = dom(res.body);
      const roots = image.childNodes.filter((node): node is HTMLElement => node instanceof HTMLElement);
      assert.deepEqual(roots.map((root) => [root.rawTagName, root.getAttribute('xmlns')]), [['svg', 'http://www.w3.org/2000/svg']], 'one svg element');
      const elements = image.querySelectorAll('*');
      assert.deepEqual(elements.filter((element) => element.rawTagName.toLowerCase() === 'script'), [], 'no script in a photo');
      assert.deepEqual(elements.flatMap((element) => Object.keys(element.attributes).filter((name) => name.toLowerCase().startsWith('on'))), [], 'no event handler in a photo');
    }
    const missing = await server.get('/demo/images/penthouse-1.svg', { host: 'api.localhost' });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error, 'not_found');
    assert.equal(demoImage('cafe-4.svg'), undefined);
    assert.equal(demoImage('../cafe-1.svg'), undefined);
  });

  it("the README's examples return something meaningful with the sg demo key", async (t) => {
    await world(t);
    const key = (await server.createKey(DEMO_ORG_ID, 'sg')).key;
    const all = await server.get('/v1/listings?page=1&per_page=20', { key });
    assert.ok(all.json.total >= 25 && all.json.pages >= 2, `${all.json.total} sg listings`);
    // Office space of 1,000 sq ft or more, cheapest first.
    const offices = await server.get('/v1/listings?usage_type=Office&min_size_sqft=1000&sort=price', { key });
    const prices = offices.json.items.map((l: Listing) => l.price);
    assert.ok(prices.length >= 2 && prices.every((p: number | null) => p !== null), JSON.stringify(prices));
    assert.deepEqual(prices, [...prices].sort((a: number, b: number) => a - b));
    for (const query of ['usage_type=F%26B', 'featured=true', 'takeover=true', 'max_price=10&sort=-price', 'usage_type=Clinic,Kiosk']) {
      assert.ok((await server.get(`/v1/listings?${query}`, { key })).json.total > 0, query);
    }
  });

  it('a data set made for another address (or by an earlier release) is imported again, so its photos load from this server', async (t) => {
    await world(t);
    const store = server.service.store;
    const elsewhere = 'http://api.localhost:4999';
    const again = await ensureDemo(store, new Date(server.clock.now()), elsewhere);
    assert.equal(again.created, false);
    const key = (await server.createKey(DEMO_ORG_ID, 'sg')).key;
    const items: Listing[] = (await server.get('/v1/listings?per_page=100', { key })).json.items;
    const photos = items.flatMap((l) => l.images);
    assert.ok(photos.length > 0 && photos.every((url) => url.startsWith(`${elsewhere}/demo/images/`)));
    const lastChange = async () => (await store.db.selectFrom('listings').select((eb) => eb.fn.max('change_seq').as('seq')).executeTakeFirstOrThrow()).seq;
    const changes = await lastChange();
    await ensureDemo(store, new Date(server.clock.now()), elsewhere);
    assert.equal(await lastChange(), changes, 'the same address: nothing imported, no change for feed readers');
  });
});
