import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { generateKey } from '../../src/auth/key-format.js';
import { ERROR_REASONS, type ErrorReason } from '../../src/core/api-error.js';
import { TEST_STORE } from '../support/database.js';
import { dom, named, only } from '../support/html.js';
import type { TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dev, FROM_A_PAGE, signedIn, text, type DashboardClient } from './helpers.js';

/**
 * Settings > Developer > Usage, Failed requests and the request-id look-up (issue 12), through the
 * real dashboard: what a member sees, the Allow-this-origin button (CSRF, audit, in force at once),
 * and the account boundary (another account's usage and failures never shown; tampered ids 404).
 */
describe(`dashboard usage and failed requests on ${TEST_STORE} (issue 12)`, () => {
  let server: TestServer;
  let accountId: string;
  let otherId: string;
  let client: DashboardClient;
  let other: DashboardClient;
  let web: { id: string; key: string };
  let otherKey: { id: string; key: string };
  const flush = () => server.service.usage!.flush();

  /**
   * Each test's own world (issue 42): a fresh server, two accounts with a key each, and a member of
   * the first signed in (the test that reads as the other account signs its member in itself).
   */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { USAGE_FLUSH_INTERVAL_MS: '60000' });
    accountId = await server.createAccount();
    otherId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'One' }]);
    web = await server.createKey(accountId, 'sg', 'Website');
    otherKey = await server.createKey(otherId, 'sg', 'Their site');
    ({ client } = await signedIn(server, accountId));
  }

  /**
   * The traffic the pages show, counted and flushed: with the Website key three 200s, a 400
   * (page=0) and a 403 from a page on http://localhost:4321; with the other account's key five
   * 403s from https://theirs.example.
   */
  async function traffic(): Promise<void> {
    for (let i = 0; i < 3; i++) assert.equal((await server.get('/v1/listings', { key: web.key })).status, 200);
    assert.equal((await server.get('/v1/listings?page=0', { key: web.key })).status, 400);
    // From a page in a browser: its Fetch Metadata with the Origin.
    assert.equal((await server.get('/v1/listings', { key: web.key, headers: { origin: 'http://localhost:4321', ...FROM_A_PAGE } })).status, 403);
    for (let i = 0; i < 5; i++) assert.equal((await server.get('/v1/listings', { key: otherKey.key, headers: { origin: 'https://theirs.example' } })).status, 403);
    await flush();
  }

  it('before any request, each page says what to do', async (t) => {
    await world(t);
    const usage = await client.get(dev(accountId, 'usage'));
    assert.equal(usage.status, 200);
    assert.match(text(usage.body), /No requests counted yet\. Call the API with one of your keys/);
    const failures = await client.get(dev(accountId, 'failures'));
    assert.equal(failures.status, 200);
    assert.match(text(failures.body), /No failed requests\./);
    // The tab of the page shown is the current one.
    assert.equal(named(dom(usage.body), 'nav a', 'Usage').getAttribute('aria-current'), 'page');
    assert.equal(named(dom(failures.body), 'nav a', 'Failed requests').getAttribute('aria-current'), 'page');
  });

  it('Usage: per key, a chart of the last 24 hours scaled to its traffic (its limit far above it said in words) and of 30 days, each with a table of the same numbers, and totals', async (t) => {
    await world(t);
    await traffic();

    const res = await client.get(dev(accountId, 'usage'));
    assert.equal(res.status, 200);
    const page = text(res.body);
    const chart = only(dom(res.body), 'svg#chart-24h');
    assert.equal(chart.getAttribute('role'), 'img');
    assert.equal(chart.getAttribute('data-axis-max'), '5', 'the axis is scaled to the 5 requests');
    assert.equal(chart.querySelector('line.limit'), null, 'a limit 60 times the traffic is not drawn over it');
    assert.match(page, /The limit, 300 per five minutes at this scale \(60\/min × 5\), is off this chart: the busiest five minutes had 5 \(2 % of it\)\./);
    const month = await client.get(`${dev(accountId, 'usage')}?range=30d`);
    assert.equal(only(dom(month.body), 'svg#chart-30d').getAttribute('role'), 'img');
    assert.match(text(month.body), /Last 30 days: 5/);
    assert.match(page, /Last 24 hours: 5/);
    assert.match(page, /200 OK: 3/);
    assert.match(page, /400 bad_request: 1/);
    assert.match(page, /403 origin_not_allowed: 1/);
    // The table of the chart: the bucket of 10:00 holds 3, 1 and 1.
    const table = dom(res.body).querySelector('table.numbers-table')!;
    assert.match(text(table.innerHTML), /2026-11-22 10:00 3 1 1 5/);
    assert.ok(!page.includes('Their site'), 'another account\'s key is not shown');
  });

  it('Usage: the other account sees only its own key and counts', async (t) => {
    await world(t);
    await traffic();
    ({ client: other } = await signedIn(server, otherId));
    const res = await other.get(dev(otherId, 'usage'));
    assert.equal(res.status, 200);
    assert.match(text(res.body), /Their site/);
    assert.match(text(res.body), /Last 24 hours: 5/);
    assert.ok(!text(res.body).includes('Website'));
  });

  it('Failed requests: each row says how to fix it; filters by key and code', async (t) => {
    await world(t);
    await traffic();
    const res = await client.get(dev(accountId, 'failures'));
    assert.equal(res.status, 200);
    const page = text(res.body);
    assert.match(page, /403 origin_not_allowed .* Website sg_live_\w{4}…\w{4}/);
    assert.match(page, /The origin http:\/\/localhost:4321 is not registered for Singapore: allow it, or call the API from your server\./);
    assert.match(page, /A query parameter is wrong: Query parameter "page" must be 1 or more\./);
    assert.ok(dom(res.body).querySelectorAll('button[type=submit]').some((b) => text(b.innerHTML).startsWith('Allow this origin')), 'a button to allow the origin');
    assert.ok(!page.includes('theirs.example'), 'another account\'s failures are never shown');

    const onlyBad = text((await client.get(`${dev(accountId, 'failures')}?code=bad_request`)).body);
    assert.match(onlyBad, /400 bad_request/);
    assert.ok(!onlyBad.includes('403 origin_not_allowed 2026'), 'filtered by code');
    const byKey = await client.get(`${dev(accountId, 'failures')}?key=${web.id}&code=`);
    assert.equal(byKey.status, 200);
    assert.match(text(byKey.body), /403 origin_not_allowed/);
  });

  it('tampered ids give 404: another account\'s key, a malformed key id, an unknown code, another account\'s pages', async (t) => {
    await world(t);
    await traffic();
    for (const path of [
      `${dev(accountId, 'usage')}?key=${otherKey.id}`,
      `${dev(accountId, 'usage')}?key=not-a-uuid`,
      `${dev(accountId, 'failures')}?key=${otherKey.id}`,
      `${dev(accountId, 'failures')}?code=teapot`,
      dev(otherId, 'usage'),
      dev(otherId, 'failures'),
      `${dev(otherId, 'requests')}?id=x`,
    ]) {
      const res = await client.get(path);
      assert.equal(res.status, 404, path);
      assert.ok(!res.body.includes('Their site') && !res.body.includes('theirs.example'), path);
    }
  });

  it('request id look-up: a failed request of the account is shown; another account\'s, or an unknown id, is 404', async (t) => {
    await world(t);
    await traffic();
    const mine = await server.service.store.usage.failures(accountId, { code: 'origin_not_allowed' });
    const theirs = await server.service.store.usage.failures(otherId);
    const shown = await client.get(`${dev(accountId, 'requests')}?id=${encodeURIComponent(mine[0]!.request_id)}`);
    assert.equal(shown.status, 200);
    assert.match(text(shown.body), /403 origin_not_allowed/);
    assert.match(text(shown.body), /Origin http:\/\/localhost:4321/);
    const form = await client.get(dev(accountId, 'requests'));
    assert.equal(form.status, 200);
    assert.match(form.body, /name="id"/);
    for (const id of [theirs[0]!.request_id, 'req_unknown']) {
      const res = await client.get(`${dev(accountId, 'requests')}?id=${encodeURIComponent(id)}`);
      assert.equal(res.status, 404);
      assert.match(text(res.body), /No such request is held/);
      assert.ok(!res.body.includes('theirs.example'));
    }
  });

  it('Allow this origin: refused without a valid CSRF token; then one click allows it, audit-logged, and the API answers that origin at once', async (t) => {
    await world(t);
    await traffic();
    const origin = 'http://localhost:4321';
    const call = async () => (await server.get('/v1/listings', { key: web.key, headers: { origin } })).status;
    assert.equal(await call(), 403);
    await client.get(dev(accountId, 'failures'));
    const path = `${dev(accountId, 'failures')}/allow-origin`;
    const forged = await client.post(path, { _csrf: 'forged', country: 'sg', origin });
    assert.equal(forged.status, 403);
    assert.equal(await server.service.store.origins.isAllowed(accountId, 'sg', origin), false, 'nothing changed');

    const res = await client.post(path, { country: 'sg', origin, back: `${dev(accountId, 'failures')}?code=origin_not_allowed` });
    assert.equal(res.status, 303);
    assert.match(res.location!, new RegExp(`^${dev(accountId, 'failures')}\\?code=origin_not_allowed&done=added&country=sg&origin=`));
    assert.equal(await call(), 200, 'in force on the very next request');
    const after = await client.get(res.location!);
    assert.match(text(after.body), /Allowed http:\/\/localhost:4321 for Singapore\./);
    assert.match(text(after.body), /it is allowed now/);
    assert.ok(!after.body.includes('Allow this origin'), 'no button once allowed');
    const audit = await server.service.store.audit.listForAccount(accountId, 1);
    assert.equal(audit[0]!.action, 'origin.added');
    assert.equal(audit[0]!.origin, origin);

    // A form naming an origin that cannot be registered changes nothing.
    const bad = await client.post(path, { country: 'sg', origin: 'http://evil.example' });
    assert.equal(bad.status, 400);
    assert.equal(await server.service.store.origins.isAllowed(accountId, 'sg', 'http://evil.example'), false);
  });

  it('the 403 answer points at the dashboard page that explains it', async (t) => {
    await world(t);
    const res = await server.get('/v1/listings', { key: web.key, headers: { origin: 'https://elsewhere.example' } });
    assert.equal(res.status, 403);
    assert.match(res.json.message, /Settings > Developer > Failed requests/);
  });
});

