import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { addMember, FROM_A_PAGE } from '../dashboard/helpers.js';
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The dashboard and the API in a real browser: Debian's Chromium driven by playwright-core. Runs
 * whenever /usr/bin/chromium exists (CI installs it) and says plainly that it was skipped when not.
 */
const available = chromiumAvailable;
if (!available) console.log(`SKIPPED: the browser suite needs ${CHROMIUM} (apt-get install chromium); it did not run.`);

/**
 * Where the screenshot of the keys page is written: the README's copy with UPDATE_SCREENSHOTS=1
 * (so a plain test run leaves the tree clean), else a temp file.
 */
const screenshotPath = (name: string) => process.env.UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL(`../../../docs/${name}.png`, import.meta.url))
  : join(tmpdir(), `listings-${name}-${process.pid}.png`);
const SCREENSHOT = screenshotPath('keys-page');

/**
 * A tiny web page that calls the API from the browser with the key in its URL fragment (never sent
 * to a server) and shows the listings it got, or the error code: what a web developer would write.
 */
const CLIENT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Our listings</title></head>
<body><h1>Our listings</h1><p id="status">loading</p><ul id="listings"></ul>
<script>
  const params = new URLSearchParams(location.hash.slice(1));
  fetch(params.get('api') + '/v1/listings', { headers: { Authorization: 'Bearer ' + params.get('key') } })
    .then(async (res) => {
      const body = await res.json();
      if (!res.ok) { document.getElementById('status').textContent = 'error ' + res.status + ' ' + body.error; return; }
      for (const listing of body.items) {
        const li = document.createElement('li');
        li.textContent = listing.title;
        document.getElementById('listings').append(li);
      }
      document.getElementById('status').textContent = 'ok ' + body.total;
    })
    .catch((error) => { document.getElementById('status').textContent = 'network error ' + error.message; });
