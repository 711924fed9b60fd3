import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Listing } from '@listings-api/sdk';
import { card, countLine, detailPage, displayPrice, displaySize, displayTitle, jsonForScript, jsonLd, listPage, noSuchPage, picture, safeUrl, text } from '@listings-api/example-website';

/** The example site's templates: escaping, null fields, placeholders, links without script, JSON-LD. */

function listing(overrides: Partial<Listing> = {}): Listing {
  return {
    id: '3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71', building_id: '9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35', org_id: null,
    title: 'Corner cafe', size_sqft: 1250, usage_types: ['F&B', 'Cafe'], price: 9.5, price_basis: 'per_sqft_per_month', currency: 'SGD',
    is_takeover: false, is_featured: false, status: 'active', expiry_date: null, available_from: '2026-12-01T00:00:00.000Z',
    min_lease_tenure: '24 months', view_count: 0, inquiry_count: 0, building_name: 'Telok Ayer Point', street_address: '18 Telok Ayer Street',
    location: { lat: 1.2812, lng: 103.8486 },
    images: ['https://images.example.com/1.jpg', 'https://images.example.com/2.jpg'], cover_image_index: 1,
    url: 'https://www.example.com/listings/1', created_at: '2026-10-14T02:45:11.382Z',
    ...overrides,
  };
}

