import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { dom, named, only } from '../support/html.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { activityItems, dev, signedIn, text, type DashboardClient } from './helpers.js';

describe('dashboard: allowed origins page (spec 4.4, 5 rules 8-10; D17, D18)', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  let key: string;

  /** Each test's own world (issue 42): a fresh server, a signed-in member of an account with a listing and, unless told, an sg key. */
  async function world(t: TestContext, { withKey = true } = {}): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'Corner shop' }]);
    ({ client } = await signedIn(server, accountId));
    if (withKey) key = (await server.createKey(accountId, 'sg')).key;
  }

  const origins = () => server.service.store.origins.listForAccount(accountId);
  const add = (country: string, origin: string) => client.post(dev(accountId, 'origins'), { country, origin });
  const fromBrowser = (origin: string) => server.get('/v1/listings', { key, headers: { origin } });

  /** The origins the adding tests register, added on the page in their order: three for sg, then one for my. */
  async function added(): Promise<void> {
    const registered = [['sg', 'https://www.example.com'], ['sg', 'http://localhost:5173'], ['sg', 'http://app.localhost:8080'], ['my', 'https://my.example.com']] as const;
    for (const [country, origin] of registered) assert.equal((await add(country, origin)).status, 303, origin);
  }

  it('with no keys and no origins, the page says what to do next, explains 401 versus 403 and recommends a server-side proxy', async (t) => {
    await world(t, { withKey: false });
    const page = await client.get(dev(accountId, 'origins'));
    assert.equal(page.status, 200);
    const words = text(page.body);
    assert.match(words, /No origins yet, and no keys\./);
    assert.match(words, /Server-to-server calls need no origin/);
    assert.match(words, /first create a key/);
    assert.match(words, /A 401 unauthorized means the key itself is not accepted \(missing, mistyped, unknown or revoked\); a 403 origin_not_allowed means the key is fine but the page's origin is not on this list\./);
    assert.match(words, /Recommended: keep the key on your own server and call the API from there \(a small proxy for your pages\)/);
  });

  it('once the account has a key, its country gets a section with an empty state and its own form', async (t) => {
    await world(t, { withKey: false });
    key = (await server.createKey(accountId, 'sg')).key;
    const page = await client.get(dev(accountId, 'origins'));
    const root = dom(page.body);
    const section = only(root, 'section#country-sg');
    assert.match(text(section.innerHTML), /No origins for Singapore: browsers cannot use sg keys yet/);
    assert.equal(only(section, 'input#origin-sg').getAttribute('name'), 'origin', 'its own form');
    assert.equal(only(root, 'select#country-other').getAttribute('name'), 'country', 'and a form for the other countries');
  });

  it('malformed origins are refused with the error next to the field, and nothing is added', async (t) => {
    await world(t);
    const cases: Array<[string, RegExp]> = [
      ['https://www.example.com/shop', /has a path, query or fragment/],
      ['https://www.example.com?x=1', /has a path, query or fragment/],
      ['https://*.example.com', /has a wildcard/],
      ['http://www.example.com', /must use https/],
      ['ftp://www.example.com', /is not an origin/],
      ['www.example.com', /is not an origin/],
      ['null', /can never be allowed/],
      ['', /origin is empty/],
      ['https://www.example.com:99999', /is not an origin/],
      [`https://${'a'.repeat(300)}.com`, /too long/],
    ];
    for (const [origin, message] of cases) {
      const res = await add('sg', origin);
      assert.equal(res.status, 400, origin);
      const root = dom(res.body);
      assert.match(only(root, 'p#origin-sg-error').text, message, `an error next to the sg field for ${origin}`);
      const field = only(root, 'input#origin-sg');
      assert.equal(field.getAttribute('aria-describedby'), 'origin-sg-hint origin-sg-error', 'the field names its hint and its error');
      assert.equal(field.getAttribute('aria-invalid'), 'true');
      if (origin.length < 300) assert.equal(field.getAttribute('value'), origin, 'what was typed is kept in the field');
    }
    const unknownCountry = await add('xx', 'https://www.example.com');
    assert.equal(unknownCountry.status, 400);
    assert.match(text(unknownCountry.body), /choose one of the countries/);
    assert.deepEqual(await origins(), []);
  });

  it('a registered origin (normalised) lets browsers on it call the API; others get 403 origin_not_allowed, readable (D18)', async (t) => {
    await world(t);
    assert.equal((await fromBrowser('https://www.example.com')).status, 403, 'before: not allowed');
    const res = await add('sg', ' HTTPS://WWW.Example.com:443/ ');
    assert.equal(res.status, 303);
    const page = await client.get(res.location!);
    assert.match(text(page.body), /Allowed https:\/\/www\.example\.com for Singapore\./);
    named(only(dom(page.body), 'section#country-sg'), 'li code', 'https://www.example.com');
    assert.deepEqual((await origins()).map((o) => [o.country, o.origin]), [['sg', 'https://www.example.com']]);

    const allowed = await fromBrowser('https://www.example.com');
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://www.example.com');
    const refused = await fromBrowser('https://other.example.com');
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error, 'origin_not_allowed');
    assert.equal(refused.headers['access-control-allow-origin'], 'https://other.example.com');

    // http is fine for localhost development servers.
    assert.equal((await add('sg', 'http://localhost:5173')).status, 303);
    assert.equal((await add('sg', 'http://app.localhost:8080')).status, 303);
    assert.equal((await fromBrowser('http://localhost:5173')).status, 200);
    // Adding it again is harmless, and says so.
    const again = await add('sg', 'https://www.example.com');
    assert.match(text((await client.get(again.location!)).body), /https:\/\/www\.example\.com was already allowed for Singapore\./);
    assert.equal((await origins()).length, 3);
  });

  it('origins are per country: the other-country form adds a section, and an sg key is still refused there', async (t) => {
    await world(t);
    const res = await add('my', 'https://my.example.com');
    assert.equal(res.status, 303);
    const page = await client.get(dev(accountId, 'origins'));
    only(dom(page.body), 'section#country-my');
    assert.equal((await fromBrowser('https://my.example.com')).status, 403, 'registered for my, not for sg');
  });

  it('removing an origin asks for confirmation first, as revoking a key does; showing the question removes nothing', async (t) => {
    await world(t);
    await added();
    const page = await client.get(dev(accountId, 'origins'));
    const confirmPath = `${dev(accountId, 'origins')}/remove?country=sg&origin=${encodeURIComponent('https://www.example.com')}`;
    // The list links to the question instead of removing at once.
    const root = dom(page.body);
    assert.equal(named(root, 'a', 'Remove https://www.example.com for Singapore').getAttribute('href'), confirmPath);
    assert.deepEqual(root.querySelectorAll('form').filter((f) => f.getAttribute('action')?.endsWith('/origins/remove')), [], 'no form removes at once');

    const confirm = await client.get(confirmPath);
    assert.equal(confirm.status, 200);
    const words = text(confirm.body);
    assert.match(words, /Remove https:\/\/www\.example\.com for Singapore\?/);
    assert.match(words, /browser calls from pages on this origin with sg keys get 403 origin_not_allowed ?, including pages that are open right now/);
    assert.match(words, /Active keys 1 for Singapore/);
    const form = named(dom(confirm.body), 'button', 'Remove origin').closest('form')!;
    assert.equal(form.getAttribute('method'), 'post');
    assert.ok(form.getAttribute('action')!.endsWith('/origins/remove'));
    const hidden = Object.fromEntries(form.querySelectorAll('input[type=hidden]').map((i) => [i.getAttribute('name'), i.getAttribute('value')]));
    assert.deepEqual({ ...hidden, _csrf: typeof hidden._csrf }, { _csrf: 'string', country: 'sg', origin: 'https://www.example.com' });
    assert.equal(named(form, 'button', 'Remove origin').getAttribute('type'), 'submit');
    assert.equal((await fromBrowser('https://www.example.com')).status, 200, 'showing the question removes nothing');
    assert.equal((await origins()).length, 4);

    // Only for an origin the account has: anything else is 404.
    for (const query of [
      `country=sg&origin=${encodeURIComponent('https://nowhere.example.com')}`,
      `country=my&origin=${encodeURIComponent('https://www.example.com')}`,
      `country=xx&origin=${encodeURIComponent('https://www.example.com')}`,
      'country=sg&origin=not%20an%20origin',
      'country=sg',
      '',
    ]) {
      const res = await client.get(`${dev(accountId, 'origins')}/remove?${query}`);
      assert.equal(res.status, 404, query);
    }
  });

  it('removing an origin is effective for the API at once (D4); removing one that is not there is 404', async (t) => {
    await world(t);
    await added();
    for (let i = 0; i < 3; i++) assert.equal((await fromBrowser('https://www.example.com')).status, 200);
    const res = await client.post(`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'https://www.example.com' });
    assert.equal(res.status, 303);
    const refused = await fromBrowser('https://www.example.com');
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error, 'origin_not_allowed');
    assert.match(text((await client.get(res.location!)).body), /Removed https:\/\/www\.example\.com for Singapore\./);

    const again = await client.post(`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'https://www.example.com' });
    assert.equal(again.status, 404);
    assert.equal((await client.post(`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'not an origin' })).status, 404);
  });

  it('CSRF: adding or removing without the token or from another site is 403 and changes nothing', async (t) => {
    await world(t);
    await added();
    const before = JSON.stringify(await origins());
    for (const [path, fields] of [
      [dev(accountId, 'origins'), { country: 'sg', origin: 'https://forged.example.com' }],
      [`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'http://localhost:5173' }],
    ] as const) {
      assert.equal((await client.post(path, { ...fields, _csrf: null })).status, 403);
      assert.equal((await client.post(path, { ...fields, _csrf: 'forged' })).status, 403);
      assert.equal((await client.post(path, fields, { origin: 'https://forged.example.com' })).status, 403);
    }
    assert.equal(JSON.stringify(await origins()), before);
  });

  it('every change is in the activity log: who added or removed which origin for which country, and when', async (t) => {
    await world(t);
    await added();
    assert.equal((await client.post(`${dev(accountId, 'origins')}/remove`, { country: 'sg', origin: 'https://www.example.com' })).status, 303);
    const page = await client.get(dev(accountId, 'activity'));
    assert.equal(page.status, 200);
    const items = activityItems(page.body);
    assert.deepEqual(items.map(([action]) => action), ['origin.removed', 'origin.added', 'origin.added', 'origin.added', 'origin.added']);
    assert.match(items[0]![1]!, /^2026-11-22 10:00 UTC member-\w+@example\.com removed origin https:\/\/www\.example\.com for Singapore$/);
    assert.match(items.at(-1)![1]!, /allowed origin https:\/\/www\.example\.com for Singapore$/);
  });
});