</script></body></html>`;

// Without Chromium: one skipped test, so that the runner's count says so too.
if (!available) it('dashboard in a real browser (Chromium)', { skip: `${CHROMIUM} not found: browser suite SKIPPED` }, () => {});

describe('dashboard in a real browser (Chromium): sign in, create a key, use it, add an origin, CORS, revoke', { skip: !available }, () => {
  let server: TestServer;
  let accountId: string;
  let member: { email: string; password: string };
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  let sitePort: number;
  let site: Server;
  let key: string;
  const problems: string[] = [];

  const dashboard = (path = '') => `http://localhost:${server.dashboardPort}${path}`;
  const api = () => `http://api.localhost:${server.port}`;

  // Shared on purpose (issue 42): one Chromium session runs these tests; a browser per test would cost seconds each.
  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1' });
    accountId = await server.createAccount();
    await server.service.store.db.updateTable('accounts').set({ name: 'Harbourfront Realty' }).where('id', '=', accountId).execute();
    await server.addListings(accountId, [
      { title: 'Ground-floor shop, Tanjong Pagar' },
      { title: 'Office suite, Marina Bay', is_featured: true },
      { country: 'my', currency: 'MYR', title: 'Cafe unit, Bangsar' },
    ]);
    member = await addMember(server, accountId, 'admin@harbourfront.example');

    site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(CLIENT_PAGE));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    sitePort = (site.address() as { port: number }).port;

    browser = await launchChromium({ viewport: { width: 1280, height: 860 } });
    context = browser.context;
    page = watched(context.pages()[0] ?? (await context.newPage()));
  });

  /** Anything the dashboard's pages complain about (a CSP violation, a script error) fails the suite. */
  function watched(tab: Page): Page {
    tab.on('console', (message) => {
      // "Failed to load resource" is the browser noting a 4xx page, such as the form refused on purpose below.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text());
    });
    tab.on('response', (response) => {
      if (response.url().includes('/static/') && response.status() !== 200) problems.push(`${response.status()} ${response.url()}`);
    });
    tab.on('pageerror', (error) => problems.push(error.message));
    return tab;
  }

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await server?.close();
  });

  /** Opens the tiny client page on an origin and returns what it shows. */
  async function clientPage(origin: string): Promise<{ status: string; listings: string[] }> {
    const tab = await context.newPage();
    try {
      await tab.goto(`${origin}/#${new URLSearchParams({ api: api(), key })}`);
      await tab.waitForFunction(() => document.getElementById('status')!.textContent !== 'loading');
      return { status: (await tab.textContent('#status'))!, listings: await tab.locator('#listings li').allTextContents() };
    } finally {
      await tab.close();
    }
  }

  it('signs in with email and password and lands on the keys page, which says what to do first', async () => {
    await page.goto(dashboard('/'));
    assert.equal(new URL(page.url()).pathname, '/sign-in');
    // A wrong password first: the email is kept and the cursor is in the password field, to type it again.
    await page.fill('#email', member.email);
    await page.fill('#password', 'not the password');
    await page.press('#password', 'Enter');
    await page.waitForSelector('#sign-in-error');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password');
    assert.equal(await page.inputValue('#email'), member.email);
    await page.keyboard.type(member.password);
    await page.press('#password', 'Enter');
    await page.waitForURL(`**/accounts/${accountId}/settings/developer/keys`);
    assert.equal(await page.textContent('h1'), 'API keys');
    assert.match((await page.textContent('main'))!, /No keys yet\./);
  });

  it('creates a key with the keyboard alone, reads it from the page once, copies it, and the API answers 200', async () => {
    await page.focus('#label');
    await page.keyboard.type('Website (production)');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'country');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Create key');
    await page.keyboard.press('Enter');
    await page.waitForSelector('text=Copy your new key now');
    // Focus is on the Copy button, ready for Enter.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-copy')), 'new-key');

    key = (await page.textContent('#new-key'))!.trim();
    assert.match(key, /^sg_live_[A-Za-z0-9]{38}$/);
    assert.match((await page.textContent('.alert.warning'))!, /This is the only time the key is shown/);
    assert.equal(await page.textContent('#curl-line'), `curl -H "Authorization: Bearer ${key}" ${api()}/v1/listings`);

    // The copy button (hidden without script) copies the key.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dashboard() });
    await page.click('button[data-copy="new-key"]');
    await page.waitForFunction(() => document.querySelector('.copy-status')!.textContent !== '');
    assert.equal(await page.textContent('.copy-status'), 'Copied to the clipboard.');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);

    const res = await server.get('/v1/listings', { key });
    assert.equal(res.status, 200);
    assert.equal(res.json.total, 2);
  });

  it('back on the list the key shows only as prefix and last four, with its label, country and status', async () => {
    await page.click('text=I have stored it: back to keys');
    await page.waitForSelector('table.keys');
    const row = page.locator('table.keys tbody tr').first();
    const cells = await row.locator('th, td').allInnerTexts();
    assert.equal(cells[0], 'Website (production)');
    assert.match(cells[1]!, /Singapore/);
    assert.equal(cells[2], `${key.slice(0, 12)}…${key.slice(-4)}`);
    assert.match(cells[5]!, /Active/);
    assert.ok(!(await page.content()).includes(key), 'the full key is not shown again');
  });

  it('adds a browser origin: a malformed one is refused with the error next to the field, then the right one is listed', async () => {
    await page.click('nav.tabs >> text=Allowed origins');
    await page.waitForSelector('#origin-sg');
    assert.match((await page.textContent('.callout'))!, /401 unauthorized means the key itself is not accepted/);

    await page.fill('#origin-sg', `http://localhost:${sitePort}/our-listings`);
    await page.click('#country-sg button:has-text("Add origin")');
    await page.waitForSelector('#origin-sg-error');
    assert.match((await page.textContent('#origin-sg-error'))!, /has a path, query or fragment/);
    assert.equal(await page.getAttribute('#origin-sg', 'aria-invalid'), 'true');
    const next = await page.evaluate(() => {
      const error = document.getElementById('origin-sg-error')!;
      const input = document.getElementById('origin-sg')!;
      return input.compareDocumentPosition(error) & Node.DOCUMENT_POSITION_FOLLOWING ? input.parentElement === error.parentElement : false;
    });
    assert.ok(next, 'the error is in the field, right after the input');

    await page.fill('#origin-sg', `http://localhost:${sitePort}`);
    await page.click('#country-sg button:has-text("Add origin")');
    await page.waitForSelector(`text=Allowed http://localhost:${sitePort} for Singapore`);
    assert.deepEqual(await page.locator('#country-sg ul.origins code').allTextContents(), [`http://localhost:${sitePort}`]);
  });

  it('CORS: a page served from the registered origin fetches the listings with the key from the browser', async () => {
    const shown = await clientPage(`http://localhost:${sitePort}`);
    assert.equal(shown.status, 'ok 2');
    assert.deepEqual(shown.listings, ['Office suite, Marina Bay', 'Ground-floor shop, Tanjong Pagar']);
  });

  it('CORS: the same page from an unregistered origin reads the error code origin_not_allowed (403, D18)', async () => {
    const shown = await clientPage(`http://127.0.0.1:${sitePort}`);
    assert.equal(shown.status, 'error 403 origin_not_allowed');
    assert.deepEqual(shown.listings, []);
  });

  it('Failed requests: the refused page is listed with how to fix it; Allow this origin fixes it in one click and the page then works', async () => {
    const origin = `http://127.0.0.1:${sitePort}`;
    assert.equal((await clientPage(origin)).status, 'error 403 origin_not_allowed');
    await server.service.usage!.flush();
    await page.click('nav.tabs >> text=Failed requests');
    await page.waitForSelector('ol.failures');
    const row = page.locator(`li.failure:has(dd code:text-is("${origin}"))`).first();
    assert.match(await row.locator('.fix').innerText(), new RegExp(`The origin ${origin.replace(/\./g, '\\.')} is not registered for Singapore`));
    assert.match(await row.locator('.failure-head').innerText(), /403 origin_not_allowed[\s\S]*Website \(production\)/);
    // Chromium sent its Fetch Metadata: the list says a page on the origin called the API.
    assert.match(await row.locator('.source').innerText(), new RegExp(`^Sent by a browser: a page on ${origin.replace(/\./g, '\\.')} called the API`));
    await row.locator('button:has-text("Allow this origin")').click();
    await page.waitForSelector('.alert.success');
    assert.match((await page.textContent('.alert.success'))!, new RegExp(`Allowed ${origin.replace(/\./g, '\\.')} for Singapore`));
    const shown = await clientPage(origin);
    assert.equal(shown.status, 'ok 2', 'the page works now');
    assert.deepEqual(shown.listings, ['Office suite, Marina Bay', 'Ground-floor shop, Tanjong Pagar']);
    await page.click('nav.tabs >> text=Activity');
    assert.match((await page.textContent('ol.activity'))!, new RegExp(`allowed origin ${origin.replace(/\./g, '\\.')} for Singapore`));
  });

  it('revokes the key after a confirmation step; the API answers 401 at once, in curl and in the browser', async () => {
    // A second key first, so the list (and the README screenshot) shows an active and a revoked key.
    await page.click('nav.tabs >> text=API keys');
    await page.fill('#label', 'Staging server');
    await page.selectOption('#country', 'my');
    await page.click('button:has-text("Create key")');
    await page.waitForSelector('#new-key');
    await page.click('text=I have stored it: back to keys');

    await page.click('a:has-text("Revoke key Website (production)")');
    await page.waitForSelector('h1:has-text("Revoke key")');
    assert.equal(await page.textContent('h1'), 'Revoke key "Website (production)"?');
    // Used by the pages above a moment ago: to the second, whether or not its batch was written yet.
    assert.match((await page.textContent('#last-used'))!, /^2026-11-22 \d\d:\d\d:\d\d UTC \(\d+ seconds? ago\)$/);
    assert.equal((await server.get('/v1/listings', { key })).status, 200, 'not yet: only asked');
    await page.click('button:has-text("Revoke key")');
    await page.waitForSelector('.alert.success');
    assert.match((await page.textContent('.alert.success'))!, /Revoked key "Website \(production\)"/);

    const res = await server.get('/v1/listings', { key });
    assert.equal(res.status, 401);
    assert.equal(res.json.error, 'unauthorized');
    assert.equal((await clientPage(`http://localhost:${sitePort}`)).status, 'error 401 unauthorized');

    const revokedRow = page.locator('tr.revoked');
    assert.match((await revokedRow.innerText()), /Website \(production\)[\s\S]*Revoked/);
    assert.match((await page.textContent('ol.activity'))!, /revoked key Website \(production\)/);

    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(existsSync(SCREENSHOT));
  });

  it('Usage and Failed requests after a day of a widget\'s traffic: the account and the busiest active key over 24 hours (the limit at the bars\' scale) and 7 days, and the failures grouped', async () => {
    // A day of real requests, made by moving the injected clock through it (the API only: the
    // dashboard session is not touched until the clock is back).
    const now = server.clock.ms;
    server.clock.ms = now - 24 * 3_600_000 + 10 * 60_000;
    const widget = await server.createKey(accountId, 'sg', 'Listings widget');
    await server.service.store.keys.setRateLimit(widget.id, 20);
    const refused = 'https://www.harbourfront-realty.example';
    const etag = String((await server.get('/v1/listings', { key: widget.key })).headers.etag);
    for (let step = 0; step < 71; step++) {
      const hour = (step / 3 + 8) % 24;
      const busy = Math.round(4 + 14 * Math.max(0, Math.sin(((hour - 6) / 16) * Math.PI)));
      for (let i = 0; i < busy; i++) await server.get('/v1/listings', { key: widget.key });
      for (let i = 0; i < Math.round(busy / 2); i++) await server.get('/v1/listings', { key: widget.key, headers: { 'if-none-match': etag } });
      if (step === 40) for (let i = 0; i < 60; i++) await server.get('/v1/listings', { key: widget.key }); // a polling loop: past the limit
      // The widget on the organisation's new site, in visitors' browsers (their Fetch Metadata with the Origin).
      if (step % 9 === 4) await server.get('/v1/listings', { key: widget.key, headers: { origin: refused, ...FROM_A_PAGE } });
      // Someone trying the key with curl and a made-up Origin: no Fetch Metadata.
      if (step === 30 || step === 31) await server.get('/v1/listings', { key: widget.key, headers: { origin: 'https://evil.example' } });
      if (step % 17 === 8) await server.get('/v1/listings?per_page=abc', { key: widget.key });
      server.clock.advance(20 * 60_000);
    }
    server.clock.ms = now;
    assert.equal((await server.get('/v1/listings', { key })).status, 401, 'the revoked key');
    await server.service.usage!.flush();

    await page.click('nav.tabs >> text=Usage');
    await page.waitForSelector('svg#chart-24h');
    // It opens on the busiest active key (the revoked one was called too), under the account's chart.
    assert.match((await page.textContent('#chart-heading'))!, /Listings widget/);
    assert.ok(await page.locator('svg#chart-account rect.o-200').count() > 50, 'every key together');
    assert.match((await page.locator('ul.stats').innerText()), /Requests\s+[\d,]+\s+Success rate\s+\d+\.\d %/);
    assert.equal(await page.locator('table.usage-keys tbody tr').count(), 3);
    // The axis reaches the limit (100 per five minutes for 20/min), and the line says so.
    assert.equal(await page.locator('svg#chart-24h').getAttribute('data-axis-max'), '100');
    assert.ok(await page.locator('svg#chart-24h line.limit').count() === 1, 'the limit line');
    assert.equal(await page.textContent('svg#chart-24h text.limit-label'), 'limit 100 per 5 min (20/min)');
    assert.match((await page.textContent('.chart-note'))!, /a burst within one minute gets 429s even when its five minutes stays under the line/);
    assert.ok(await page.locator('svg#chart-24h rect.o-200').count() > 50);
    assert.ok(await page.locator('svg#chart-24h rect.o-rate_limited').count() >= 1);
    assert.match((await page.textContent('.totals-grid'))!, /429 rate_limited: \d+/);
    await page.locator('details.numbers summary').first().click();
    assert.ok(await page.locator('table.numbers-table tbody tr').first().isVisible(), 'the table of the same numbers opens');
    await page.locator('details.numbers summary').first().click();
    await page.screenshot({ path: screenshotPath('usage-page'), fullPage: true });
    await page.click('nav.segmented >> text=Last 7 days');
    await page.waitForSelector('svg#chart-7d');
    assert.equal(await page.getAttribute('nav.segmented a[aria-current="page"]', 'href'), `/accounts/${accountId}/settings/developer/usage?range=7d`);
    assert.match((await page.textContent('#chart-heading'))!, /Listings widget/);

    await page.click('nav.tabs >> text=Failed requests');
    await page.waitForSelector('ol.failures');
    const fixes = (await page.locator('.fix').allInnerTexts()).join('\n');
    assert.match(fixes, /This key had been revoked when the request was made/);
    assert.match(fixes, /More requests a minute than this key's limit \(20 a minute now\)/);
    assert.match(fixes, /A query parameter is wrong: Query parameter "per_page"/);
    assert.match(fixes, new RegExp(`The origin ${refused.replace(/\./g, '\\.')} is not registered for Singapore`));
    // The widget's own failures, as a member filters them: a refused origin (with its button), the
    // polling loop's 429s, a malformed parameter.
    await page.selectOption('#filter-key', widget.id);
    await page.click('button:has-text("Filter")');
    await page.waitForSelector('ol.failures');
    // Grouped: the refused origin (7 requests from visitors' browsers; the eighth came in the polling
    // loop's minute and got 429), the made-up one from curl, the polling loop's 429s.
    const first = page.locator('li.failure').first();
    assert.equal(await first.getAttribute('data-code'), 'origin_not_allowed');
    assert.equal(await first.getAttribute('data-count'), '7');
    assert.match(await first.locator('.source').innerText(), /^Sent by a browser/);
    assert.ok(await first.locator('button:has-text("Allow this origin")').isVisible());
    const forged = page.locator('li.failure:has(dd code:text-is("https://evil.example"))');
    assert.equal(await forged.getAttribute('data-count'), '2');
    assert.match(await forged.locator('.source').innerText(), /^Not from a browser/);
    assert.equal(await forged.locator('button:has-text("Allow this origin")').count(), 0);
    assert.ok(await forged.locator('button:has-text("Allow anyway")').isVisible());
    // (The visitor's request in that minute is a 429 group of its own: it has an origin.)
    const limited = page.locator('li.failure[data-code="rate_limited"]').filter({ hasNot: page.locator('dt:text-is("Origin")') });
    assert.equal(await limited.count(), 1, 'the polling loop\'s 429s are one group');
    assert.ok(Number(await limited.getAttribute('data-count')) > 20);
    await limited.locator('details.group-requests summary').click();
    assert.ok(await limited.locator('table.requests-table tbody tr').first().isVisible(), 'its requests open under it');
    await limited.locator('details.group-requests summary').click();
    await page.screenshot({ path: screenshotPath('failed-requests-page'), fullPage: true });
  });

  it('Webhooks: adds an endpoint, copies its secret once, sends a test event and sees the attempt (D24)', async () => {
    await page.goto(dashboard(`/accounts/${accountId}/settings/developer/keys`));
    await page.click('nav.tabs >> text=Webhooks');
    await page.waitForSelector('h1:has-text("Webhooks")');
    await page.fill('#webhook-url', 'http://example.com/hooks');
    await page.click('button:has-text("Add endpoint")');
    assert.match((await page.textContent('#webhook-url-error'))!, /use https/);
    // The site's own server answers 200 to the POST: a delivered test event.
    await page.fill('#webhook-url', `http://127.0.0.1:${sitePort}/hooks/listings`);
    await page.click('button:has-text("Add endpoint")');
    const secret = (await page.textContent('#webhook-secret'))!.trim();
    assert.match(secret, /^whsec_/);
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Copy secret');
    await page.click('button:has-text("Copy secret")');
    await page.waitForFunction(() => document.querySelector('.copy-status')?.textContent !== '');
    assert.match((await page.textContent('.copy-status'))!, /Copied|Selected/);
    await page.click('text=Back to webhooks');
    await page.click('button:has-text("Send test event")');
    await page.waitForSelector('table.attempts tbody tr');
    assert.match((await page.textContent('[role=status]'))!, /Test event delivered/);
    assert.match((await page.locator('table.attempts tbody tr').first().innerText()), /webhook\.test[\s\S]*HTTP 200/);
    assert.equal(await page.locator('body').evaluate((body) => body.textContent!.includes('whsec_')), false, 'the list never shows the secret');
    await page.screenshot({ path: screenshotPath('webhooks-page'), fullPage: true });
  });

  describe('on a phone (390 x 844)', () => {
    const PHONE = { width: 390, height: 844 };
    let phone: Page;
    before(async () => {
      phone = watched(await context.newPage());
      await phone.setViewportSize(PHONE);
    });
    after(() => phone?.close());

    const pageWidth = () => phone.evaluate(() => document.documentElement.scrollWidth);
    /** The element is shown and lies within the screen's width. */
    async function inView(locator: ReturnType<Page['locator']>, what: string): Promise<void> {
      assert.ok(await locator.isVisible(), `${what} is visible`);
      const box = (await locator.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= PHONE.width, `${what} is within the screen: ${JSON.stringify(box)}`);
    }

    it('the keys page fits the screen: a card per key, with each Status, Rename and Revoke in view', async () => {
      await server.createKey(accountId, 'sg', 'Website (production) for the Orchard Road flagship store and its booking widget');
      await server.createKey(accountId, 'my', `Kiosk-${'x'.repeat(150)}`);
      await server.createKey(accountId, 'sg', 'Staging');
      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/keys`));
      assert.ok(await pageWidth() <= PHONE.width, `page is ${await pageWidth()} px wide`);

      const rows = phone.locator('table.keys tbody tr');
      assert.ok((await rows.count()) >= 5);
      for (let i = 0; i < (await rows.count()); i++) {
        const row = rows.nth(i);
        const label = (await row.locator('th').innerText()).slice(0, 20);
        await inView(row.locator('td[data-label="Status"] .badge'), `Status of ${label}`);
        if ((await row.getAttribute('class')) === 'revoked') continue;
        await inView(row.locator('summary'), `Rename of ${label}`);
        await inView(row.locator('a.button:has-text("Revoke")'), `Revoke of ${label}`);
      }
      // Each cell is labelled with its column's name (the header row is hidden on a phone).
      const labels = await rows.first().locator('td[data-label]').evaluateAll((cells) => cells.map((c) => getComputedStyle(c, '::before').content));
      assert.deepEqual(labels, ['"Country"', '"Key"', '"Created"', '"Last used"', '"Status"', '"Limit"']);
      await inView(rows.first().locator('a.usage-link'), 'the link to the key\'s usage');

      // The rename panel opens within the card.
      await rows.first().locator('summary').click();
      await inView(rows.first().locator('input[name="label"]'), 'the rename field');
      assert.ok(await pageWidth() <= PHONE.width);
    });

    it('after creating a key the Copy button has the focus; a reload of that page creates nothing', async () => {
      const before = (await server.service.store.keys.listForAccount(accountId)).length;
      await phone.fill('#label', 'Phone app');
      await phone.click('button:has-text("Create key")');
      await phone.waitForSelector('#new-key');
      assert.equal(await phone.evaluate(() => document.activeElement?.getAttribute('data-copy')), 'new-key');
      assert.equal(await phone.evaluate(() => document.activeElement?.textContent), 'Copy key');
      assert.match((await phone.locator('main p').first().innerText()), /^Key Phone app for Singapore \(sg\):$/);
      assert.ok(await pageWidth() <= PHONE.width);

      // The browser sends the same form again (POST) on reload.
      await phone.reload();
      await phone.waitForSelector('h1:has-text("This form was already used")');
      assert.match((await phone.textContent('.alert.warning'))!, /This form was already used to create key sg_live_\w{4}…\w{4} "Phone app"\./);
      assert.equal((await server.service.store.keys.listForAccount(accountId)).length, before + 1);
      assert.ok(await pageWidth() <= PHONE.width);
    });

    it('every tab of the tab bar is in view, none cut short', async () => {
      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/keys`));
      const tabs = phone.locator('nav.tabs a');
      assert.equal(await tabs.count(), 6);
      for (let i = 0; i < 6; i++) {
        const tab = tabs.nth(i);
        await inView(tab, `the tab ${await tab.innerText()}`);
        assert.ok(await tab.evaluate((a) => a.scrollWidth <= a.clientWidth), `${await tab.innerText()} is not cut short`);
      }
      assert.ok(await phone.locator('nav.tabs').evaluate((nav) => nav.scrollWidth <= nav.clientWidth), 'the tab bar does not scroll');
    });

    it('the Usage and Activity pages fit: no sideways scrolling', async () => {
      for (const path of ['activity', 'usage?range=30d', 'usage']) {
        await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/${path}`));
        assert.ok(await pageWidth() <= PHONE.width, `${path}: page is ${await pageWidth()} px wide`);
      }
      await inView(phone.locator('svg#chart-account'), 'the account\'s chart');
      await inView(phone.locator('svg#chart-24h'), 'the key\'s chart');
      await inView(phone.locator('nav.segmented'), 'the periods');
    });

    it('Failed requests fits, filtered by a long key label; Allow this origin then shows its confirmation on screen', async () => {
      const origin = 'https://www.harbourfront-realty-singapore-listings.example';
      const kiosk = (await server.service.store.keys.listForAccount(accountId)).find((k) => k.label.startsWith('Kiosk-'))!;
      const widget = (await server.service.store.keys.listForAccount(accountId)).find((k) => k.label === 'Website (production) for the Orchard Road flagship store and its booking widget')!;
      const issued = await server.createKey(accountId, 'sg', 'Phone widget');
      for (let i = 0; i < 3; i++) await server.get('/v1/listings', { key: issued.key, headers: { origin, ...FROM_A_PAGE } });
      await server.service.usage!.flush();
      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/failures?key=${kiosk.id}`));
      assert.ok(await pageWidth() <= PHONE.width, `page is ${await pageWidth()} px wide`);
      await inView(phone.locator('#filter-key'), 'the key filter');
      await phone.selectOption('#filter-key', widget.id);
      await phone.click('button:has-text("Filter")');
      await phone.waitForSelector('text=No failed requests match this filter.');
      const filter = (await phone.locator('.filters button:has-text("Filter")').boundingBox())!;
      const clear = (await phone.locator('.filters a:has-text("Clear")').boundingBox())!;
      assert.ok(Math.abs((filter.y + filter.height / 2) - (clear.y + clear.height / 2)) < 4, `Clear is beside Filter: ${JSON.stringify({ filter, clear })}`);
      assert.ok(await pageWidth() <= PHONE.width);

      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/failures?key=${issued.id}`));
      assert.ok(await pageWidth() <= PHONE.width, `page is ${await pageWidth()} px wide`);
      const group = phone.locator('li.failure').first();
      assert.equal(await group.getAttribute('data-count'), '3');
      await group.locator('details.group-requests summary').click();
      assert.ok(await pageWidth() <= PHONE.width, 'its requests, opened, fit too');
      await group.locator('button:has-text("Allow this origin")').scrollIntoViewIfNeeded();
      await group.locator('button:has-text("Allow this origin")').click();
      await phone.waitForSelector('.alert.success');
      const box = (await phone.locator('.alert.success').boundingBox())!;
      assert.ok(box.y >= 0 && box.y + box.height <= PHONE.height, `the confirmation is on screen: ${JSON.stringify(box)}`);
      assert.match((await phone.textContent('.alert.success'))!, /^Allowed https:\/\/www\.harbourfront-realty-singapore-listings\.example for Singapore/);
      await server.service.store.keys.revoke(issued.id, new Date(server.clock.now()).toISOString());
    });

    it('the webhooks page fits: no sideways scrolling, each action in view', async () => {
      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/webhooks`));
      assert.ok((await pageWidth()) <= PHONE.width, `page width ${await pageWidth()}`);
      await inView(phone.locator('button:has-text("Send test event")').first(), 'Send test event');
      await inView(phone.locator('a:has-text("Remove")').first(), 'Remove');
    });

    it('the origins page fits; removing an origin asks for confirmation first, then browsers on it get 403', async () => {
      const origin = 'https://listings-widget.harbourfront-realty-singapore.example.com';
      await server.allowOrigin(accountId, origin, 'sg');
      const sgKey = (await server.createKey(accountId, 'sg', 'Widget')).key;
      const fromOrigin = async () => (await server.get('/v1/listings', { key: sgKey, headers: { origin } })).status;
      assert.equal(await fromOrigin(), 200);

      await phone.goto(dashboard(`/accounts/${accountId}/settings/developer/origins`));
      assert.ok(await pageWidth() <= PHONE.width, `page is ${await pageWidth()} px wide`);
      const remove = phone.locator(`#country-sg li:has(code:text-is("${origin}")) >> text=Remove`);
      await inView(remove, 'Remove');
      await remove.click();
      await phone.waitForSelector('h1:has-text("Remove")');
      assert.equal(await phone.textContent('h1'), `Remove ${origin} for Singapore?`);
      assert.ok(await pageWidth() <= PHONE.width);
      assert.equal(await fromOrigin(), 200, 'not yet: only asked');

      await phone.click('button:has-text("Remove origin")');
      await phone.waitForSelector('.alert.success');
      assert.match((await phone.textContent('.alert.success'))!, new RegExp(`Removed ${origin.replace(/\./g, '\\.')} for Singapore`));
      assert.equal(await fromOrigin(), 403);
      assert.equal(await phone.locator(`code:text-is("${origin}")`).count(), 0);
    });
  });

  it('signs out; the pages are then closed to this browser', async () => {
    await page.click('button:has-text("Sign out")');
    await page.waitForSelector('text=You are signed out.');
    await page.goto(dashboard(`/accounts/${accountId}/settings/developer/keys`));
    assert.equal(new URL(page.url()).pathname, '/sign-in');
  });

  it('on a phone, the sign-in page fits and its card keeps clear of the screen edges', async () => {
    const phone = watched(await context.newPage());
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(dashboard('/sign-in'));
      assert.ok(await phone.evaluate(() => document.documentElement.scrollWidth) <= 390);
      const card = (await phone.locator('main.narrow').boundingBox())!;
      assert.ok(card.x >= 12 && card.x + card.width <= 390 - 12, `card: ${JSON.stringify(card)}`);
    } finally {
      await phone.close();
    }
  });

  it('no page of the dashboard logged an error (CSP, script)', () => {
    assert.deepEqual(problems, []);
  });
});