describe('example website templates', () => {
  it('escape everything they render', () => {
    assert.equal(text(`<script>"x" & 'y'</script>`), '&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;');
    // A usage type outside the union too: what a compromised or newer API could send.
    const html = card(listing({ title: '<img src=x onerror=alert(1)>', usage_types: ['<b>'] as unknown as Listing['usage_types'], currency: '<x>' }));
    assert.ok(!html.includes('<img src=x'));
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.ok(html.includes('<li>&lt;b&gt;</li>'));
  });

  it('allow only http(s) URLs for images and links', () => {
    assert.equal(safeUrl('javascript:alert(1)'), undefined);
    assert.equal(safeUrl('not a url'), undefined);
    assert.equal(safeUrl('https://images.example.com/a b.jpg'), 'https://images.example.com/a%20b.jpg');
    assert.match(card(listing({ images: ['javascript:alert(1)'], cover_image_index: 0 })), /thumb-none/);
  });

  it('show a null title, size or price gracefully', () => {
    assert.equal(displayTitle(listing({ title: null })), 'Cafe space at Telok Ayer Point');
    assert.equal(displayTitle(listing({ title: '  ', building_name: null, usage_types: ['Office'] })), 'Office space');
    assert.equal(displaySize(null), 'Size on request');
    assert.equal(displaySize(12500), '12,500 sq ft');
    assert.equal(displayPrice({ price: null, currency: 'SGD', price_basis: 'per_month' }), 'Price on request');
    assert.equal(displayPrice({ price: 3, currency: 'NOT-A-CODE', price_basis: 'per_month' }), 'NOT-A-CODE 3 /mo');
  });

  it('say what a price is per (D25): psf/mo, /mo in whole units, or the amount alone', () => {
    assert.equal(displayPrice({ price: 12.5, currency: 'SGD', price_basis: 'per_sqft_per_month' }), 'SGD 12.50 psf/mo');
    assert.equal(displayPrice({ price: 30000, currency: 'SGD', price_basis: 'per_month' }), 'SGD 30,000 /mo');
    assert.equal(displayPrice({ price: 4199.5, currency: 'MYR', price_basis: 'per_month' }), 'MYR 4,199.50 /mo');
    assert.equal(displayPrice({ price: 9.5, currency: 'SGD', price_basis: null }), 'SGD 9.50');
    assert.equal(displayPrice({ price: 1200, currency: 'GBP', price_basis: null }), 'GBP 1,200.00');
    assert.match(card(listing()), /<span class="price">SGD 9\.50 psf\/mo<\/span>/);
    const ld = jsonLd(listing({ price: 30000, price_basis: 'per_month' }), 'http://localhost:4000/listings/1');
    assert.deepEqual((ld.offers as Record<string, unknown>).priceSpecification, { '@type': 'UnitPriceSpecification', price: 30000, priceCurrency: 'SGD', unitCode: 'MON' });
    const perFoot = jsonLd(listing(), 'http://localhost:4000/listings/1');
    assert.deepEqual(((perFoot.offers as Record<string, unknown>).priceSpecification as Record<string, unknown>).referenceQuantity, { '@type': 'QuantitativeValue', value: 1, unitCode: 'FTK' });
    assert.equal((jsonLd(listing({ price_basis: null }), 'x').offers as Record<string, unknown>).priceSpecification, undefined);
  });

  it('the count line says the page, and once "Load more" has added pages, how many are shown', () => {
    assert.equal(countLine({ total: 35, page: 1, pages: 3 }), '35 listings, page 1 of 3');
    assert.equal(countLine({ total: 1, page: 1, pages: 1 }), '1 listing');
    assert.equal(countLine({ total: 35, page: 2, pages: 3 }, 24), '35 listings, 24 shown');
    assert.equal(countLine({ total: 35, page: 3, pages: 3 }, 35), '35 listings, all shown');
  });

  it('use the cover image, lazily loaded, with a placeholder behind it; "No photo" without images', () => {
    const html = card(listing());
    assert.match(html, /<img src="https:\/\/images\.example\.com\/2\.jpg" alt="" loading="lazy"/);
    assert.match(html, /class="thumb-note">Photo unavailable/);
    assert.match(card(listing({ images: [], cover_image_index: 0 })), /thumb thumb-none"><span class="thumb-note">No photo/);
    assert.match(picture('https://images.example.com/1.jpg', true), /loading="eager"/);
  });

  it('the list page works without script: a GET filter form and a plain next-page link', () => {
    const html = listPage({ page: { items: [listing()], page: 1, per_page: 12, total: 30, pages: 3 }, usage: 'F&B', perPage: 12 });
    assert.match(html, /<form class="filter" method="get" action="\/">/);
    assert.match(html, /<option value="F&amp;B" selected>F&amp;B<\/option>/);
    assert.match(html, /<a class="button load-more" href="\/\?usage=F%26B&amp;page=2" rel="next"/);
    assert.match(html, /30 listings, page 1 of 3/);
    assert.match(html, /<a class="card-link" href="\/listings\/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71">/);
  });

  it('a page past the last says there is no such page and links to the last one and to page 1 (issue 40 item 11)', () => {
    const html = noSuchPage({ requested: 9, pages: 3, usage: undefined });
    assert.match(html, /<h1>No page 9<\/h1>/);
    assert.match(html, /There are 3 pages of listings\./);
    assert.match(html, /<a class="button" href="\/\?page=3" rel="last">Last page \(3\)<\/a>/);
    assert.match(html, /<a class="button" href="\/" rel="first">First page<\/a>/);
    assert.doesNotMatch(html, /of 3/);
    const filtered = noSuchPage({ requested: 4, pages: 1, usage: 'F&B' });
    assert.match(filtered, /There is 1 page of F&amp;B listings\./);
    assert.match(filtered, /<a class="button" href="\/\?usage=F%26B" rel="last">Last page \(1\)<\/a>/);
  });

  it('the detail page has every image and schema.org RealEstateListing JSON-LD with an Offer', () => {
    const html = detailPage(listing(), 'http://localhost:4000/listings/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71');
    assert.equal(html.match(/<img /g)?.length, 2);
    const ld = JSON.parse(/<script type="application\/ld\+json">(.*?)<\/script>/s.exec(html)![1]!);
    assert.equal(ld['@context'], 'https://schema.org');
    assert.equal(ld['@type'], 'RealEstateListing');
    assert.equal(ld.name, 'Corner cafe');
    assert.deepEqual(ld.image, listing().images);
    assert.deepEqual(ld.offers, {
      '@type': 'Offer', businessFunction: 'http://purl.org/goodrelations/v1#LeaseOut', priceCurrency: 'SGD',
      availability: 'https://schema.org/InStock', price: 9.5, availabilityStarts: '2026-12-01T00:00:00.000Z',
      priceSpecification: {
        '@type': 'UnitPriceSpecification', price: 9.5, priceCurrency: 'SGD', unitCode: 'MON',
        referenceQuantity: { '@type': 'QuantitativeValue', value: 1, unitCode: 'FTK' },
      },
    });
    assert.deepEqual(ld.floorSize, { '@type': 'QuantitativeValue', value: 1250, unitCode: 'FTK' });
  });

  it('JSON-LD cannot close its script element, and an unpriced listing still has an Offer (no price)', () => {
    assert.equal(jsonForScript({ a: '</script><script>alert(1)</script>' }), '{"a":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"}');
    const html = detailPage(listing({ title: '</script><b>', price: null }), 'http://x/listings/1');
    assert.ok(!html.includes('</script><b>'));
    const ld = jsonLd(listing({ price: null, images: [] }), 'http://x/');
    assert.equal((ld.offers as Record<string, unknown>).price, undefined);
    assert.equal((ld.offers as Record<string, unknown>).priceCurrency, 'SGD');
    assert.equal(ld.image, undefined);
  });
});
