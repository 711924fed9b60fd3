import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page, Request } from 'playwright-core';
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from '../support/browser.js';
import { dom } from '../support/html.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * `GET /docs` (issue 33 item 4): the interactive reference, rendered by a real browser from this
 * server's OpenAPI document, offline, with "try it" calling the host the page came from. Issue 40:
 * under a Content-Security-Policy that does not stop it working, never framed (item 9), and its
 * first "try it" sends no example as a parameter (item 11).
 */

/**
 * What the page's own script may be refused under its policy, and is: Zod (inside Scalar's bundle)
 * tries `Function('')` once to learn whether it may compile validators, and without 'unsafe-eval'
 * it validates without compiling.
 */
const EXPECTED_VIOLATIONS = ['script-src eval /docs/js/scalar.js'];
if (!chromiumAvailable) it('API reference at /docs in a real browser (Chromium)', { skip: `${CHROMIUM} not found: browser test SKIPPED` }, () => {});

describe('API reference at /docs in a real browser (Chromium): offline, rendered from /openapi.json, "try it" on this host', { skip: !chromiumAvailable }, () => {
  let server: TestServer;
  let browser: Browser | undefined;
  let page: Page;
  let key: string;
  const outside: string[] = [];
  const problems: string[] = [];
  /** The page's Content-Security-Policy violations, as the browser reports them to the page. */
  const violations: string[] = [];

  // Shared on purpose (issue 42): one Chromium session runs these tests; a browser per test would cost seconds each.
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
    await page.exposeFunction('reportViolation', (line: string) => violations.push(line));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { reportViolation(line: string): void }).reportViolation(`${e.violatedDirective} ${e.blockedURI} ${new URL(e.sourceFile, location.href).pathname}`);
      });
    });
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

  it('issue 40 item 9: every answer under /docs has a Content-Security-Policy and frame protection; the page\'s one inline script is allowed by its hash', async () => {
    for (const path of ['/docs', '/docs/', '/docs/js/scalar.js']) {
      const res = await server.get(path, { host: 'api.localhost' });
      assert.equal(res.headers['x-frame-options'], 'DENY', path);
      const policy = res.headers['content-security-policy'] as string;
      assert.match(policy, /(^|; )frame-ancestors 'none'(;|$)/, path);
      assert.match(policy, /(^|; )default-src 'none'(;|$)/, path);
      assert.doesNotMatch(policy, /unsafe-eval/, path);
    }
    const page = await server.get('/docs/', { host: 'api.localhost' });
    const policy = page.headers['content-security-policy'] as string;
    const scripts = Object.fromEntries(policy.split('; ').map((d) => [d.split(' ')[0], d]))['script-src']!;
    // The script's text exactly as sent (the parser's raw text: no entity decoding), which is what the browser hashes.
    const inline = dom(page.body).querySelectorAll('script').filter((script) => !script.hasAttribute('src')).map((script) => script.rawText);
    assert.equal(inline.length, 1, 'one inline script: the call of Scalar.createApiReference');
    assert.equal(scripts, `script-src 'self' 'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`, 'this origin and that script\'s hash, no \'unsafe-inline\'');
    assert.match(policy, /(^|; )connect-src 'self'(;|$)/, '"try it" calls this host only');
  });

  it('renders every operation of the document, offline', async () => {
    await page.goto(`http://api.my.localhost:${server.port}/docs`);
    assert.equal(await page.title(), 'Listings Developer API reference');
    for (const summary of ['List active listings', 'Get one active listing']) {
      await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 20_000 });
    }
    assert.deepEqual(outside, [], 'requests that left the machine');
    assert.deepEqual(violations, EXPECTED_VIOLATIONS, 'nothing else refused by the policy');
    assert.equal(await page.getByText('Ask AI').count(), 0, 'no hosted AI chat');
    assert.equal(await page.getByText('Generate MCP').count(), 0, 'no hosted MCP generator');
  });

  it('"try it" is pointed at the host the page was loaded from, and its first request sets no example as a parameter (issue 40 item 11): 200 with the listings', async () => {
    const origin = `http://api.my.localhost:${server.port}`;
    await page.getByText(origin, { exact: true }).first().waitFor();
    const sent: string[] = [];
    const onRequest = (r: Request) => {
      if (!r.url().includes('/v1/')) return;
      const conditional = r.headers()['if-none-match'] === undefined ? '' : ` If-None-Match: ${r.headers()['if-none-match']}`;
      sent.push(`${r.method()} ${r.url()} ${r.headers().authorization === `Bearer ${key}` ? 'with the key' : 'without'}${conditional}`);
    };
    page.on('request', onRequest);
    await page.getByText('List active listings', { exact: true }).first().click();
    await page.locator('input[placeholder="Token"]').first().fill(key);
    await page.getByRole('button', { name: /Test Request/i }).first().click();
    const answered = page.waitForResponse((r) => r.url().startsWith(`${origin}/v1/listings`));
    await page.getByRole('button', { name: /^Send/ }).first().click();
    const answer = await answered;
    assert.equal(answer.status(), 200);
    await page.getByText('200 OK').first().waitFor();
    // Not page=2, featured=true, ... nor the example ETag: the plain first request, whose answer has the listing.
    assert.deepEqual(sent, [`GET ${origin}/v1/listings with the key`]);
    const body = await answer.json() as { items: Array<{ title: string }>; page: number; total: number };
    assert.deepEqual([body.page, body.total, body.items.map((l) => l.title)], [1, 1, ['Tried from the reference']]);
    // The examples are still there to pick: listed in the request form, with their values.
    assert.ok(await page.getByText('Office, Retail', { exact: true }).first().isVisible(), 'usage_type\'s example');
    page.off('request', onRequest);
    assert.deepEqual(outside, []);
    assert.deepEqual(problems, []);
  });

  it('issue 40 item 9: a page of another site cannot frame /docs', async () => {
    // Another site, served from this machine (a page the browser sees come from the network
    // could not frame a loopback address at all, CSP or not), with the reference in a frame.
    const framing = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>framer</title><iframe src="http://api.my.localhost:${server.port}/docs/" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => framing.listen(0, '127.0.0.1', resolve));
    const other = await browser!.context.newPage();
    try {
      const refused: string[] = [];
      other.on('console', (m) => { if (/frame-ancestors/.test(m.text())) refused.push(m.text()); });
      // `load` waits for the frame too, whether it loaded the reference or the browser's error page.
      await other.goto(`http://framer.localhost:${(framing.address() as AddressInfo).port}/`, { waitUntil: 'load' });
      const frame = await (await other.$('iframe'))!.contentFrame();
      assert.ok(frame, 'the frame exists');
      assert.equal(await frame.locator('#app').count(), 0, 'the reference\'s page did not load in it');
      assert.equal(refused.length, 1, 'refused for its frame-ancestors');
    } finally {
      await other.close();
      framing.closeAllConnections();
      await new Promise((resolve) => framing.close(resolve));
    }
  });
});
