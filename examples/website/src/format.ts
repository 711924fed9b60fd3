import type { Listing } from '@listings-api/sdk';

/**
 * How the site words a listing's facts: used by the server's pages (render.ts) and, compiled as
 * it is, by the browser's "Load more" (public/site.js imports /assets/format.js), so a card
 * reads the same whichever built it. No imports but types: it runs in both.
 */

/** A title for every listing: its own, or what it is and where. */
export function displayTitle(listing: Pick<Listing, 'title' | 'usage_types' | 'building_name'>): string {
  const own = listing.title?.trim();
  if (own) return own;
  const kind = listing.usage_types.at(-1) ?? 'Commercial';
  return listing.building_name ? `${kind} space at ${listing.building_name}` : `${kind} space`;
}

export function displaySize(size: number | null): string {
  return size === null ? 'Size on request' : `${new Intl.NumberFormat('en').format(size)} sq ft`;
}

/** What follows the amount for each price basis (the API's `price_basis`); none when it is not set. */
const BASIS_SUFFIX: Record<string, string> = { per_sqft_per_month: ' psf/mo', per_month: ' /mo' };

/**
 * The asking rent as people quote it: `SGD 12.50 psf/mo`, `SGD 30,000 /mo` (a whole-unit rent in
 * whole units), the amount alone when the basis is not set, or "Price on request".
 */
export function displayPrice(listing: Pick<Listing, 'price' | 'currency' | 'price_basis'>): string {
  const { price, currency, price_basis: basis } = listing;
  if (price === null) return 'Price on request';
  const suffix = (basis && BASIS_SUFFIX[basis]) ?? '';
  const whole = basis === 'per_month' && Number.isInteger(price);
  try {
    const format = new Intl.NumberFormat('en', { style: 'currency', currency, currencyDisplay: 'code', ...(whole && { minimumFractionDigits: 0, maximumFractionDigits: 0 }) });
    return format.format(price).replace(/\u00a0/g, ' ') + suffix;
  } catch {
    return `${currency} ${price}${suffix}`;
  }
}

/**
 * The line above the cards: how many listings there are and which part is shown. `shown`: how
 * many cards the page holds once "Load more" has added pages (then pages no longer apply).
 */
export function countLine(page: { total: number; page: number; pages: number }, shown?: number): string {
  const total = `${page.total} ${page.total === 1 ? 'listing' : 'listings'}`;
  if (shown !== undefined) return shown >= page.total ? `${total}, all shown` : `${total}, ${shown} shown`;
  return page.pages > 1 ? `${total}, page ${page.page} of ${page.pages}` : total;
}

/**
 * A distance as a card says it: `350 m` (to 10 m), `1.2 km` (to 100 m below 10 km), `14 km`.
 * Also the scale bar's label on the map.
 */
export function displayDistance(metres: number): string {
  if (metres < 995) return `${Math.round(metres / 10) * 10} m`;
  if (metres < 9_950) return `${(Math.round(metres / 100) / 10).toFixed(1).replace(/\.0$/, '')} km`;
  return `${new Intl.NumberFormat('en').format(Math.round(metres / 1000))} km`;
}

/** The caption of the results' map: how many listings it shows, around which place, how many are not on it. */
export function mapCaption(located: number, offMap: number, centreName: string | undefined): string {
  if (located === 0) return centreName ? `${centreName} (+); none of these listings has a location to map.` : 'None of these listings has a location to map.';
  const shown = located === 1 ? '1 listing is' : `${located} listings are`;
  return `Where ${shown}${centreName ? `, around ${centreName} (+)` : ''}; north is up.${offMap > 0 ? ` ${offMap} not on the map.` : ''}`;
}
