import type { Listing, ListingPage, UsageType } from '@listings-api/sdk';
import { countLine, displayPrice, displaySize, displayTitle } from './format.js';

/**
 * The pages, as template functions. Every value from the API goes through `text()` or `attr()`
 * (HTML-escaped), URLs through `safeUrl()` (http(s) only), and JSON-LD through `jsonForScript()`.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Escapes text for HTML content and quoted attribute values alike. */
export function text(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}
export const attr = text;

/** An absolute http(s) URL, or undefined (never `javascript:` or the like). */
export function safeUrl(value: string | null | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** JSON inside <script type="application/ld+json">: no `<`, `>`, `&` or line separators can end the script. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The main usage types of the taxonomy: the filter's choices (names the SDK's UsageType knows). */
export const USAGE_CHOICES = ['Office', 'Retail', 'F&B', 'Industrial', 'Clinic'] as const satisfies readonly UsageType[];
export type UsageChoice = (typeof USAGE_CHOICES)[number];
export const isUsageChoice = (value: string): value is UsageChoice => (USAGE_CHOICES as readonly string[]).includes(value);

export { countLine, displayPrice, displaySize, displayTitle } from './format.js';

/** The cover image (images[cover_image_index]), if it is a usable URL. */
export function coverOf(listing: Pick<Listing, 'images' | 'cover_image_index'>): string | undefined {
  return safeUrl(listing.images[listing.cover_image_index] ?? listing.images[0]);
}

/**
 * An image in a frame whose background is the placeholder: without a URL the frame shows "No photo";
 * when the image fails to load, alt="" keeps the browser from drawing a broken-image icon, the
 * placeholder shows through, and the page's script (if it runs) adds "Photo unavailable".
 */
export function picture(url: string | undefined, eager = false): string {
  if (url === undefined) return `<div class="thumb thumb-none"><span class="thumb-note">No photo</span></div>`;
  return `<div class="thumb"><span class="thumb-note">Photo unavailable</span><img src="${attr(url)}" alt="" loading="${eager ? 'eager' : 'lazy'}" decoding="async" width="640" height="480"></div>`;
}

export function card(listing: Listing): string {
  const href = `/listings/${encodeURIComponent(listing.id)}`;
  return `<li class="card">
  <a class="card-link" href="${attr(href)}">${picture(coverOf(listing))}<h2 class="card-title">${text(displayTitle(listing))}</h2></a>
  <p class="facts"><span class="size">${text(displaySize(listing.size_sqft))}</span><span class="price">${text(displayPrice(listing))}</span></p>
  ${tags(listing.usage_types)}
</li>`;
}

function tags(usageTypes: readonly string[]): string {
  return `<ul class="tags">${usageTypes.map((u) => `<li>${text(u)}</li>`).join('')}</ul>`;
}

