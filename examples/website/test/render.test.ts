import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Listing } from '@listings-api/sdk';
import type { ListingFacets } from '@listings-api/sdk';
import {
  card, countLine, detailPage, displayDistance, displayPrice, displaySize, displayTitle, distanceMetres, jsonForScript, jsonLd, listPage, mapCaption,
  noSuchPage, parseSearch, picture, PLACES, placesFor, plot, resultsMap, safeUrl, searchErrorPage, searchForm, searchHref, searchProblem, text,
} from '@listings-api/example-website';

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
    const html = listPage({ page: { items: [listing()], page: 1, per_page: 12, total: 30, pages: 3 }, search: { usage: 'F&B' }, places: placesFor('sg'), perPage: 12 });
    assert.match(html, /<form class="filter search" method="get" action="\/" role="search">/);
    assert.match(html, /<button type="submit" name="usage" value="" class="chip" aria-pressed="true">F&amp;B<\/button>/);
    assert.match(html, /<a class="button load-more" href="\/\?usage=F%26B&amp;page=2" rel="next"/);
    assert.match(html, /30 listings, page 1 of 3/);
    assert.match(html, /<a class="card-link" href="\/listings\/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71">/);
  });

  it('a page past the last says there is no such page and links to the last one and to page 1 (issue 40 item 11)', () => {
    const html = noSuchPage({ requested: 9, pages: 3, search: {} });
    assert.match(html, /<h1>No page 9<\/h1>/);
    assert.match(html, /There are 3 pages of listings\./);
    assert.match(html, /<a class="button" href="\/\?page=3" rel="last">Last page \(3\)<\/a>/);
    assert.match(html, /<a class="button" href="\/" rel="first">First page<\/a>/);
    assert.doesNotMatch(html, /of 3/);
    const filtered = noSuchPage({ requested: 4, pages: 1, search: { usage: 'F&B' } });
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
  it('the search form: the text, a place of the key\'s country, and usage type chips with the facets\' counts (issue 45 item 4)', () => {
    const facets: ListingFacets = {
      total: 19,
      usage_types: [{ name: 'Office', count: 12 }, { name: 'Shared Office', count: 3 }, { name: 'F&B', count: 7 }, { name: 'Cafe', count: 0 }, { name: 'Clinic', count: 0 }],
      featured: { true: 2, false: 17 }, takeover: { true: 0, false: 19 }, price: [], size_sqft: { min: null, max: null, count: 0 },
    };
    const raffles = PLACES.sg[0]!;
    const html = searchForm({ search: { q: '"><script>', usage: 'F&B', near: raffles, radiusKm: 2 }, places: placesFor('sg'), facets });
    // Every chip is a submit button of the GET form, so it keeps the text, the place and the radius.
    assert.match(html, /<form class="filter search" method="get" action="\/" role="search">/);
    const chips = [...html.matchAll(/<button type="submit" name="usage" value="([^"]*)" class="([^"]*)" aria-pressed="(true|false)">([^<]*)<\/button>/g)].map((m) => [m[1], m[2], m[3], m[4]]);
    assert.deepEqual(chips, [
      ['', 'chip chip-all', 'false', 'All types (19)'],
      ['Office', 'chip', 'false', 'Office (12)'],
      ['Shared Office', 'chip chip-sub', 'false', 'Shared Office (3)'],
      // The chosen chip is pressed; pressing it again chooses all types. A type no listing has is left out.
      ['', 'chip', 'true', 'F&amp;B (7)'],
    ]);
    // The Search button (the default button, first) keeps the chosen type; the text is escaped.
    assert.match(html, /<button type="submit" class="search-button" name="usage" value="F&amp;B">Search<\/button>[\s\S]*class="chip/);
    assert.match(html, /value="&quot;&gt;&lt;script&gt;"/);
    assert.ok(!html.includes('"><script>'));
    assert.match(html, /<option value="">Anywhere<\/option><option value="raffles-place" selected>Raffles Place<\/option><option value="orchard">Orchard<\/option><option value="jurong">Jurong<\/option><\/select>/);
    assert.match(html, /<option value="2" selected>2 km<\/option>/);
    // A chosen type that no listing of the search has is still there, pressed, so that it can be unchosen.
    assert.match(searchForm({ search: { usage: 'Clinic' }, places: placesFor('sg'), facets }), /value="" class="chip" aria-pressed="true">Clinic \(0\)</);
    // Without the key's country, every country's places, grouped; without facets, the main types without counts.
    const every = searchForm({ search: {}, places: placesFor(undefined) });
    assert.match(every, /<optgroup label="Singapore"><option value="raffles-place">Raffles Place<\/option>/);
    assert.match(every, /<optgroup label="New Zealand"><option value="auckland">Auckland<\/option><\/optgroup>/);
    assert.match(every, /aria-pressed="true">All types<\/button><button type="submit" name="usage" value="Office" class="chip" aria-pressed="false">Office<\/button>/);
  });

  it('a search\'s address: parsed, tidied, and written in one order', () => {
    const places = PLACES.sg;
    const parsed = parseSearch(new URLSearchParams('q=+marina+&near=orchard&radius=2&usage=Office&page=3'), places);
    assert.deepEqual(parsed, { search: { q: 'marina', usage: 'Office', near: PLACES.sg[1], radiusKm: 2 }, page: 3, tidy: true });
    assert.equal(searchHref(parsed.search, parsed.page), '/?q=marina&usage=Office&near=orchard&radius=2&page=3');
    // What a plain GET form sends with nothing filled in is not tidy: the site redirects to `/`.
    const blank = parseSearch(new URLSearchParams('q=&near=&radius=5'), places);
    assert.equal(blank.tidy, false);
    assert.equal(searchHref(blank.search, blank.page), '/');
    // Unknown values are ignored, as `usage` always was; a radius not offered is the default.
    assert.deepEqual(parseSearch(new URLSearchParams('usage=Bogus&near=atlantis'), places).search, { q: undefined, usage: undefined, near: undefined, radiusKm: undefined });
    assert.equal(parseSearch(new URLSearchParams('near=jurong&radius=7'), places).search.radiusKm, 5);
    assert.equal(searchHref({ usage: 'F&B', q: 'a b' }, 2), '/?q=a+b&usage=F%26B&page=2');
  });

  it('a search with no word in it, or too long, is said on the page, escaped, in the form it came in', () => {
    assert.match(searchProblem({ q: '!!! ...' })!, /at least one letter or digit/);
    assert.match(searchProblem({ q: '\u0301\u0301' })!, /at least one letter or digit/, 'combining marks alone are no word');
    assert.match(searchProblem({ q: 'x'.repeat(201) })!, /at most 200 characters/);
    assert.equal(searchProblem({ q: 'café ｃａｆｅ' }), undefined);
    assert.equal(searchProblem({ q: '😀'.repeat(200) + 'a' }), searchProblem({ q: 'x'.repeat(201) }), 'characters are code points');
    const html = searchErrorPage({ search: { q: '<!!!>' }, places: placesFor('sg'), message: 'Nothing to search for.' });
    assert.match(html, /<p class="notice" id="search-error" role="alert">Nothing to search for\.<\/p>/);
    assert.match(html, /value="&lt;!!!&gt;"/);
    assert.doesNotMatch(html, /class="cards"|<svg/);
  });

  it('a distance as a card says it, computed as the API does (haversine, R = 6,371,008.8 m)', () => {
    assert.equal(displayDistance(0), '0 m');
    assert.equal(displayDistance(354), '350 m');
    assert.equal(displayDistance(994), '990 m');
    assert.equal(displayDistance(996), '1 km');
    assert.equal(displayDistance(1249), '1.2 km');
    assert.equal(displayDistance(9949), '9.9 km');
    assert.equal(displayDistance(9951), '10 km');
    assert.equal(displayDistance(123_456), '123 km');
    // One degree of latitude is R·π/180; Raffles Place to Telok Ayer Point is about 390 m.
    assert.equal(Math.round(distanceMetres({ lat: 0, lng: 0 }, { lat: 1, lng: 0 }) * 10) / 10, 111_195.1);
    assert.equal(displayDistance(distanceMetres(PLACES.sg[0]!, { lat: 1.2812, lng: 103.8486 })), '440 m');
    const html = card(listing(), { lat: 1.284, lng: 103.8514, name: 'Raffles <Place>' });
    assert.match(html, /<p class="distance">440 m from Raffles &lt;Place&gt;<\/p>/);
    assert.match(html, /<li class="card" data-lat="1.2812" data-lng="103.8486">/);
    assert.doesNotMatch(card(listing()), /class="distance"/);
  });

  it('the map: every point inside the viewBox, each a link with its title, the place marked, listings without a location named (issue 45 item 4)', () => {
    const items = [
      listing({ id: 'a0000000-0000-4000-8000-000000000001', title: 'Marina <b>suite</b>', location: { lat: 1.2801, lng: 103.8545 } }),
      listing({ id: 'a0000000-0000-4000-8000-000000000002', title: 'Telok', location: { lat: 1.2812, lng: 103.8486 } }),
      listing({ id: 'a0000000-0000-4000-8000-000000000003', title: 'Jurong', location: { lat: 1.318, lng: 103.683 } }),
      listing({ id: 'a0000000-0000-4000-8000-000000000004', title: 'Nowhere & co', location: null }),
    ];
    const html = resultsMap(items, { lat: 1.284, lng: 103.8514, name: 'Raffles Place', radiusM: 2000 });
    const [, w, h] = /viewBox="0 0 (\d+) (\d+)"/.exec(html)!.map(Number) as [number, number, number];
    const circles = [...html.matchAll(/<a class="map-point" href="([^"]+)" aria-label="([^"]+)"><circle cx="([\d.]+)" cy="([\d.]+)" r="6"><title>([^<]*)<\/title><\/circle><\/a>/g)];
    assert.equal(circles.length, 3);
    for (const [, , , x, y] of circles) assert.ok(Number(x) >= 6 && Number(x) <= w - 6 && Number(y) >= 6 && Number(y) <= h - 6, `${x},${y} in 0 0 ${w} ${h}`);
    assert.equal(circles[0]![1], '/listings/a0000000-0000-4000-8000-000000000001');
    assert.equal(circles[0]![5], 'Marina &lt;b&gt;suite&lt;/b&gt;');
    assert.equal(circles[0]![2], 'Marina &lt;b&gt;suite&lt;/b&gt;, 550 m from Raffles Place');
    assert.ok(!html.includes('<b>'));
    // West is left and north is up: Jurong is left of and above the city.
    assert.ok(Number(circles[2]![3]) < Number(circles[0]![3]) && Number(circles[2]![4]) < Number(circles[0]![4]));
    // The place: a marked centre with its name, and the radius.
    const centre = /<g class="map-centre"><title>Raffles Place<\/title><circle cx="([\d.]+)" cy="([\d.]+)" r="8"\/>/.exec(html)!;
    assert.ok(Number(centre[1]) > 0 && Number(centre[1]) < w && Number(centre[2]) > 0 && Number(centre[2]) < h);
    assert.match(html, /<path class="map-grid" d="(M[\d.]+ 0V\d+)+(M0 [\d.]+H\d+)+"\/>/);
    assert.match(html, /<circle class="map-radius" cx="[\d.]+" cy="[\d.]+" r="[\d.]+"\/>/);
    assert.match(html, /<g class="map-scale"><path d="M12 \d+h[\d.]+"\/><text x="12" y="\d+">\d+ k?m<\/text><\/g>/);
    assert.match(html, /<figcaption id="map-caption">Where 3 listings are, around Raffles Place \(\+\); north is up\. 1 not on the map\.<\/figcaption>/);
    assert.match(html, /<p class="off-map">Not on the map \(no location\): <a href="\/listings\/a0000000-0000-4000-8000-000000000004">Nowhere &amp; co<\/a><\/p>/);
    assert.match(html, /^<figure class="map" id="map" data-near-lat="1.284" data-near-lng="103.8514" data-near-name="Raffles Place" data-radius-m="2000">/);
    // One point, or the same place many times: a small square of the city, not a division by zero.
    const one = resultsMap([items[1]!]);
    assert.match(one, /<circle cx="200" cy="\d+(\.\d)?" r="6">/);
    assert.doesNotMatch(one, /NaN|Infinity|map-centre/);
    assert.equal(resultsMap([items[3]!]), '<figure class="map" id="map"><figcaption id="map-caption">None of these listings has a location to map.</figcaption><p class="off-map">Not on the map (no location): <a href="/listings/a0000000-0000-4000-8000-000000000004">Nowhere &amp; co</a></p></figure>');
  });

  it('the map\'s geometry: the same scale both ways (cos latitude), a height from the points\' shape, a round scale bar', () => {
    // Two points 1 km apart east-west and two 1 km apart north-south are drawn the same length apart.
    const kmEast = 1000 / (distanceMetres({ lat: 60, lng: 0 }, { lat: 60, lng: 1 }));
    const kmNorth = 1000 / (distanceMetres({ lat: 60, lng: 0 }, { lat: 61, lng: 0 }));
    const square = plot([{ lat: 60, lng: 10 }, { lat: 60, lng: 10 + kmEast }, { lat: 60 + kmNorth, lng: 10 }])!;
    const [o, e, n] = [square.at({ lat: 60, lng: 10 }), square.at({ lat: 60, lng: 10 + kmEast }), square.at({ lat: 60 + kmNorth, lng: 10 })];
    assert.ok(Math.abs((e.x - o.x) - (o.y - n.y)) < 1, JSON.stringify({ o, e, n }));
    assert.equal(e.y, o.y);
    assert.equal(n.x, o.x);
    assert.equal(square.width, 400);
    // A wide spread is a short picture (half as high as wide at least); a tall one at most 5/4.
    assert.equal(plot([{ lat: 1.3, lng: 103.6 }, { lat: 1.3, lng: 104 }])!.height, 200);
    assert.equal(plot([{ lat: 1.0, lng: 103.8 }, { lat: 1.5, lng: 103.8 }])!.height, 500);
    assert.equal(plot([]), undefined);
    const { scale, metresPerUnit } = plot([{ lat: 1.28, lng: 103.85 }, { lat: 1.28, lng: 103.86 }])!;
    assert.ok([100, 200, 500].includes(scale.metres), String(scale.metres));
    assert.ok(Math.abs(scale.length * metresPerUnit - scale.metres) < 1);
    // The grid's lines are the scale bar's distance apart, across the whole picture.
    const city = plot([{ lat: 1.28, lng: 103.85 }, { lat: 1.29, lng: 103.86 }])!;
    const verticals = [...city.grid.matchAll(/M([\d.]+) 0V(\d+)/g)].map((m) => Number(m[1]));
    const horizontals = [...city.grid.matchAll(/M0 ([\d.]+)H(\d+)/g)].map((m) => Number(m[1]));
    assert.ok(verticals.length >= 3 && horizontals.length >= 3, city.grid);
    for (const [lines, extent] of [[verticals, city.width], [horizontals, city.height]] as const) {
      assert.ok(lines.every((v, i) => i === 0 || Math.abs(Math.abs(v - lines[i - 1]!) - city.scale.length) < 0.2), `${lines.join(' ')} by ${city.scale.length}`);
      assert.ok(lines.every((v) => v >= 0 && v <= extent));
    }
    assert.equal(mapCaption(1, 0, undefined), 'Where 1 listing is; north is up.');
  });
});
