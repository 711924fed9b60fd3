import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * What browser code can read of an answer (D18, D21, D29), in a real Chromium: a page on a
 * registered origin calls the API with `fetch` and reports `response.headers.get(...)` for each
 * header a page needs, on a 200, a free 304 and a 429, errors included. A header the answer carries
 * but `Access-Control-Expose-Headers` does not list reads as null here, so this checks the list
 * where it matters, not its text. `/v1/listings/changes` is configured deprecated (API_DEPRECATIONS).
 */
const available = chromiumAvailable;
if (!available) console.log(`SKIPPED: the browser suite needs ${CHROMIUM} (apt-get install chromium); it did not run.`);

const READ = ['etag', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy', 'retry-after', 'x-request-id', 'deprecation', 'sunset', 'link'];

/** The page: calls `path` with the key and an optional If-None-Match, and reports the status and the headers it can read. */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Headers</title></head><body><script>
  window.call = async (url, key, etag) => {
    const headers = { Authorization: 'Bearer ' + key };
    if (etag) headers['If-None-Match'] = etag;
    const res = await fetch(url, { headers, cache: 'no-store' });
    const read = {};
    for (const name of ${JSON.stringify(READ)}) read[name] = res.headers.get(name);
    return { status: res.status, read };
  };
</script></body></html>`;

if (!available) it('headers browser code can read (Chromium)', { skip: `${CHROMIUM} not found: browser suite SKIPPED` }, () => {});

describe('headers browser code can read, in a real browser (Chromium): rate limits and deprecation (D18, D21, D29)', { skip: !available }, () => {
  let server: TestServer;
  let site: Server;
  let browser: Browser | undefined;
  let call: (path: string, key: string, etag?: string) => Promise<{ status: number; read: Record<string, string | null> }>;
  let key: string;
  let limited: string;

  // Shared on purpose (issue 42): one Chromium session runs these tests; a browser per test would cost seconds each.
  before(async () => {
    server = await startTestServer({
      API_DEPRECATIONS: JSON.stringify([{ prefix: '/v1/listings/changes', since: '2026-11-01', sunset: '2027-12-01', link: 'https://developers.example.com/changelog' }]),
    });
    const org = await server.createAccount();
    await server.addListings(org, [{ title: 'Office suite, Marina Bay' }]);
    site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const origin = `http://localhost:${(site.address() as { port: number }).port}`;
    await server.allowOrigin(org, origin);
    key = (await server.createKey(org)).key;
    const small = await server.createKey(org);
    await server.service.store.keys.setRateLimit(small.id, 1);
    limited = small.key;

    browser = await launchChromium();
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.goto(origin);
    const api = `http://api.localhost:${server.port}`;
    call = (path, k, etag) => page.evaluate(([url, kk, e]) => (window as unknown as { call: (...a: unknown[]) => Promise<never> }).call(url, kk, e), [`${api}${path}`, k, etag] as const);
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await server?.close();
  });

  it('a 200 and a free 304: ETag, X-RateLimit-*, RateLimit and RateLimit-Policy, X-Request-Id', async () => {
    const ok = await call('/v1/listings', key);
    assert.equal(ok.status, 200);
    for (const name of ['etag', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy', 'x-request-id']) {
      assert.ok(ok.read[name], `the page reads ${name} on a 200`);
    }
    assert.equal(ok.read['ratelimit-policy'], '"key";q=60;w=60');
    assert.equal(ok.read.ratelimit, `"key";r=${ok.read['x-ratelimit-remaining']};t=0`);
    assert.equal(ok.read.deprecation, null, '/v1/listings is not deprecated');
    const free = await call('/v1/listings', key, ok.read.etag!);
    assert.equal(free.status, 304);
    assert.equal(free.read.ratelimit, ok.read.ratelimit, 'the 304 took nothing');
  });

  it('a 429: Retry-After and RateLimit\'s t, the same number', async () => {
    assert.equal((await call('/v1/listings', limited)).status, 200);
    const refused = await call('/v1/listings', limited);
    assert.equal(refused.status, 429);
    assert.match(refused.read['retry-after'] ?? '', /^[1-9][0-9]*$/);
    assert.equal(refused.read.ratelimit, `"key";r=0;t=${refused.read['retry-after']}`);
  });

  it('a deprecated endpoint: Deprecation, Sunset and Link, on a 200 and on a 401', async () => {
    for (const [k, status] of [[key, 200], ['sg_live_not-a-key', 401]] as const) {
      const res = await call('/v1/listings/changes', k);
      assert.equal(res.status, status);
      assert.equal(res.read.deprecation, `@${Date.parse('2026-11-01T00:00:00Z') / 1000}`);
      assert.equal(res.read.sunset, 'Wed, 01 Dec 2027 00:00:00 GMT');
      assert.equal(res.read.link, '<https://developers.example.com/changelog>; rel="deprecation"');
    }
  });
});
