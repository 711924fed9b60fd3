import type { Country, Listing, ListingFacets, ListingPage, UsageType } from '@listings-api/sdk';
import { countLine, displayDistance, displayPrice, displaySize, displayTitle, mapCaption } from './format.js';
import { distanceMetres, plot, type LatLng } from './geo.js';
import { RADIUS_CHOICES_KM, DEFAULT_RADIUS_KM, type Place } from './places.js';
import { searchHref, type Search } from './search.js';

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

/** The main usage types of the taxonomy: the chips shown when the facets could not be read (names the SDK's UsageType knows). */
export const USAGE_CHOICES = ['Office', 'Retail', 'F&B', 'Industrial', 'Clinic'] as const satisfies readonly UsageType[];
export type UsageChoice = (typeof USAGE_CHOICES)[number];
export const isUsageChoice = (value: string): value is UsageChoice => (USAGE_CHOICES as readonly string[]).includes(value);

export { countLine, displayDistance, displayPrice, displaySize, displayTitle, mapCaption } from './format.js';
export { distanceMetres, plot, EARTH_RADIUS_M, type LatLng, type Plot } from './geo.js';
export { PLACES, placesFor, RADIUS_CHOICES_KM, DEFAULT_RADIUS_KM, type Place } from './places.js';
export { parseSearch, searchHref, searchProblem, refusedSearch, selectionOf, listParamsOf, facetsSelectionOf, isUsageType, MAX_SEARCH_LENGTH, type Search, type ParsedSearch } from './search.js';

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

/** The place a search is near, for the distance on each card and the map's centre. */
export interface Centre extends LatLng {
  name: string;
}

/**
 * One listing's card. With `near` (a search near a place), the card says how far the listing is,
 * worked out here (haversine, as the API measures). `data-lat`/`data-lng` let the page's script
 * draw the map again when "Load more" adds cards.
 */
