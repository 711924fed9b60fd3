import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { hashKey } from '../../src/auth/key-format.js';
import { dom, named, only } from '../support/html.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dev, revealedKey, signedIn, text, type DashboardClient } from './helpers.js';

describe('dashboard: API keys page (spec 5 rules 4-6, D2, D4, D20)', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  let email: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'Corner shop' }, { country: 'my', currency: 'MYR', title: 'KL office' }]);
    ({ client, email } = await signedIn(server, accountId));
  }

  const keys = () => server.service.store.keys.listForAccount(accountId);
  /** Opens the keys page and submits its create form (with the form's single-use token). */
  const create = (label: string, country = 'sg') => client.createKey(accountId, { label, country });

  it('with no keys, the page says what to do next', async (t) => {
    await world(t);
    const page = await client.get(dev(accountId, 'keys'));
    assert.equal(page.status, 200);
    const words = text(page.body);
    assert.match(words, /No keys yet\./);
    assert.match(words, /Create your first key above/);
    const createForm = dom(page.body).querySelectorAll('form').find((f) => f.getAttribute('method') === 'post' && /\/settings\/developer\/keys$/.test(f.getAttribute('action') ?? ''));
    assert.ok(createForm, 'a form that posts to the keys page (create)');
  });

  it('creating a key shows the full key once, with a copy button, a plain warning and a working curl line; the API accepts it (200)', async (t) => {
    await world(t);
    const res = await create('Website (production)', 'sg');
    assert.equal(res.status, 201);
    const key = revealedKey(res.body);
    assert.match(key, /^sg_live_[A-Za-z0-9]{38}$/);
    const words = text(res.body);
    assert.match(words, /This is the only time the key is shown\./);
    assert.match(words, /cannot be shown again/);
    // The copy button is shown by script, and focused on arrival (autofocus).
    const copy = named(dom(res.body), 'button', 'Copy key');
    assert.equal(copy.getAttribute('type'), 'button');
    assert.equal(copy.getAttribute('data-copy'), 'new-key');
    assert.ok(copy.hasAttribute('hidden') && copy.hasAttribute('autofocus'), 'shown by script, focused on arrival');
    // Plain "(sg)": no badge inside the parentheses, whose padding read as "( SG ):".
    assert.match(words, /Key Website \(production\) for Singapore \(sg\):/);
    const curl = only(dom(res.body), '#curl-line').text;
    assert.equal(curl, `curl -H "Authorization: Bearer ${key}" http://api.localhost:${server.port}/v1/listings`);
    assert.equal(res.headers['cache-control'], 'no-store');

    const api = await server.get('/v1/listings', { key });
    assert.equal(api.status, 200);
    assert.deepEqual(api.json.items.map((l: { title: string }) => l.title), ['Corner shop']);

    // Stored: its hash, display prefix and last four; never the key (D2).
    const [stored] = await keys();
    assert.equal(stored!.key_hash, hashKey(key));
    assert.equal(stored!.label, 'Website (production)');
    assert.equal(stored!.prefix, key.slice(0, 12));
    assert.equal(stored!.last4, key.slice(-4));
  });

  it('the list shows label, country, display prefix and last four, created, last used and status, and never the full key again', async (t) => {
    await world(t);
    const res = await create('Staging server', 'my');
    const key = revealedKey(res.body);
    assert.equal((await server.get('/v1/listings', { key, host: 'api.my.localhost' })).status, 200);
    await server.service.store.keys.recordLastUsed(new Map([[(await keys()).find((k) => k.label === 'Staging server')!.id, '2026-11-22T10:00:00.000Z']]));

    const page = await client.get(dev(accountId, 'keys'));
    assert.equal(page.status, 200);
    assert.ok(!page.body.includes(key), 'the full key is not on the list page');
    const row = named(dom(page.body), 'tr th[scope=row]', 'Staging server').closest('tr')!;
    assert.match(row.getAttribute('id')!, /^key-/, 'a row for the key');
    const words = text(row.innerHTML);
    assert.match(words, /Malaysia my/);
    assert.match(words, new RegExp(`${key.slice(0, 12)}…${key.slice(-4)}`));
    assert.match(words, /Active/);
    // Created and last used: both at the test clock's time.
    const times = row.querySelectorAll('time').map((time) => [time.getAttribute('datetime'), time.text]);
    assert.deepEqual(times, [['2026-11-22T10:00:00.000Z', '2026-11-22 10:00 UTC'], ['2026-11-22T10:00:00.000Z', '2026-11-22 10:00 UTC']]);
    const headers = dom(page.body).querySelectorAll('th').filter((th) => th.getAttribute('scope') === 'col').map((th) => th.text);
    assert.deepEqual(headers.slice(0, 6), ['Label', 'Country', 'Key', 'Created', 'Last used', 'Status']);
  });

  it('an empty, overlong or multi-line label, or a country this deployment does not serve, is refused next to the field; nothing is created', async (t) => {
    await world(t);
    const before = (await keys()).length;
    for (const [label, country, field, message] of [
      ['', 'sg', 'label', /enter a label/],
      ['   ', 'sg', 'label', /enter a label/],
      ['x'.repeat(201), 'sg', 'label', /200 characters or fewer/],
      ['line\nbreak', 'sg', 'label', /control characters/],
      ['Fine label', 'xx', 'country', /choose one of the countries/],
      ['Fine label', '', 'country', /choose one of the countries/],
    ] as const) {
      const res = await create(label, country);
      assert.equal(res.status, 400, `${label} ${country}`);
      const page = dom(res.body);
      assert.match(only(page, `#${field}-error`).text, message, 'the error is next to its field');
      const input = only(page, `#${field}`);
      assert.equal(input.getAttribute('aria-invalid'), 'true');
      assert.ok((input.getAttribute('aria-describedby') ?? '').split(' ').includes(`${field}-error`), 'the field is described by its error');
      assert.match(text(res.body), message);
      assert.doesNotMatch(res.body, /id="new-key"/);
    }
    assert.equal((await keys()).length, before);
  });

  it('labels are escaped: markup in a label is shown as text, never run', async (t) => {
    await world(t);
    const res = await create('<script>alert(1)</script> & "quotes"', 'sg');
    assert.equal(res.status, 201);
    const page = await client.get(dev(accountId, 'keys'));
    assert.ok(!page.body.includes('<script>alert(1)</script>'));
    assert.ok(page.body.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;'));
  });

  it('relabel: the new label is listed and the change is in the activity log', async (t) => {
    await world(t);
    assert.equal((await create('Staging server')).status, 201);
    const key = (await keys()).find((k) => k.label === 'Staging server')!;
    const res = await client.post(`${dev(accountId, 'keys')}/${key.id}/label`, { label: '  Staging (EU) ' });
    assert.equal(res.status, 303);
    assert.equal(res.location, `${dev(accountId, 'keys')}?relabelled=${key.id}#key-${key.id}`);
    assert.equal((await server.service.store.keys.get(key.id))!.label, 'Staging (EU)');
    const page = await client.get(res.location!);
    assert.match(text(page.body), new RegExp(`Renamed key ${key.prefix}…${key.last4} to "Staging \\(EU\\)"`));
    assert.match(text(page.body), new RegExp(`${email.replace('.', '\\.')} renamed key ${key.prefix}…${key.last4} from Staging server to Staging \\(EU\\)`));

    const bad = await client.post(`${dev(accountId, 'keys')}/${key.id}/label`, { label: '' });
    assert.equal(bad.status, 400);
    const rename = only(dom(bad.body), `#label-${key.id}-error`);
    let details = rename.parentNode;
    while (details !== null && details.tagName !== 'DETAILS') details = details.parentNode;
    assert.ok(details?.hasAttribute('open'), 'the rename form is open, with its error');
    assert.equal((await server.service.store.keys.get(key.id))!.label, 'Staging (EU)');
  });

  it('revoke asks for confirmation first; confirmed, the API refuses the key on the very next request (D4) and the key stays listed as revoked', async (t) => {
    await world(t);
    const created = await create('To revoke', 'sg');
    const key = revealedKey(created.body);
    const record = (await keys()).find((k) => k.label === 'To revoke')!;
    // Warm the API's caches with the key first: revocation must still be immediate.
    for (let i = 0; i < 3; i++) assert.equal((await server.get('/v1/listings', { key })).status, 200);

    const confirm = await client.get(`${dev(accountId, 'keys')}/${record.id}/revoke`);
    assert.equal(confirm.status, 200);
    assert.match(text(confirm.body), /Revoke key "To revoke"\?/);
    assert.match(text(confirm.body), /every request with this key is refused with 401 unauthorized/);
    assert.equal(named(dom(confirm.body), 'button', 'Revoke key').getAttribute('type'), 'submit');
    assert.equal((await server.get('/v1/listings', { key })).status, 200, 'showing the confirmation revokes nothing');

    const res = await client.post(`${dev(accountId, 'keys')}/${record.id}/revoke`, {});
    assert.equal(res.status, 303);
    const api = await server.get('/v1/listings', { key });
    assert.equal(api.status, 401);
    assert.equal(api.json.error, 'unauthorized');

    const page = await client.get(res.location!);
    assert.match(text(page.body), /Revoked key "To revoke" \(sg_live_\w{4}…\w{4}\)\. Requests with it now get 401 unauthorized\./);
    const row = only(dom(page.body), `tr#key-${record.id}`);
    assert.ok(row.classList.contains('revoked'), 'still listed, as revoked');
    assert.match(text(row.innerHTML), /Revoked 2026-/);
    // Its usage can still be read; it can be neither renamed nor revoked again.
    assert.deepEqual(row.querySelectorAll('form, button').map((e) => e.outerHTML), [], 'no rename form on a revoked key');
    assert.deepEqual(row.querySelectorAll('a').filter((a) => a.getAttribute('href')?.endsWith('/revoke')).map((a) => a.outerHTML), [], 'no revoke link');

    // Revoking again changes nothing; relabelling a revoked key is refused.
    const revokedAt = (await server.service.store.keys.get(record.id))!.revoked_at;
    server.clock.advance(1000);
    assert.equal((await client.post(`${dev(accountId, 'keys')}/${record.id}/revoke`, {})).status, 303);
    assert.equal((await server.service.store.keys.get(record.id))!.revoked_at, revokedAt);
    assert.equal((await client.post(`${dev(accountId, 'keys')}/${record.id}/label`, { label: 'New' })).status, 409);
    assert.equal((await server.service.store.keys.get(record.id))!.label, 'To revoke');
    assert.match(text((await client.get(`${dev(accountId, 'keys')}/${record.id}/revoke`)).body), /is revoked/);
  });

  it('CSRF: create, relabel and revoke without the token, with a wrong one, or from another site are 403 and change nothing', async (t) => {
    await world(t);
    assert.equal((await create('Website')).status, 201);
    const active = (await keys()).find((k) => k.revoked_at === null)!;
    // What a forged form could change (not last_used_at, which the API's background writes move).
    const keyState = async () => JSON.stringify((await keys()).map(({ last_used_at: _used, ...rest }) => rest));
    const snapshot = await keyState();
    const auditBefore = (await server.service.store.audit.listForAccount(accountId, 1000)).length;
    await client.get(dev(accountId, 'keys'));
    const posts: Array<[string, Record<string, string | null>]> = [
      // With a good single-use form token: the CSRF check alone refuses.
      [dev(accountId, 'keys'), { label: 'Forged', country: 'sg', _form: client.formToken! }],
      [`${dev(accountId, 'keys')}/${active.id}/label`, { label: 'Forged' }],
      [`${dev(accountId, 'keys')}/${active.id}/revoke`, {}],
    ];
    for (const [path, fields] of posts) {
      for (const [csrf, headers] of [
        [null, {}],
        ['', {}],
        ['wrong-token-wrong-token-wrong-token-wrong-t', {}],
        [undefined, { origin: 'https://evil.example' }],
        [undefined, { origin: 'null' }],
        [undefined, { 'sec-fetch-site': 'cross-site' }],
        [undefined, { 'sec-fetch-site': 'same-site' }],
      ] as Array<[string | null | undefined, Record<string, string>]>) {
        const res = await client.post(path, csrf === undefined ? fields : { ...fields, _csrf: csrf }, headers);
        assert.equal(res.status, 403, `${path} ${csrf} ${JSON.stringify(headers)}`);
        assert.doesNotMatch(res.body, /id="new-key"/);
      }
    }
    // A JSON or text/plain body is not a form: refused, nothing parsed.
    const json = await client.request('POST', dev(accountId, 'keys'), { body: JSON.stringify({ label: 'Forged', country: 'sg', _csrf: client.csrf }), headers: { 'content-type': 'application/json' } });
    assert.equal(json.status, 415);
    const plain = await client.request('POST', dev(accountId, 'keys'), { body: `label=Forged&country=sg&_csrf=${client.csrf}`, headers: { 'content-type': 'text/plain' } });
    assert.equal(plain.status, 415);

    assert.equal(await keyState(), snapshot, 'no key created, relabelled or revoked');
    assert.equal((await server.service.store.audit.listForAccount(accountId, 1000)).length, auditBefore);
    // Another member's token does not work for this session either.
    const other = await signedIn(server, accountId);
    const res = await client.post(`${dev(accountId, 'keys')}/${active.id}/label`, { label: 'Forged', _csrf: other.client.csrf! });
    assert.equal(res.status, 403);
    assert.equal((await server.service.store.keys.get(active.id))!.label, active.label);
  });

  it('the full key is nowhere but the one response: not in the database, the audit log, a redirect or the server log (D20)', async (t) => {
    await world(t);
    const res = await create('Secret keeper', 'sg');
    const key = revealedKey(res.body);
    assert.equal(res.location, undefined);
    assert.equal(res.headers['set-cookie'], undefined, 'nothing put in a cookie');
    const tables = ['api_keys', 'dashboard_audit', 'dashboard_sessions', 'dashboard_users', 'dashboard_forms'] as const;
    for (const table of tables) {
      const rows = await server.service.store.db.selectFrom(table).selectAll().execute();
      assert.ok(!JSON.stringify(rows).includes(key.slice(12, -4)), `not in ${table}`);
    }
    assert.ok(!server.logs.raw.join('\n').includes(key.slice(12, -4)), 'not in the log');
    for (const path of [dev(accountId, 'keys'), dev(accountId, 'activity'), dev(accountId, 'origins')]) {
      assert.ok(!(await client.get(path)).body.includes(key.slice(12, -4)), `not on ${path}`);
    }
  });
});