function layout(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${text(title)}</title>
<link rel="stylesheet" href="/assets/site.css">
${head}<script type="module" src="/assets/site.js"></script>
</head>
<body>
<header class="site-header"><a class="brand" href="/">Harbourfront Spaces</a><span class="tagline">Commercial space for lease</span></header>
<main>
${body}
</main>
<footer class="site-footer">Listings from the Listings Developer API, through this site's own server.</footer>
</body>
</html>
`;
}

export interface ListPageModel {
  page: ListingPage;
  usage: string | undefined;
  perPage: number;
}

/** The address of page `p` of the listings, of a usage type or all. */
function pageHref(usage: string | undefined, p: number): string {
  return `/?${new URLSearchParams({ ...(usage ? { usage } : {}), ...(p > 1 ? { page: String(p) } : {}) })}`.replace(/\?$/, '');
}

/** The listings page: filter, cards, and a next-page link that the script turns into "Load more". */
export function listPage({ page, usage, perPage }: ListPageModel): string {
  const query = (p: number) => pageHref(usage, p);
  const options = [`<option value="">All types</option>`, ...USAGE_CHOICES.map((u) => `<option value="${attr(u)}"${u === usage ? ' selected' : ''}>${text(u)}</option>`)];
  const more = page.page < page.pages
    ? `<a class="button load-more" href="${attr(query(page.page + 1))}" rel="next" data-load-more data-page="${page.page + 1}" data-per-page="${perPage}" data-usage="${attr(usage ?? '')}">Next page</a>`
    : '';
  const previous = page.page > 1 ? `<a class="button" href="${attr(query(page.page - 1))}" rel="prev">Previous page</a>` : '';
  const items = page.items.length === 0 ? `<p class="empty">No listings${usage ? ` of type ${text(usage)}` : ''} right now.</p>` : `<ul class="cards" id="listings">${page.items.map(card).join('\n')}</ul>`;
  return layout(
    usage ? `${usage} space for lease` : 'Space for lease',
    `<div class="toolbar">
<h1>${usage ? `${text(usage)} space for lease` : 'Space for lease'}</h1>
<form class="filter" method="get" action="/">
<label for="usage">Usage type</label>
<select id="usage" name="usage">${options.join('')}</select>
<button type="submit">Filter</button>
</form>
</div>
<p class="count" id="count">${text(countLine(page))}</p>
${items}
<nav class="pager" aria-label="Pages">${previous}${more}</nav>
<p class="status" id="status" role="status"></p>`,
  );
}

/** schema.org RealEstateListing with an Offer: what search engines read of a listing page. */
export function jsonLd(listing: Listing, pageUrl: string): Record<string, unknown> {
  const images = listing.images.map((u) => safeUrl(u)).filter((u): u is string => u !== undefined);
  const offer: Record<string, unknown> = {
    '@type': 'Offer',
    businessFunction: 'http://purl.org/goodrelations/v1#LeaseOut',
    priceCurrency: listing.currency,
    availability: 'https://schema.org/InStock',
  };
  if (listing.price !== null) offer.price = listing.price;
  // What the price is per (the API's price_basis): UN/CEFACT MON is a month, FTK a square foot.
  if (listing.price !== null && listing.price_basis !== null) {
    offer.priceSpecification = {
      '@type': 'UnitPriceSpecification',
      price: listing.price,
      priceCurrency: listing.currency,
      unitCode: 'MON',
      ...(listing.price_basis === 'per_sqft_per_month' && { referenceQuantity: { '@type': 'QuantitativeValue', value: 1, unitCode: 'FTK' } }),
    };
  }
  if (listing.available_from !== null) offer.availabilityStarts = listing.available_from;
  if (listing.expiry_date !== null) offer.validThrough = listing.expiry_date;
  const data: Record<string, unknown> = {
    '@context': 'https://schema.org',
    '@type': 'RealEstateListing',
    name: displayTitle(listing),
    url: pageUrl,
    datePosted: listing.created_at,
    offers: offer,
  };
  if (images.length > 0) data.image = images;
  if (listing.size_sqft !== null) data.floorSize = { '@type': 'QuantitativeValue', value: listing.size_sqft, unitCode: 'FTK' };
  if (listing.street_address !== null || listing.building_name !== null) {
    data.contentLocation = { '@type': 'Place', ...(listing.building_name ? { name: listing.building_name } : {}), ...(listing.street_address ? { address: listing.street_address } : {}) };
  }
  const original = safeUrl(listing.url);
  if (original !== undefined) data.sameAs = original;
  return data;
}

/** One listing: every image, the facts, and its JSON-LD. */
export function detailPage(listing: Listing, pageUrl: string): string {
  const images = listing.images.map((u) => safeUrl(u));
  const gallery = images.length === 0 ? picture(undefined) : `<ul class="gallery">${images.map((u, i) => `<li>${picture(u, i === 0)}</li>`).join('')}</ul>`;
  const facts: Array<[string, string | null]> = [
    ['Size', displaySize(listing.size_sqft)],
    ['Asking rent', displayPrice(listing)],
    ['Available from', listing.available_from ? listing.available_from.slice(0, 10) : null],
    ['Minimum lease', listing.min_lease_tenure],
    ['Building', listing.building_name],
    ['Address', listing.street_address],
    ['Lease takeover', listing.is_takeover ? 'Yes' : null],
  ];
  const original = safeUrl(listing.url);
  return layout(
    displayTitle(listing),
    `<p class="back"><a href="/">All listings</a></p>
<article class="listing">
<h1>${text(displayTitle(listing))}</h1>
${tags(listing.usage_types)}
${gallery}
<dl class="details">${facts.filter(([, v]) => v !== null).map(([k, v]) => `<dt>${text(k)}</dt><dd>${text(v)}</dd>`).join('')}</dl>
${original ? `<p><a class="button" href="${attr(original)}" rel="noopener">View on the listing's own page</a></p>` : ''}
</article>`,
    `<link rel="canonical" href="${attr(pageUrl)}">\n<script type="application/ld+json">${jsonForScript(jsonLd(listing, pageUrl))}</script>\n`,
  );
}

export function messagePage(title: string, message: string): string {
  return layout(title, `<h1>${text(title)}</h1><p>${text(message)}</p><p><a href="/">All listings</a></p>`);
}

/**
 * A page number past the last (an old link, or listings that have gone since): there is no such
 * page, so no "page 9 of 3"; the links lead to the last page there is and to the first.
 */
export function noSuchPage({ requested, pages, usage }: { requested: number; pages: number; usage: string | undefined }): string {
  const what = usage ? `${text(usage)} listings` : 'listings';
  return layout(
    `No page ${requested}`,
    `<h1>No page ${requested}</h1>
<p>There ${pages === 1 ? 'is 1 page' : `are ${pages} pages`} of ${what}.</p>
<nav class="pager" aria-label="Pages"><a class="button" href="${attr(pageHref(usage, pages))}" rel="last">Last page (${pages})</a><a class="button" href="/" rel="first">First page</a></nav>`,
  );
}
