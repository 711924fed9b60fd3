import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { GROUPS_PER_PAGE } from '../../src/dashboard/failures/routes.js';
import { ACTIVITY_PAGE } from '../../src/dashboard/activity/routes.js';
import { chartScale } from '../../src/dashboard/usage/views.js';
import { TEST_STORE } from '../support/database.js';
import { dom, named, only } from '../support/html.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dev, FROM_A_PAGE, signedIn, text, type DashboardClient } from './helpers.js';

/**
 * Issue 33 item 7, the dashboard for an organisation's admin, through the real server: Usage for the
 * whole account and per key over 24 hours, 7 days or 30 days, scaled to the traffic with the limit
 * at the bars' scale; Failed requests grouped, counted and paged, telling a browser from curl;
 * keys with their limit, a link to their usage and their exact last use; Activity paged back.
 */
describe(`dashboard for the admin on ${TEST_STORE} (issue 33 item 7)`, () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;
  const flush = () => server.service.usage!.flush();
  const limit = async (keyId: string, perMinute: number) => {
    await server.service.store.keys.setRateLimit(keyId, perMinute);
    await server.service.store.broadcastSettled();
  };
  const usage = async (query = '') => {
    const res = await client.get(`${dev(accountId, 'usage')}${query}`);
    assert.equal(res.status, 200, res.body);
    return res;
  };
  const axisMax = (body: string, id: string) => Number(only(dom(body), `svg#${id}`).getAttribute('data-axis-max'));

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { USAGE_FLUSH_INTERVAL_MS: '60000' });
    accountId = await server.createAccount();
    await server.addListings(accountId, [{ title: 'One' }]);
    ({ client } = await signedIn(server, accountId));
  }

  /** A 1,000/min key with 150 requests. */
  async function busySite(): Promise<void> {
    const busy = await server.createKey(accountId, 'sg', 'Busy site');
    await limit(busy.id, 1000);
    for (let i = 0; i < 150; i++) await server.get('/v1/listings', { key: busy.key });
  }

  /** Five minutes on, a 5/min key sent three bursts of 7 two minutes apart: 5 answered and 2 refused in each. */
  async function smallWidget(): Promise<{ id: string; statuses: number[] }> {
    server.clock.advance(5 * 60_000);
    const small = await server.createKey(accountId, 'sg', 'Small widget');
    await limit(small.id, 5);
    const statuses: number[] = [];
    for (let burst = 0; burst < 3; burst++) {
      for (let i = 0; i < 7; i++) statuses.push((await server.get('/v1/listings', { key: small.key })).status);
      server.clock.advance(2 * 60_000);
    }
    return { id: small.id, statuses };
  }

  /** A 1,000/min key with 300 requests, then revoked, and one more request with it (a 401). */
  async function oldSite(): Promise<string> {
    const old = await server.createKey(accountId, 'sg', 'Old site');
    await limit(old.id, 1000);
    for (let i = 0; i < 300; i++) await server.get('/v1/listings', { key: old.key });
    await server.service.store.keys.revoke(old.id, new Date(server.clock.now()).toISOString());
    await server.service.store.broadcastSettled();
    assert.equal((await server.get('/v1/listings', { key: old.key })).status, 401);
    return old.id;
  }

  it('Usage: the axis follows the traffic, not the limit: a 1,000/min key with 150 requests gets an axis of 200 and its limit in words', async (t) => {
    await world(t);
    await busySite();
    await flush();
    const res = await usage();
    assert.equal(axisMax(res.body, 'chart-24h'), 200);
    assert.equal(axisMax(res.body, 'chart-account'), 200);
    assert.equal(dom(res.body).querySelector('line.limit'), null, 'no limit line');
    assert.match(text(res.body), /The limit, 5,000 per five minutes at this scale \(1,000\/min × 5\), is off this chart: the busiest five minutes had 150 \(3 % of it\)\./);
    assert.match(text(res.body), /Success rate 100 %/);
  });

  it('Usage: a 5/min key near its limit has the line at the bars\' scale, labelled as such, and its 429s under it explained', async (t) => {
    await world(t);
    // Three bursts of 7 within one five minutes, two minutes apart: 5 answered and 2 refused in each.
    const { id: smallId, statuses } = await smallWidget();
    assert.deepEqual(statuses.filter((s) => s === 429).length, 6);
    await flush();
    const res = await usage(`?key=${smallId}`);
    const chart = only(dom(res.body), 'svg#chart-24h');
    assert.equal(axisMax(res.body, 'chart-24h'), 25, 'the axis reaches the limit of 25 per five minutes');
    only(chart, 'line.limit');
    assert.equal(only(chart, 'text.limit-label').text, 'limit 25 per 5 min (5/min)');
    const page = text(res.body);
    assert.match(page, /The dashed line is the limit at this chart's scale: 5\/min × 5 = 25 per five minutes\./);
    assert.match(page, /a burst within one minute gets 429 s even when its five minutes stays under the line/);
    assert.match(page, /Small widget .* Success rate: 71\.4 %/);
    // 7 days: per hour, the line at 300 for a busiest hour of 21 is off the chart.
    const week = await usage(`?range=7d&key=${smallId}`);
    assert.equal(axisMax(week.body, 'chart-7d'), 25);
    assert.match(text(week.body), /The limit, 300 per hour at this scale \(5\/min × 60\), is off this chart: the busiest hour had 21 \(7 % of it\)/);
    assert.equal(named(dom(week.body), 'a', 'Last 7 days').getAttribute('aria-current'), 'page');
  });

  it('Usage: every key together with a breakdown per key and the success rate; it opens on the busiest active key, never a revoked one', async (t) => {
    await world(t);
    await busySite();
    await smallWidget();
    const oldId = await oldSite();
    await flush();
    const res = await usage();
    const page = text(res.body);
    // 150 + 21 + 300 + 1 requests, of which 6 got 429 and 1 got 401.
    assert.match(page, /Requests 472 Success rate 98\.5 % 200 and 304 Failed 7/);
    assert.match(text(only(dom(res.body), 'h2#chart-heading').innerHTML), /^Busy site/, 'the busiest active key, not the busier revoked one');
    // Each row's key label: the first words of its header cell (its display prefix and badge follow).
    const rows = dom(res.body).querySelectorAll('table.usage-keys tbody th[scope=row]').map((th) => th.childNodes[0]!.text.trim());
    assert.deepEqual(rows.slice(0, 3), ['Old site', 'Busy site', 'Small widget'], 'the breakdown, busiest first');
    const breakdown = text(only(dom(res.body), 'table.usage-keys').innerHTML);
    assert.match(breakdown, /Old site sg_live_\w{4}…\w{4} Revoked Singapore sg 301 99\.6 % 1 1,000\/min Show/);
    assert.match(breakdown, /Small widget sg_live_\w{4}…\w{4} Singapore sg 21 71\.4 % 6 5\/min Show/);
    // The period is kept when another key is shown, and the key when the period changes.
    assert.match(res.body, new RegExp(`href="${dev(accountId, 'usage')}\\?key=${oldId}#chart-heading"`));
    const month = await usage(`?range=30d&key=${oldId}`);
    assert.match(month.body, new RegExp(`href="${dev(accountId, 'usage')}\\?range=7d&amp;key=${oldId}" *>Last 7 days`));
    assert.equal(axisMax(month.body, 'chart-account'), 500);
    for (const bad of ['?range=1y', '?range=24h&key=nope']) assert.equal((await client.get(`${dev(accountId, 'usage')}${bad}`)).status, 404, bad);
  });

  it('Usage: the account-wide chart reads stored buckets only (a GROUP BY), the same numbers as the keys summed', async (t) => {
    await world(t);
    await busySite();
    await smallWidget();
    await oldSite();
    await flush();
    const rows = await server.service.store.usage.series(accountId, { span: 3600, since: '2026-10-01T00:00:00.000Z', byDay: true });
    const byOutcome = new Map<string, number>();
    for (const r of rows) byOutcome.set(r.outcome, (byOutcome.get(r.outcome) ?? 0) + r.n);
    assert.deepEqual(Object.fromEntries(byOutcome), { '200': 465, rate_limited: 6, unauthorized: 1 });
    assert.ok(rows.every((r) => /^\d{4}-\d{2}-\d{2}$/.test(r.bucket_start)), 'summed per UTC day by the query');
    assert.deepEqual(chartScale(0), { max: 5, limitShown: false });
    assert.deepEqual(chartScale(30, 25), { max: 50, limitShown: true });
    assert.deepEqual(chartScale(13, 25), { max: 25, limitShown: true });
    assert.deepEqual(chartScale(12, 25), { max: 20, limitShown: false });
  });

  it('Failed requests: eleven alike 429s are one group with its count, first and last seen, and each request listed under it', async (t) => {
    await world(t);
    const poller = await server.createKey(accountId, 'sg', 'Poller');
    await limit(poller.id, 1);
    assert.equal((await server.get('/v1/listings', { key: poller.key })).status, 200);
    const ids: string[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await server.get('/v1/listings', { key: poller.key });
      assert.equal(res.status, 429);
      ids.push(String(res.headers['x-request-id']));
      server.clock.advance(1000);
    }
    await flush();
    const res = await client.get(`${dev(accountId, 'failures')}?key=${poller.id}`);
    assert.equal(res.status, 200);
    const groups = dom(res.body).querySelectorAll('li.failure');
    assert.equal(groups.length, 1, 'one group');
    const group = text(groups[0]!.innerHTML);
    assert.match(group, /^.*429 rate_limited 2026-11-22 \d\d:\d\d UTC 11 requests Poller/);
    assert.match(group, /First seen 2026-11-22 \d\d:\d\d UTC Last seen 2026-11-22 \d\d:\d\d UTC/);
    assert.match(group, /All 11 requests/);
    for (const id of ids) assert.ok(group.includes(id), `request ${id} is listed in its group`);
    assert.match(text(res.body), /11 failed requests in 1 group\./);
  });

  it('Failed requests: paged by groups (an SQL GROUP BY with LIMIT and OFFSET), filters kept from page to page', async (t) => {
    await world(t);
    const key = await server.createKey(accountId, 'sg', 'Many origins');
    const at = (i: number) => new Date(server.clock.now() + i * 1000).toISOString();
    const origins = GROUPS_PER_PAGE + 7;
    await server.service.store.usage.recordBatch({
      counts: [],
      failures: Array.from({ length: origins }, (_, i) => ({
        account_id: accountId, key_id: key.id, at: at(i), status: 403, code: 'origin_not_allowed', method: 'GET', path: '/v1/listings',
        origin: `https://site-${String(i).padStart(3, '0')}.example`, request_id: `req_many_${i}`, message: 'Origin not allowed.', reason: 'origin_not_registered',
        client_ip: '203.0.113.7', sec_fetch: 'cross-site cors empty',
      })),
    });
    const path = `${dev(accountId, 'failures')}?key=${key.id}&code=origin_not_allowed`;
    const first = await client.get(path);
    assert.equal(dom(first.body).querySelectorAll('li.failure').length, GROUPS_PER_PAGE);
    assert.match(text(first.body), new RegExp(`${origins} failed requests in ${origins} groups, groups 1–${GROUPS_PER_PAGE} shown\\. .*Page 1 of 2`));
    assert.ok(first.body.includes(`https://site-${String(origins - 1).padStart(3, '0')}.example`) && !first.body.includes('https://site-000.example'), 'the most recently seen first');
    const next = only(dom(first.body), 'a[rel=next]').getAttribute('href')!;
    assert.equal(next, `${path}&page=2`);
    const second = await client.get(next);
    assert.equal(dom(second.body).querySelectorAll('li.failure').length, 7);
    assert.ok(second.body.includes('https://site-000.example'));
    assert.equal(only(dom(second.body), 'a[rel=prev]').text, 'Newer');
    // The "back" of each Allow form returns to this page of this filter.
    assert.ok(second.body.includes(`name="back" value="${`${path}&page=2`.replace(/&/g, '&amp;')}"`));
    assert.match(text((await client.get(`${path}&page=9`)).body), /There is no page 9\./);
    for (const bad of ['0', 'x', '-1', '99999']) assert.equal((await client.get(`${path}&page=${bad}`)).status, 404, bad);
    const groups = await server.service.store.usage.failureGroups(accountId, { keyId: key.id }, { limit: 5, offset: 55 });
    assert.deepEqual(groups.groups.map((g) => g.origin), ['https://site-001.example', 'https://site-000.example']);
    assert.equal(groups.total, origins);
  });

  it('Allow this origin says whether a browser sent the request: a forged curl Origin is told apart from a real page', async (t) => {
    await world(t);
    const key = await server.createKey(accountId, 'sg', 'Shop');
    const fromCurl = await server.get('/v1/listings', { key: key.key, headers: { origin: 'https://evil.example' } });
    const fromPage = await server.get('/v1/listings', { key: key.key, headers: { origin: 'https://shop.example', ...FROM_A_PAGE } });
    assert.equal(fromCurl.status, 403);
    assert.equal(fromPage.status, 403);
    await flush();
    const res = await client.get(`${dev(accountId, 'failures')}?key=${key.id}`);
    const groups = res.body.split('<li class="failure"').slice(1).map((g) => g.split('</li>', 1)[0]!);
    const curl = groups.find((g) => g.includes('https://evil.example'))!;
    const real = groups.find((g) => g.includes('https://shop.example'))!;
    assert.match(text(curl), /Not from a browser: sent without the Sec-Fetch-\* headers every current browser adds, so by curl, a script or a server that set Origin itself\./);
    assert.doesNotMatch(curl, /class="primary small">Allow this origin/);
    assert.match(curl, /class="secondary small">Allow anyway/);
    assert.match(text(real), /Sent by a browser: a page on https:\/\/shop\.example called the API/);
    assert.match(real, /class="primary small">Allow this origin/);
    // The look-up of each says it too.
    const lookUp = async (r: typeof fromCurl) => text((await client.get(`${dev(accountId, 'requests')}?id=${r.headers['x-request-id']}`)).body);
    assert.match(await lookUp(fromCurl), /Sent by Not a browser \(no Sec-Fetch-\* headers\)/);
    assert.match(await lookUp(fromPage), /Sent by A browser \( Sec-Fetch-Site: cross-site , Mode: cors , Dest: empty \)/);
    const stored = await server.service.store.usage.failureByRequestId(accountId, String(fromPage.headers['x-request-id']));
    assert.equal(stored?.sec_fetch, 'cross-site cors empty');
  });

  it('after Allow this origin the confirmation is at the top of the page, and the redirect takes the browser to it', async (t) => {
    await world(t);
    await client.get(dev(accountId, 'failures'));
    const res = await client.post(`${dev(accountId, 'failures')}/allow-origin`, { country: 'sg', origin: 'https://shop.example', back: `${dev(accountId, 'failures')}?page=1` });
    assert.equal(res.status, 303);
    assert.match(res.location!, /#notice$/);
    const after = await client.get(res.location!);
    const notice = only(dom(after.body), '#notice');
    assert.equal(notice.getAttribute('role'), 'status');
    assert.match(notice.text, /^Allowed https:\/\/shop\.example for Singapore\./);
  });

  it('Keys: each key\'s limit and a link to its usage; the revoke page shows the last use to the second, before it is written', async (t) => {
    await world(t);
    // A key of the default limit beside it.
    await server.createKey(accountId, 'sg', 'Default limit');
    const key = await server.createKey(accountId, 'sg', 'Used just now');
    await limit(key.id, 250);
    assert.equal((await server.get('/v1/listings', { key: key.key })).status, 200);
    const usedAt = new Date(server.clock.now()).toISOString();
    server.clock.advance(4000);
    assert.equal((await server.service.store.keys.get(key.id))!.last_used_at, null, 'not written yet: last-used times are written in batches');
    const revoke = await client.get(`${dev(accountId, 'keys')}/${key.id}/revoke`);
    assert.match(text(revoke.body), new RegExp(`Last used ${usedAt.slice(0, 10)} ${usedAt.slice(11, 19)} UTC \\(4 seconds ago\\)`));
    assert.match(text(revoke.body), /Limit 250 requests a minute/);
    assert.equal(named(dom(revoke.body), 'a', 'See this key\'s usage').getAttribute('href'), `${dev(accountId, 'usage')}?key=${key.id}#chart-heading`);

    const keys = await client.get(dev(accountId, 'keys'));
    const row = only(dom(keys.body), `tr#key-${key.id}`);
    assert.equal(only(row, 'td[data-label="Last used"] time').getAttribute('datetime'), usedAt);
    const limitCell = only(row, 'td[data-label="Limit"]');
    assert.match(text(limitCell.innerHTML), /^250\/min Usage/);
    assert.equal(only(limitCell, 'a').getAttribute('href'), `${dev(accountId, 'usage')}?key=${key.id}#chart-heading`);
    assert.match(text(keys.body), /60\/min \(default\)/);
    const opened = await usage(`?key=${key.id}`);
    assert.match(text(only(dom(opened.body), 'h2#chart-heading').innerHTML), /^Used just now/);

    // Once written, the same.
    await server.service.lastUsed.flush();
    assert.equal((await server.service.store.keys.get(key.id))!.last_used_at, usedAt);
    assert.match(text((await client.get(`${dev(accountId, 'keys')}/${key.id}/revoke`)).body), new RegExp(`Last used ${usedAt.slice(0, 10)} ${usedAt.slice(11, 19)} UTC`));
    const unused = await server.createKey(accountId, 'sg', 'Never used');
    assert.match(text((await client.get(`${dev(accountId, 'keys')}/${unused.id}/revoke`)).body), /Last used Never/);
  });

  it(`Activity pages back past 200 entries, ${ACTIVITY_PAGE} a page, to the first`, async (t) => {
    await world(t);
    const own = await server.createAccount();
    const { client: member } = await signedIn(server, own);
    const entries = 230;
    for (let i = 0; i < entries; i++) {
      await server.service.store.audit.record({
        account_id: own, at: new Date(Date.parse('2026-01-01T00:00:00.000Z') + i * 60_000).toISOString(), actor_user_id: null, actor_email: 'operator (CLI)',
        action: 'origin.added', key_id: null, key_display: null, key_label: null, previous_label: null, country: 'sg', origin: `https://n${i}.example`,
      });
    }
    const seen: string[] = [];
    let path: string | undefined = dev(own, 'activity');
    let pages = 0;
    while (path !== undefined) {
      const res = await member.get(path);
      assert.equal(res.status, 200);
      seen.push(...[...res.body.matchAll(/allowed origin <code>https:\/\/n(\d+)\.example<\/code>/g)].map((m) => m[1]!));
      path = dom(res.body).querySelector('a[rel=next]')?.getAttribute('href') ?? undefined;
      if (path === undefined) assert.match(text(res.body), /The first entry of your account\./);
      if (pages > 0) assert.equal(named(dom(res.body), 'a', 'Newest entries').getAttribute('href'), dev(own, 'activity'));
      pages++;
    }
    assert.equal(pages, Math.ceil(entries / ACTIVITY_PAGE));
    assert.deepEqual(seen, Array.from({ length: entries }, (_, i) => String(entries - 1 - i)), 'every entry once, newest first');
    // Another account's entry as the cursor, or no entry: 404, as for anything that does not exist.
    await server.service.store.audit.record({
      account_id: accountId, at: new Date(server.clock.now()).toISOString(), actor_user_id: null, actor_email: 'operator (CLI)',
      action: 'origin.added', key_id: null, key_display: null, key_label: null, previous_label: null, country: 'sg', origin: 'https://shop.example',
    });
    const theirs = (await server.service.store.audit.listForAccount(accountId, 1))[0]!;
    for (const cursor of [theirs.id, randomUUID(), 'nope']) assert.equal((await member.get(`${dev(own, 'activity')}?before=${cursor}`)).status, 404, cursor);
  });
});