/**
 * Issue 29 items 7 and 11, through the real API and dashboard: a failed request keeps why it
 * failed, and the advice on the Failed requests list and the request-id look-up is chosen by that
 * reason (never by the key's state now, nor by the message's words); it keeps the client's
 * address; and a key in a request, in any of the issue's encodings, is in no log line and on no
 * page (D20).
 */
describe(`dashboard: why a request failed, and from where, on ${TEST_STORE} (issue 29 items 7, 11)`, () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  let web: { id: string; key: string };
  const flush = () => server.service.usage!.flush();

  /** Each test's own world (issue 42): a fresh server, an account with a key, and a member of it signed in. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { USAGE_FLUSH_INTERVAL_MS: '60000' });
    accountId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'One' }]);
    web = await server.createKey(accountId, 'sg', 'Website');
    ({ client } = await signedIn(server, accountId));
  }

  /** A page's text as read: no space before punctuation where a tag ended. */
  const read = (html: string) => text(html).replace(/ ([,.;:)])/g, '$1');
  /** The text of the Failed requests list's item of a request id (empty when not listed). */
  const listed = async (requestId: string) => {
    const res = await client.get(dev(accountId, 'failures'));
    assert.equal(res.status, 200);
    const item = res.body.split('<li class="failure"').find((part) => part.includes(requestId));
    return item === undefined ? '' : read(`<li ${item.split('</li>', 1)[0]}`);
  };
  /** The text of the request-id look-up's page. */
  const lookedUp = async (requestId: string) => {
    const res = await client.get(`${dev(accountId, 'requests')}?id=${encodeURIComponent(requestId)}`);
    assert.equal(res.status, 200, requestId);
    return read(res.body);
  };
  const idOf = (res: { headers: Record<string, string | string[] | undefined> }) => String(res.headers['x-request-id']);

  /**
   * Failed requests as stored rows of the Website key, from 203.0.113.9: one of each reason
   * (`req_stored_<reason>`), and three of a release before reasons were kept (`req_stored_old_<code>`).
   */
  async function recordStored(): Promise<void> {
    const at = new Date(server.clock.now()).toISOString();
    const row = (reason: string | null, code: string, status: number, origin: string | null = null) => ({
      account_id: accountId, key_id: web.id, at, status, code, method: 'GET', path: '/v1/listings', origin,
      request_id: `req_stored_${reason ?? `old_${code}`}`, message: 'What the API answered then.', reason, client_ip: '203.0.113.9',
    });
    const codeOf = (reason: ErrorReason): [string, number] =>
      reason.endsWith('_key') || reason.endsWith('_authorization') || reason === 'wrong_country' ? ['unauthorized', 401]
        : reason.endsWith('_origin') || reason === 'origin_not_registered' ? ['origin_not_allowed', 403]
          : ['unknown_host', 'unknown_route', 'listing_not_found'].includes(reason) ? ['not_found', 404]
            : reason === 'rate_limited' ? ['rate_limited', 429] : reason === 'method_not_allowed' ? ['method_not_allowed', 405]
              : reason === 'internal_error' || reason === 'database_unavailable' ? ['internal_error', 500] : ['bad_request', 400];
    await server.service.store.usage.recordBatch({
      counts: [],
      failures: [
        ...ERROR_REASONS.map((reason) => row(reason, ...codeOf(reason), reason.endsWith('origin') || reason === 'origin_not_registered' ? 'https://stored.example' : null)),
        // Rows of a release before reasons were kept: its key is revoked now, which says nothing of why these failed.
        row(null, 'unauthorized', 401),
        row(null, 'not_found', 404),
        row(null, 'rate_limited', 429),
      ],
    });
  }

  it("a key used on another country's host, then revoked a minute later: the advice is about the country, on the list and on the look-up", async (t) => {
    await world(t);
    const malaysia = await server.createKey(accountId, 'my', 'Malaysia site');
    const wrongHost = await server.get('/v1/listings', { key: malaysia.key });
    assert.equal(wrongHost.status, 401);
    server.clock.advance(60_000);
    await server.service.store.keys.revoke(malaysia.id, new Date(server.clock.now()).toISOString());
    await server.service.store.broadcastSettled();
    const revoked = await server.get('/v1/listings', { key: malaysia.key, host: 'api.my.localhost' });
    assert.equal(revoked.status, 401);
    await flush();

    for (const shown of [await listed(idOf(wrongHost)), await lookedUp(idOf(wrongHost))]) {
      assert.match(shown, /This is a Malaysia key sent to another country's host: call http:\/\/api\.my\.localhost(:\d+)? with it instead/);
      assert.doesNotMatch(shown, /revoked/i, 'nothing about the revocation that came later');
    }
    // The request made after the revocation is told apart: its reason is the revocation.
    for (const shown of [await listed(idOf(revoked)), await lookedUp(idOf(revoked))]) {
      assert.match(shown, /This key had been revoked when the request was made, so it was refused: create a new key/);
      assert.doesNotMatch(shown, /another country/);
    }
  });

  it('each refusal a request with a key of the account can meet is explained by its own reason', async (t) => {
    await world(t);
    await server.service.store.keys.setRateLimit(web.id, 1_000_000);
    const limited = await server.createKey(accountId, 'sg', 'Limited');
    await server.service.store.keys.setRateLimit(limited.id, 1);
    await server.service.store.broadcastSettled();
    const calls: Array<[string, () => Promise<TestResponse>, number, RegExp]> = [
      ['null origin', () => server.get('/v1/listings', { key: web.key, headers: { origin: 'null' } }), 403, /The page's origin was null .* which can never be allowed: serve the page from a real https origin/],
      ['malformed origin', () => server.get('/v1/listings', { key: web.key, headers: { origin: 'not an origin' } }), 403, /Origin header was not an origin a browser sends/],
      ['an origin that cannot be registered', () => server.get('/v1/listings', { key: web.key, headers: { origin: 'http://plain.example' } }), 403, /is not registered for Singapore, and cannot be \(only https origins, or http on localhost\)/],
      ['an origin to register', () => server.get('/v1/listings', { key: web.key, headers: { origin: 'https://shop.example' } }), 403, /The origin https:\/\/shop\.example is not registered for Singapore: allow it/],
      ['a listing not visible', () => server.get('/v1/listings/00000000-0000-4000-8000-000000000000', { key: web.key }), 404, /No active listing with this id is visible to this key/],
      ['a bad parameter', () => server.get('/v1/listings?per_page=abc', { key: web.key }), 400, /A query parameter is wrong: Query parameter "per_page"/],
      ['a refused cursor', () => server.get('/v1/listings/changes?cursor=not-a-cursor', { key: web.key }), 400, /The change feed's cursor was refused .* start again without a cursor/],
    ];
    const answers: Array<[string, TestResponse, number, RegExp]> = [];
    for (const [what, call, status, advice] of calls) answers.push([what, await call(), status, advice]);
    assert.equal((await server.get('/v1/listings', { key: limited.key })).status, 200);
    answers.push(['past the limit', await server.get('/v1/listings', { key: limited.key }), 429, /More requests a minute than this key's limit \(1 a minute now\)/]);
    await flush();
    for (const [what, res, status, advice] of answers) {
      assert.equal(res.status, status, what);
      assert.match(await listed(idOf(res)), advice, `${what}, on the list`);
      assert.match(await lookedUp(idOf(res)), advice, `${what}, on the look-up`);
    }
  });

  it('every reason reads its own advice, and a row kept before reasons were, a neutral one (whatever its key is now)', async (t) => {
    await world(t);
    const advice: Record<ErrorReason, RegExp> = {
      malformed_request: /The request itself was malformed/,
      bad_parameter: /A query parameter is wrong/,
      bad_cursor: /cursor was refused/,
      repeated_authorization: /header was sent more than once/,
      missing_key: /No key was sent: send the header Authorization: Bearer <key>/,
      malformed_authorization: /header was not Bearer and a key/,
      malformed_key: /The key was not whole/,
      unknown_key: /The key is not one the API knows/,
      revoked_key: /had been revoked when the request was made/,
      wrong_country: /Singapore key sent to another country's host/,
      null_origin: /origin was null/,
      malformed_origin: /not an origin a browser sends/,
      origin_not_registered: /The origin https:\/\/stored\.example is not registered for Singapore/,
      unknown_host: /serves no country of this API/,
      unknown_route: /No such route/,
      listing_not_found: /No active listing with this id/,
      method_not_allowed: /answers only GET, HEAD and OPTIONS/,
      rate_limited: /More requests a minute than this key's limit/,
      internal_error: /A failure on our side, not in your request/,
      database_unavailable: /Our database could not answer then/,
    };
    await recordStored();
    for (const reason of ERROR_REASONS) assert.match(await lookedUp(`req_stored_${reason}`), advice[reason], reason);

    await server.service.store.keys.revoke(web.id, new Date(server.clock.now()).toISOString());
    for (const code of ['unauthorized', 'not_found']) {
      for (const shown of [await listed(`req_stored_old_${code}`), await lookedUp(`req_stored_old_${code}`)]) {
        assert.match(shown, /This request was recorded before the dashboard kept why requests failed: the message below is what the API answered\./, code);
        assert.doesNotMatch(shown, /revoked|another country/, code);
      }
    }
    // A 429 has one reason only: an old row of it is still explained.
    assert.match(await lookedUp('req_stored_old_rate_limited'), /More requests a minute than this key's limit/);
  });

  it("a key in the path, the query or the Origin, in each of the issue's forms, is in no answer, no log line and not on the Failed requests page (D20)", async (t) => {
    await world(t);
    const caller = await server.createKey(accountId, 'sg', 'Caller');
    const pasted = generateKey('sg');
    const secret = pasted.slice('sg_live_'.length);
    const fullWidth = encodeURIComponent('sg＿live＿');
    /** The Origin header as a browser sends it: UTF-8 bytes (Node hands each byte over as a Latin-1 character). */
    const utf8Header = (value: string) => Buffer.from(value, 'utf8').toString('latin1');
    const requests: Array<[string, string, Record<string, string>]> = [
      ['double-encoded in the path', `/v1/listings/sg%255Flive%255F${secret}`, {}],
      ['after "+" in the path', `/v1/listings/sg_live_+${secret}`, {}],
      ['full-width in the path', `/v1/listings/${fullWidth}${secret}`, {}],
      ['double-encoded in a parameter', `/v1/listings?sort=sg%25255Flive%25255F${secret}`, {}],
      ['full-width in a parameter', `/v1/listings?sort=${encodeURIComponent(fullWidth)}${secret}`, {}],
      ['double-encoded in the Origin', '/v1/listings', { origin: `https://sg%255Flive%255F${secret}.example` }],
      ['after "+" in the Origin', '/v1/listings', { origin: `https://sg_live_+${secret}.example` }],
      ['full-width in the Origin', '/v1/listings', { origin: utf8Header(`https://sg＿live＿${secret}.example`) }],
    ];
    const ids: string[] = [];
    const leaks = (where: string, shown: string) => {
      for (let i = 0; i + 8 <= secret.length; i++) assert.ok(!shown.includes(secret.slice(i, i + 8)), `${where} shows "${secret.slice(i, i + 8)}" of the secret`);
    };
    for (const [what, path, headers] of requests) {
      const res = await server.get(path, { key: caller.key, headers });
      assert.ok([400, 403, 404].includes(res.status), `${what}: ${res.status}`);
      leaks(`the answer (${what})`, res.body);
      ids.push(idOf(res));
    }
    await flush();
    leaks('the log', server.logs.raw.join('\n'));
    const lines = server.logs.lines.filter((l) => ids.includes(String(l.reqId)));
    assert.equal(lines.length, requests.length, 'each request has its log line');
    assert.ok(lines.some((l) => l.path === '/v1/listings/sg%255Flive%255F[redacted]'), 'the prefix is logged as it came');

    const list = await client.get(dev(accountId, 'failures'));
    leaks('the Failed requests page', list.body);
    leaks('the Failed requests page, as read', read(list.body));
    for (const id of ids) {
      assert.match(await listed(id), /\[redacted\]/, `listed: ${id}`);
      const shown = await client.get(`${dev(accountId, 'requests')}?id=${encodeURIComponent(id)}`);
      leaks(`the look-up of ${id}`, shown.body);
      leaks(`the look-up of ${id}, as read`, read(shown.body));
    }
  });

  it("each failed request shows the client's address, on the list and on the look-up", async (t) => {
    await world(t);
    await recordStored();
    const shown = [await listed('req_stored_revoked_key'), await lookedUp('req_stored_revoked_key')];
    for (const page of shown) assert.match(page, /Client address 203\.0\.113\.9/);
    const old = await lookedUp('req_stored_old_unauthorized');
    assert.match(old, /Client address 203\.0\.113\.9/);
  });
});