export function card(listing: Listing, near?: Centre): string {
  const href = `/listings/${encodeURIComponent(listing.id)}`;
  const at = listing.location ? ` data-lat="${attr(listing.location.lat)}" data-lng="${attr(listing.location.lng)}"` : '';
  const distance = near && listing.location
    ? `\n  <p class="distance">${text(`${displayDistance(distanceMetres(near, listing.location))} from ${near.name}`)}</p>`
    : '';
  return `<li class="card"${at}>
  <a class="card-link" href="${attr(href)}">${picture(coverOf(listing))}<h2 class="card-title">${text(displayTitle(listing))}</h2></a>
  <p class="facts"><span class="size">${text(displaySize(listing.size_sqft))}</span><span class="price">${text(displayPrice(listing))}</span></p>${distance}
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

/** How the near select names each country's places when the key's country is not known. */
const COUNTRY_NAMES: Record<Country, string> = { sg: 'Singapore', my: 'Malaysia', uk: 'United Kingdom', in: 'India', us: 'United States', ca: 'Canada', au: 'Australia', nz: 'New Zealand' };

/** The places of the near select: one country's, or every country's in groups. */
export type PlaceChoices = ReadonlyArray<{ country: Country; places: readonly Place[] }>;

export interface SearchFormModel {
  search: Search;
  places: PlaceChoices;
  /** The facets of the search without its usage type (chips with counts); undefined: chips without counts. */
  facets?: ListingFacets | undefined;
}

/** The chips' names: the taxonomy's (main types and sub-types) that some listing of the search has, and the chosen one. */
function chipChoices(facets: ListingFacets | undefined, usage: string | undefined): Array<{ name: string; count?: number }> {
  if (facets === undefined) {
    const names: string[] = [...USAGE_CHOICES];
    if (usage !== undefined && !names.includes(usage)) names.push(usage);
    return names.map((name) => ({ name }));
  }
  return facets.usage_types.filter((u) => u.count > 0 || u.name === usage);
}

const chipLabel = (name: string, count: number | undefined) => (count === undefined ? name : `${name} (${count})`);

/**
 * The search form, a plain GET form: the text, the place and radius, a Search button, and the
 * usage type chips, which are its submit buttons (`name="usage"`), so that a chip keeps the text,
 * the place and the radius, even typed and not yet searched. The chosen chip is pressed
 * (`aria-pressed="true"`); pressing it again chooses all types. The Search button comes first (a
 * form's default button, for Enter in the text box) and keeps the chosen usage type.
 */
export function searchForm({ search, places, facets }: SearchFormModel): string {
  const usage = search.usage;
  const placeOptions = places.length === 1
    ? places[0]!.places.map((p) => placeOption(p, search.near)).join('')
    : places.map(({ country, places: ps }) => `<optgroup label="${attr(COUNTRY_NAMES[country])}">${ps.map((p) => placeOption(p, search.near)).join('')}</optgroup>`).join('');
  const radius = search.radiusKm ?? DEFAULT_RADIUS_KM;
  const radiusOptions = RADIUS_CHOICES_KM.map((km) => `<option value="${km}"${km === radius ? ' selected' : ''}>${km} km</option>`).join('');
  const chips = [
    chip('', chipLabel('All types', facets?.total), usage === undefined, 'chip chip-all'),
    ...chipChoices(facets, usage).map(({ name, count }) =>
      chip(name === usage ? '' : name, chipLabel(name, count), name === usage, (USAGE_CHOICES as readonly string[]).includes(name) ? 'chip' : 'chip chip-sub')),
  ];
  return `<form class="filter search" method="get" action="/" role="search">
<div class="search-fields">
<p class="field field-q"><label for="q">Search</label><input type="search" id="q" name="q" value="${attr(search.q ?? '')}" maxlength="200" placeholder="e.g. cafe, marina, orchard office" autocomplete="off"></p>
<p class="field"><label for="near">Near</label><select id="near" name="near"><option value="">Anywhere</option>${placeOptions}</select></p>
<p class="field"><label for="radius">Within</label><select id="radius" name="radius">${radiusOptions}</select></p>
<button type="submit" class="search-button"${usage ? ` name="usage" value="${attr(usage)}"` : ''}>Search</button>
</div>
<fieldset class="chips"><legend>Usage type</legend>${chips.join('')}</fieldset>
</form>`;
}

function placeOption(place: Place, chosen: Place | undefined): string {
  return `<option value="${attr(place.id)}"${place.id === chosen?.id ? ' selected' : ''}>${text(place.name)}</option>`;
}

function chip(value: string, label: string, pressed: boolean, className: string): string {
  return `<button type="submit" name="usage" value="${attr(value)}" class="${className}" aria-pressed="${pressed}">${text(label)}</button>`;
}

/** The heading of a search: its usage type, as it always was ("Office space for lease"). */
function headline(search: Search): string {
  return search.usage ? `${search.usage} space for lease` : 'Space for lease';
}

/** What the search is, under the heading: `Matching “cafe” · within 2 km of Raffles Place, nearest first`. */
function summary(search: Search): string {
  const parts = [
    ...(search.q ? [`Matching “${search.q}”`] : []),
    ...(search.near ? [`within ${search.radiusKm ?? DEFAULT_RADIUS_KM} km of ${search.near.name}, nearest first`] : []),
  ];
  return parts.length === 0 ? '' : `<p class="summary">${text(parts.join(' · '))}</p>\n`;
}

export interface ListPageModel extends SearchFormModel {
  page: ListingPage;
  perPage: number;
}

/** The listings page: the search form and chips, cards, the map, and a next-page link that the script turns into "Load more". */
export function listPage({ page, search, places, facets, perPage }: ListPageModel): string {
  const query = (p: number) => searchHref(search, p);
  const centre: Centre | undefined = search.near && { lat: search.near.lat, lng: search.near.lng, name: search.near.name };
  const radiusM = (search.radiusKm ?? DEFAULT_RADIUS_KM) * 1000;
  // What "Load more" reads: the same search, through the site's /api.
  const data = [
    `data-load-more data-page="${page.page + 1}" data-per-page="${perPage}" data-usage="${attr(search.usage ?? '')}" data-q="${attr(search.q ?? '')}"`,
    ...(centre ? [`data-near-lat="${attr(centre.lat)}" data-near-lng="${attr(centre.lng)}" data-near-name="${attr(centre.name)}" data-radius-m="${radiusM}"`] : []),
  ].join(' ');
  const more = page.page < page.pages ? `<a class="button load-more" href="${attr(query(page.page + 1))}" rel="next" ${data}>Next page</a>` : '';
  const previous = page.page > 1 ? `<a class="button" href="${attr(query(page.page - 1))}" rel="prev">Previous page</a>` : '';
  const what = [search.usage && `of type ${search.usage}`, search.q && `matching “${search.q}”`, search.near && `within ${search.radiusKm ?? DEFAULT_RADIUS_KM} km of ${search.near.name}`].filter(Boolean).join(' ');
  const items = page.items.length === 0
    ? `<p class="empty">${text(`No listings${what ? ` ${what}` : ''} right now.`)}</p>`
    : `<div class="results"><ul class="cards" id="listings">${page.items.map((l) => card(l, centre)).join('\n')}</ul>
${resultsMap(page.items, centre && { ...centre, radiusM })}</div>`;
  // The window's title says the whole search, for the history and bookmarks.
  const title = [headline(search), search.q && `“${search.q}”`, search.near && `near ${search.near.name}`].filter(Boolean).join(', ');
  return layout(
    title,
    `<div class="toolbar">
<h1>${text(headline(search))}</h1>
${searchForm({ search, places, facets })}
</div>
${summary(search)}<p class="count" id="count">${text(countLine(page))}</p>
${items}
<nav class="pager" aria-label="Pages">${previous}${more}</nav>
<p class="status" id="status" role="status"></p>`,
  );
}

/**
 * A search the API refused (400): a `q` with no letter or digit, or longer than 200 characters.
 * The form keeps what was typed, and the page says what to change; no listings, no map.
 */
export function searchErrorPage({ search, places, message }: { search: Search; places: PlaceChoices; message: string }): string {
  return layout(
    'Search not understood',
    `<div class="toolbar">
<h1>${text(headline(search))}</h1>
${searchForm({ search, places })}
</div>
<p class="notice" id="search-error" role="alert">${text(message)}</p>
<p><a href="/">All listings</a></p>`,
  );
}

/** The map's marks, in the viewBox's units: a listing's point, the place's circle. */
const POINT_R = 6;
const CENTRE_R = 8;

/**
 * The map of the listings shown: an inline SVG of their points in their bounding box (geo.ts's
 * plot: equal scale both ways, north up, a scale bar), each point a link to its listing with its
 * title, the place of a "near" search marked (with its radius, where it is in the picture), and the
 * listings without a location named under it. No tiles, nothing fetched: it works offline. A
 * figure with a caption; the points are links in the page's tab order, after the cards.
 */
export function resultsMap(items: readonly Listing[], near?: Centre & { radiusM: number }): string {
  const located = items.filter((l): l is Listing & { location: LatLng } => l.location !== null);
  const offMap = items.filter((l) => l.location === null);
  const drawing = plot(located.map((l) => l.location), near);
  const nearData = near ? ` data-near-lat="${attr(near.lat)}" data-near-lng="${attr(near.lng)}" data-near-name="${attr(near.name)}" data-radius-m="${attr(near.radiusM)}"` : '';
  let svg = '';
  if (drawing !== undefined) {
    const { width, height } = drawing;
    const points = located.map((l) => {
      const { x, y } = drawing.at(l.location);
      const title = displayTitle(l);
      const label = near ? `${title}, ${displayDistance(distanceMetres(near, l.location))} from ${near.name}` : title;
      return `<a class="map-point" href="${attr(`/listings/${encodeURIComponent(l.id)}`)}" aria-label="${attr(label)}"><circle cx="${x}" cy="${y}" r="${POINT_R}"><title>${text(title)}</title></circle></a>`;
    });
    // The radius under the points, the place's cross over them (which could otherwise hide it).
    let radius = '';
    let centre = '';
    if (near) {
      const { x, y } = drawing.at(near);
      radius = `<circle class="map-radius" cx="${x}" cy="${y}" r="${Math.round((near.radiusM / drawing.metresPerUnit) * 10) / 10}"/>`;
      centre = `<g class="map-centre"><title>${text(near.name)}</title><circle cx="${x}" cy="${y}" r="${CENTRE_R}"/><path d="M${x - 5} ${y}h10M${x} ${y - 5}v10"/></g>`;
    }
    const bar = drawing.scale;
    const scale = `<g class="map-scale"><path d="M12 ${height - 12}h${bar.length}"/><text x="12" y="${height - 18}">${text(displayDistance(bar.metres))}</text></g>`;
    svg = `<svg class="map-plot" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" aria-labelledby="map-caption">` +
      `<rect class="map-ground" width="${width}" height="${height}" rx="8"/><path class="map-grid" d="${attr(drawing.grid)}"/>${radius}<g class="map-points">${points.join('')}</g>${centre}${scale}</svg>`;
  }
  const caption = mapCaption(located.length, offMap.length, near?.name);
  const off = offMap.length === 0
    ? ''
    : `<p class="off-map">Not on the map (no location): ${offMap.map((l) => `<a href="${attr(`/listings/${encodeURIComponent(l.id)}`)}">${text(displayTitle(l))}</a>`).join(', ')}</p>`;
  return `<figure class="map" id="map"${nearData}>${svg}<figcaption id="map-caption">${text(caption)}</figcaption>${off}</figure>`;
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
 * page, so no "page 9 of 3"; the links lead to the last page there is (of the same search) and to the first.
 */
export function noSuchPage({ requested, pages, search }: { requested: number; pages: number; search: Search }): string {
  const what = search.usage ? `${text(search.usage)} listings` : 'listings';
  const narrowed = search.q !== undefined || search.near !== undefined ? ' for this search' : '';
  return layout(
    `No page ${requested}`,
    `<h1>No page ${requested}</h1>
<p>There ${pages === 1 ? 'is 1 page' : `are ${pages} pages`} of ${what}${narrowed}.</p>
<nav class="pager" aria-label="Pages"><a class="button" href="${attr(searchHref(search, pages))}" rel="last">Last page (${pages})</a><a class="button" href="/" rel="first">First page</a></nav>`,
  );
}
