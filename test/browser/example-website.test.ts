import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ListingsClient } from '@listings-api/sdk';
import { createSite, type Site } from '@listings-api/example-website';
import { chromiumAvailable, CHROMIUM, launchChromium, type Browser } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The example website (examples/website) in a real browser, Debian's Chromium through
 * playwright-core: the listings with their images (and placeholders where there are none or they
 * fail), the filter, "load more" through the proxy with the SDK running in the page, a listing page
 * with its JSON-LD, and the same pages with JavaScript off. Runs whenever /usr/bin/chromium exists
 * (CI installs it) and says plainly that it was skipped when not.
 */
const available = chromiumAvailable;
if (!available) console.log(`SKIPPED: the example website's browser test needs ${CHROMIUM} (apt-get install chromium); it did not run.`);

/** The README's screenshot with UPDATE_SCREENSHOTS=1 (a plain run leaves the tree clean), else a temp file. */
const SCREENSHOT = process.env.UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../../docs/example-website.png', import.meta.url))
  : join(tmpdir(), `listings-example-website-${process.pid}.png`);

/**
 * Stand-ins for the listings' photos: the demo image host does not resolve offline, so the browser's
 * requests to it are answered here (a drawn building), except the ones named "broken", which fail.
 */
function photo(url: string): string {
  let hash = 0;
  for (const c of url) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  const hue = hash % 360;
  const towers = Array.from({ length: 5 }, (_, i) => {
    const h = 140 + ((hash >> (i * 3)) % 6) * 40;
    return `<rect x="${40 + i * 115}" y="${480 - h}" width="95" height="${h}" fill="hsl(${hue},25%,${30 + i * 6}%)"/>` +
      Array.from({ length: Math.floor(h / 40) }, (_, r) => `<rect x="${55 + i * 115}" y="${490 - h + r * 40}" width="65" height="14" fill="hsl(45,80%,${70 + (r % 2) * 10}%)" opacity=".8"/>`).join('');
  }).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480" viewBox="0 0 640 480"><defs><linearGradient id="s" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="hsl(${hue},60%,75%)"/><stop offset="1" stop-color="hsl(${(hue + 40) % 360},55%,90%)"/></linearGradient></defs><rect width="640" height="480" fill="url(#s)"/>${towers}</svg>`;
}

/**
 * A photo that is not 4:3: `wide` (4:1) or tall (1:4), with a red band at one end and a blue band at
 * the other, so that a screenshot shows whether both ends are on screen (nothing cropped).
 */
function oddPhoto(shape: 'wide' | 'tall'): string {
  const [w, h] = shape === 'wide' ? [1200, 300] : [300, 1200];
  const band = shape === 'wide' ? (x: number, fill: string) => `<rect x="${x}" y="0" width="60" height="${h}" fill="${fill}"/>` : (y: number, fill: string) => `<rect x="0" y="${y}" width="${w}" height="60" fill="${fill}"/>`;
  const far = (shape === 'wide' ? w : h) - 60;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"><rect width="${w}" height="${h}" fill="#fff"/>${band(0, '#f00')}${band(far, '#00f')}</svg>`;
}

// Without Chromium: one skipped test, so that the runner's count says so too.
if (!available) it('example website in a real browser (Chromium)', { skip: `${CHROMIUM} not found: browser test SKIPPED` }, () => {});

describe('example website in a real browser (Chromium): listings, images, filter, load more, a listing with JSON-LD, no JavaScript', { skip: !available }, () => {
  let server: TestServer;
  let site: Site;
  let siteUrl: string;
  let browser: Browser | undefined;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const apiCalls: string[] = [];
  const kinds = [['Office'], ['F&B', 'Cafe'], ['Retail', 'Shop']];

  before(async () => {
    server = await startTestServer();
    const accountId = await server.createAccount();
    const key = await server.createKey(accountId, 'sg');
    await server.addListings(accountId, Array.from({ length: 15 }, (_, i) => {
      const images = i % 3 === 0 ? [`https://images.example.com/listings/${i}/1.jpg`, `https://images.example.com/listings/${i}/2.jpg`, `https://images.example.com/listings/${i}/3.jpg`]
        : i % 3 === 1 ? [`https://images.example.com/broken/${i}.jpg`] : [];
      return {
        title: i === 2 ? null : [`Harbour View office suite`, `Corner cafe, Telok Ayer`, `Ground-floor shop, Orchard`][i % 3] + ` ${i + 1}`,
        size_sqft: i === 2 ? null : 650 + i * 125,
        // Cafes are let whole, at a monthly rent; the rest per square foot (D25).
        price: i === 2 ? null : i % 3 === 1 ? 3000 + i * 100 : Math.round((4.5 + i * 0.6) * 100) / 100,
        price_basis: i % 3 === 1 ? 'per_month' : 'per_sqft_per_month',
        usage_types: kinds[i % 3],
        images,
        cover_image_index: images.length > 1 ? 1 : 0,
        building_name: ['Marina Bay Link', 'Telok Ayer Point', 'Orchard Gateway'][i % 3],
        street_address: ['8 Marina Boulevard', '18 Telok Ayer Street', '277 Orchard Road'][i % 3],
        is_featured: i === 0,
        created_at: new Date(Date.UTC(2026, 9, 30 - i)).toISOString(),
      };
    }));
    const client = new ListingsClient({ apiKey: key.key, baseUrl: `http://api.localhost:${server.port}` });
    site = createSite({ client });
    siteUrl = `http://localhost:${await site.listen(0)}`;

    browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    context = browser.context;
    // Listing 3's photos are wide, listing 6's tall; the others 4:3 like their frames.
    await context.route('https://images.example.com/**', (route) => {
      const url = route.request().url();
      if (url.includes('/broken/')) return route.abort('namenotresolved');
      const body = url.includes('/listings/3/') ? oddPhoto('wide') : url.includes('/listings/6/') ? oddPhoto('tall') : photo(url);
      return route.fulfill({ status: 200, contentType: 'image/svg+xml', body });
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      // A failed image is the browser noting what the placeholders are for.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => {
      if (r.url().startsWith(`${siteUrl}/api/`)) apiCalls.push(new URL(r.url()).pathname + new URL(r.url()).search);
    });
  });

  after(async () => {
    await browser?.close();
    await site?.close();
    await server?.close();
  });

  it('shows the listings server-rendered: cover images (lazy), title, size, price with currency, usage tags', async () => {
    await page.goto(`${siteUrl}/`);
    assert.equal(await page.textContent('h1'), 'Space for lease');
    assert.equal(await page.locator('.card').count(), 12);
    assert.equal(await page.textContent('#count'), '15 listings, page 1 of 2');
    const first = page.locator('.card').first();
    assert.equal(await first.locator('.card-title').textContent(), 'Harbour View office suite 1');
    assert.equal(await first.locator('.size').textContent(), '650 sq ft');
    assert.equal(await first.locator('.price').textContent(), 'SGD 4.50 psf/mo');
    assert.deepEqual(await first.locator('.tags li').allTextContents(), ['Office']);
    // The cover (images[cover_image_index]) is loaded, lazily.
    const cover = first.locator('img');
    assert.equal(await cover.getAttribute('loading'), 'lazy');
    assert.equal(await cover.getAttribute('src'), 'https://images.example.com/listings/0/2.jpg');
    await page.waitForFunction(() => { const img = document.querySelector<HTMLImageElement>('.card img'); return img !== null && img.complete && img.naturalWidth > 0; });
  });

  it('shows a tidy placeholder where a listing has no image or its image fails, and null fields gracefully', async () => {
    const cards = page.locator('.card');
    // The second listing's only image fails: the frame says so, with no broken-image icon.
    await page.waitForFunction(() => document.querySelectorAll('.card')[1]!.querySelector('.thumb')!.classList.contains('broken'));
    assert.equal(await cards.nth(1).locator('.thumb-note').isVisible(), true);
    assert.equal(await cards.nth(1).locator('img').isVisible(), false);
    // The third has no images, and no title, size or price.
    const bare = cards.nth(2);
    assert.equal(await bare.locator('.thumb-note').textContent(), 'No photo');
    assert.equal(await bare.locator('.card-title').textContent(), 'Shop space at Orchard Gateway');
    assert.equal(await bare.locator('.size').textContent(), 'Size on request');
    assert.equal(await bare.locator('.price').textContent(), 'Price on request');
    await page.waitForFunction(() => [...document.querySelectorAll<HTMLImageElement>('.card img')].slice(0, 4).every((img) => img.complete));
    await page.screenshot({ path: SCREENSHOT });
  });

  it('filters by usage type (a GET form: the URL says what is shown)', async () => {
    await page.selectOption('#usage', 'Office');
    await Promise.all([page.waitForURL('**/?usage=Office'), page.click('.filter button')]);
    assert.equal(await page.textContent('h1'), 'Office space for lease');
    const tags = await page.locator('.card .tags').allTextContents();
    assert.equal(tags.length, 5);
    assert.ok(tags.every((t) => t === 'Office'), tags.join(' | '));
  });

  it('"Load more" appends the next page in place, read with the SDK through the site\'s proxy', async () => {
    await page.goto(`${siteUrl}/`);
    apiCalls.length = 0;
    await page.click('[data-load-more]');
    await page.waitForFunction(() => document.querySelectorAll('.card').length === 15);
    assert.equal(new URL(page.url()).search, '', 'no navigation');
    assert.deepEqual(apiCalls, ['/api/v1/listings?page=2&per_page=12']);
    assert.equal(await page.locator('[data-load-more]').count(), 0, 'the last page: nothing more to load');
    assert.equal(await page.locator('.card').nth(13).locator('.thumb-note').textContent(), 'Photo unavailable');
    // A loaded card words its price as the server's do (the same format module), and the line
    // above the cards no longer says "page 1 of 2".
    assert.equal(await page.locator('.card').nth(13).locator('.price').textContent(), 'SGD 4,300 /mo');
    assert.equal(await page.textContent('#count'), '15 listings, all shown');
  });

  it('opens a listing: all its images, its facts, and schema.org RealEstateListing JSON-LD with an Offer', async () => {
    await page.goto(`${siteUrl}/`);
    await Promise.all([page.waitForURL('**/listings/*'), page.click('.card >> nth=0 >> .card-link')]);
    assert.equal(await page.textContent('h1'), 'Harbour View office suite 1');
    assert.equal(await page.locator('.gallery img').count(), 3);
    await page.waitForFunction(() => [...document.querySelectorAll<HTMLImageElement>('.gallery img')].slice(0, 1).every((img) => img.complete && img.naturalWidth > 0));
    const ld = JSON.parse((await page.textContent('script[type="application/ld+json"]'))!);
    assert.equal(ld['@type'], 'RealEstateListing');
    assert.equal(ld.name, 'Harbour View office suite 1');
    assert.equal(ld.url, page.url());
    assert.equal(ld.image.length, 3);
    assert.equal(ld.offers['@type'], 'Offer');
    assert.equal(ld.offers.price, 4.5);
    assert.equal(ld.offers.priceCurrency, 'SGD');
    const missing = await page.goto(`${siteUrl}/listings/00000000-0000-4000-8000-000000000000`);
    assert.equal(missing?.status(), 404);
  });

  it('works with JavaScript off: the listings, the filter and the pages are plain HTML and links', async () => {
    // A second browser, its own profile, with script turned off.
    const plain = await launchChromium({ javaScriptEnabled: false });
    try {
      const p = plain.context.pages()[0] ?? (await plain.context.newPage());
      await p.goto(`${siteUrl}/`);
      assert.equal(await p.locator('.card').count(), 12);
      assert.equal(await p.textContent('[rel=next]'), 'Next page');
      await Promise.all([p.waitForURL('**/?page=2'), p.click('[rel=next]')]);
      assert.equal(await p.locator('.card').count(), 3);
      await p.selectOption('#usage', 'F&B');
      await Promise.all([p.waitForURL('**/?usage=F%26B'), p.click('.filter button')]);
      assert.equal(await p.locator('.card').count(), 5);
      await Promise.all([p.waitForURL('**/listings/*'), p.click('.card >> nth=0 >> .card-link')]);
      assert.match((await p.textContent('script[type="application/ld+json"]'))!, /"@type":"RealEstateListing"/);
    } finally {
      await plain.close();
    }
  });

  it('shows every photo whole, whatever its shape: a wide or a tall one fits its frame, uncropped (issue 40 item 11)', async () => {
    await page.goto(`${siteUrl}/`);
    /** Red and blue pixels in a screenshot, counted in a blank page's canvas. */
    const scratch = await context.newPage();
    const colours = (png: Buffer) => scratch.evaluate(async (base64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${base64}`;
      await img.decode();
      const canvas = document.createElement('canvas');
      [canvas.width, canvas.height] = [img.width, img.height];
      const g = canvas.getContext('2d')!;
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, img.width, img.height).data;
      let red = 0;
      let blue = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i]! > 200 && d[i + 1]! < 60 && d[i + 2]! < 60) red++;
        if (d[i + 2]! > 200 && d[i]! < 60 && d[i + 1]! < 60) blue++;
      }
      return { red, blue };
    }, png.toString('base64'));
    try {
      // The covers of listing 3 (4:1, the fourth card) and listing 6 (1:4, the seventh).
      for (const [n, shape] of [[3, 'wide'], [6, 'tall']] as const) {
        const img = page.locator('.card').nth(n).locator('img');
        await img.scrollIntoViewIfNeeded();
        await page.waitForFunction((i) => {
          const el = document.querySelectorAll('.card')[i]?.querySelector('img');
          return el !== null && el !== undefined && el.complete && el.naturalWidth > 0;
        }, n);
        const seen = await colours(await img.screenshot());
        assert.ok(seen.red > 0 && seen.blue > 0, `the ${shape} photo shows both ends: ${JSON.stringify(seen)}`);
      }
      // Every photo on the page is drawn whole and undistorted.
      const shown = await page.$$eval('.thumb img', (imgs) => (imgs as HTMLImageElement[]).filter((img) => img.complete && img.naturalWidth > 0).map((img) => {
        const fit = getComputedStyle(img).objectFit;
        const box = img.getBoundingClientRect();
        const sameShape = Math.abs(box.width / box.height - img.naturalWidth / img.naturalHeight) < 0.01;
        return { src: img.src, whole: fit === 'contain' || fit === 'scale-down' || (sameShape && fit !== 'none') };
      }));
      assert.ok(shown.length >= 3, `${shown.length} photos loaded`);
      assert.deepEqual(shown.filter((img) => !img.whole), []);
    } finally {
      await scratch.close();
    }
  });

  it('a page past the last is a 404 "No page 9" whose link leads to the last page (issue 40 item 11)', async () => {
    const past = await page.goto(`${siteUrl}/?page=9`);
    assert.equal(past?.status(), 404);
    assert.equal(await page.textContent('h1'), 'No page 9');
    await Promise.all([page.waitForURL('**/?page=2'), page.click('[rel=last]')]);
    assert.equal(await page.textContent('#count'), '15 listings, page 2 of 2');
    assert.equal(await page.locator('.card').count(), 3);
  });

  it('logged no script errors', () => {
    assert.deepEqual(problems, []);
  });
});
