import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * `GET /docs` (issue 33 item 4): the interactive reference, rendered by a real browser from this
 * server's OpenAPI document, offline, with "try it" calling the host the page came from.
 */
if (!chromiumAvailable) it('API reference at /docs in a real browser (Chromium)', { skip: `${CHROMIUM} not found: browser test SKIPPED` }, () => {});

describe('API reference at /docs in a real browser (Chromium): offline, rendered from /openapi.json, "try it" on this host', { skip: !chromiumAvailable }, () => {
  let server: TestServer;
  let browser: Browser | undefined;
  let page: Page;
  let key: string;
  const outside: string[] = [];
  const problems: string[] = [];

  before(async () => {
    server = await startTestServer();
    const accountId = await server.createAccount();
    key = (await server.createKey(accountId, 'my')).key;
    await server.addListings(accountId, [{ country: 'my', currency: 'MYR', title: 'Tried from the reference' }]);
    browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    // Nothing may leave the machine: no CDN, no fonts, no telemetry, no hosted services.
    await browser.context.route('**', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === 'localhost' || url.hostname.endsWith('.localhost')) return route.continue();
      outside.push(url.href);
      return route.abort();
    });
    page.on('pageerror', (e) => problems.push(e.message));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('any host, no key: /docs redirects to /docs/, whose page loads the bundled script (compressed, cached)', async () => {
    const redirect = await server.get('/docs', { host: 'api.localhost' });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, '/docs/');
    const html = await server.get('/docs/', { host: 'dashboard-less.example' });
    assert.equal(html.status, 200);
    assert.match(html.headers['content-type'] as string, /^text\/html/);
    assert.match(html.body, /"url": "\/openapi\.json"/);
    const script = await server.get('/docs/js/scalar.js', { host: 'api.localhost', headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(script.status, 200);
    assert.equal(script.headers['content-encoding'], 'br');
    assert.match(script.headers['cache-control'] as string, /max-age=86400/);
    // The API's own answers are not compressed (the plugin is registered for these routes only).
    const api = await server.get('/v1/listings', { key, host: 'api.my.localhost', headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(api.headers['content-encoding'], undefined);
  });

  it('renders every operation of the document, offline', async () => {
    await page.goto(`http://api.my.localhost:${server.port}/docs`);
    assert.equal(await page.title(), 'Listings Developer API reference');
    for (const summary of ['List active listings', 'Get one active listing']) {
      await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 20_000 });
    }
    assert.deepEqual(outside, [], 'requests that left the machine');
    assert.equal(await page.getByText('Ask AI').count(), 0, 'no hosted AI chat');
    assert.equal(await page.getByText('Generate MCP').count(), 0, 'no hosted MCP generator');
  });

  it('"try it" is pointed at the host the page was loaded from: a request sent from it gets 200 with the listings', async () => {
    const origin = `http://api.my.localhost:${server.port}`;
    await page.getByText(origin, { exact: true }).first().waitFor();
    const sent: string[] = [];
    page.on('request', (r) => { if (r.url().includes('/v1/')) sent.push(`${r.method()} ${new URL(r.url()).origin} ${r.headers().authorization === `Bearer ${key}` ? 'with the key' : 'without'}`); });
    await page.getByText('List active listings', { exact: true }).first().click();
    await page.locator('input[placeholder="Token"]').first().fill(key);
    await page.getByRole('button', { name: /Test Request/i }).first().click();
    const answered = page.waitForResponse((r) => r.url().startsWith(`${origin}/v1/listings`));
    await page.getByRole('button', { name: /^Send/ }).first().click();
    assert.equal((await answered).status(), 200);
    await page.getByText('200 OK').first().waitFor();
    assert.deepEqual(sent, [`GET ${origin} with the key`]);
    assert.deepEqual(outside, []);
    assert.deepEqual(problems, []);
  });
});
