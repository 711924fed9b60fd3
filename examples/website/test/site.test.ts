import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ListingsClient } from '@listings-api/sdk';
import { createSite, type Site } from '@listings-api/example-website';

/**
 * The site's search against a stand-in API (a fetch that answers as told): what it asks the API
 * for, and what it does with a refusal. Against the real API: test/sdk/example-site.test.ts and
 * test/browser/example-website.test.ts at the repository's root.
 */
describe('example website: a search against a stand-in API', () => {
  const asked: string[] = [];
  let refuse = false;
  let site: Site;
  let port: number;

  before(async () => {
    const client = new ListingsClient({
      apiKey: 'sg_live_0000000000000000000000000000000000000000',
      baseUrl: 'http://api.invalid',
      maxRetries: 0,
      fetch: async (url) => {
        const { pathname, search } = new URL(url);
        asked.push(pathname + search);
        const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
        // An API whose rules for q are stricter than the site knows: every q is refused.
        if (refuse) return json(400, { error: 'bad_request', message: 'Query parameter "q" holds no word (only spaces or punctuation); send letters or digits.' });
        if (pathname === '/v1/listings/facets') {
          return json(200, { total: 0, usage_types: [{ name: 'Office', count: 0 }], featured: { true: 0, false: 0 }, takeover: { true: 0, false: 0 }, price: [], size_sqft: { min: null, max: null, count: 0 } });
        }
        return json(200, { items: [], page: 1, per_page: 12, total: 0, pages: 1 });
      },
    });
    site = createSite({ client, country: 'sg' });
    port = await site.listen(0);
  });
  after(() => site?.close());

  function get(path: string): Promise<{ status: number; location: string | undefined; body: string }> {
    return new Promise((resolve, reject) => {
      request({ port, path, host: '127.0.0.1' }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, body }));
      }).on('error', reject).end();
    });
  }

  it('a search near a place asks for the page nearest first, and the facets without the usage type', async () => {
    asked.length = 0;
    const page = await get('/?q=marina+office&usage=Office&near=raffles-place&radius=2');
    assert.equal(page.status, 200);
    assert.deepEqual(asked.sort(), [
      '/v1/listings/facets?q=marina%20office&near=1.284%2C103.8514&radius_m=2000',
      '/v1/listings?page=1&per_page=12&usage_type=Office&q=marina%20office&near=1.284%2C103.8514&radius_m=2000&sort=distance',
    ]);
    assert.match(page.body, /No listings of type Office matching “marina office” within 2 km of Raffles Place right now\./);
  });

  it('what an empty GET form leaves in the address is redirected to the tidy address, before any look-up', async () => {
    asked.length = 0;
    const blank = await get('/?q=&near=&radius=5');
    assert.equal(blank.status, 303);
    assert.equal(blank.location, '/');
    const chip = await get('/?q=cafe&near=&radius=5&usage=F%26B');
    assert.equal(chip.location, '/?q=cafe&usage=F%26B');
    assert.equal((await get('/?q=cafe&near=orchard&radius=5')).status, 200, 'a whole search stays as it is');
    assert.deepEqual(asked.filter((a) => a.startsWith('/v1/listings?')), ['/v1/listings?page=1&per_page=12&q=cafe&near=1.304%2C103.832&radius_m=5000&sort=distance']);
  });

  it('a q with no word in it is a 400 page that says so, and the API is not asked', async () => {
    asked.length = 0;
    const page = await get('/?q=%21%21%21');
    assert.equal(page.status, 400);
    assert.match(page.body, /role="alert">Nothing to search for: type a word, a name or a street, with at least one letter or digit\.</);
    assert.match(page.body, /name="q" value="!!!"/);
    assert.deepEqual(asked, []);
  });

  it('a q the API refuses all the same (400 naming q) is the same friendly 400 page, and the site keeps serving', async () => {
    refuse = true;
    try {
      const page = await get('/?q=fine');
      assert.equal(page.status, 400);
      assert.match(page.body, /role="alert">Nothing to search for: type a word, a name or a street, with at least one letter or digit\.</);
      assert.match(page.body, /name="q" value="fine"/);
    } finally {
      refuse = false;
    }
    // (The refusal is this search's shared copy for a while: another page is read anew.)
    assert.equal((await get('/?q=other')).status, 200);
  });
});
