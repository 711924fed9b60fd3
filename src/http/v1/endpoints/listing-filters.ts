import { Type } from '#typebox';
import { badRequest } from '../../../core/api-error.js';
import { searchWords } from '../../../listings/search-words.js';
import { USAGE_NAMES, usageMask } from '../../../listings/taxonomy.js';
import type { ListingFilter } from '../../../readmodel/views.js';
import { Query } from '../query.js';

/**
 * The parameters that choose which listings a key's list shows (D23 filters, D26 text, D28
 * place), declared once: the list (list-listings.ts) and its counts (facets.ts) take the same
 * ones, with the same rules, messages and documentation.
 */

/** D28: the radius when `near` comes without one. */
export const DEFAULT_RADIUS_M = 5000;
/** D26: the longest `q`, in characters once trimmed. */
export const MAX_SEARCH_LENGTH = 200;

const bound = (which: 'at least' | 'at most', field: string, example: number) =>
  Type.Optional(Query.decimal({
    description: `Only listings whose \`${field}\` is ${which} this (inclusive); a listing whose \`${field}\` is null does not match. A non-negative decimal number: digits, optionally a dot and more digits (\`.5\` and \`5.\` are refused), an optional leading \`+\`, no other sign, spaces or exponent, no upper cap. A lower bound above its upper bound is 400.`,
    example: String(example),
  }));

const COORDINATE_FORM = 'decimal degrees, each written like the price bounds with an optional leading `-`';

export const FILTER_PARAMETERS = {
  usage_type: Type.Optional(Query.names(USAGE_NAMES, {
    noun: 'a usage type',
    description: `Only listings of these usage types: one or more names of the taxonomy, comma-separated, exactly spelt (case-sensitive, no spaces around names; \`F&B\` is sent as \`F%26B\`, \`Shared Office\` as \`Shared%20Office\`: a \`+\` is a plus sign, not a space). A main type matches every listing of that type; a sub-type matches listings with that sub-type; several names match any of them. Names: ${USAGE_NAMES.join(', ')}. Any other name is 400.`,
    example: ['Office', 'Retail'],
  })),
  min_size_sqft: bound('at least', 'size_sqft', 800),
  max_size_sqft: bound('at most', 'size_sqft', 2500),
  min_price: bound('at least', 'price', 4.5),
  max_price: bound('at most', 'price', 12),
  featured: Type.Optional(Query.boolean({ description: 'Only featured (`true`) or only not featured (`false`) listings.', example: true })),
  takeover: Type.Optional(Query.boolean({ description: 'Only lease takeovers (`true`) or only other listings (`false`).', example: false })),
  q: Type.Optional(Query.searchText({
    maxLength: MAX_SEARCH_LENGTH,
    description: `Only listings whose title, building name, street address or usage types hold every word of this text, each as the start of one of their words: \`off mar\` matches "Office at Marina Bay". Case and accents do not matter (\`cafe\` matches "Café"); words are cut at anything that is not a letter or a digit. 1 to ${MAX_SEARCH_LENGTH} characters once spaces around it are trimmed, with at least one letter or digit; anything else is 400. Combines with every other filter; the order stays the list's (or \`sort\`'s).`,
    example: 'marina office',
  })),
  near: Type.Optional(Query.point({
    description: `Only listings within \`radius_m\` metres of this point: \`<lat>,<lng>\` in ${COORDINATE_FORM} (latitude -90 to 90, longitude -180 to 180). Great-circle distance on a sphere of radius 6,371,008.8 m, inclusive. A listing without a location never matches. Not with \`bbox\`.`,
    example: '1.2834,103.8513',
  })),
  radius_m: Type.Optional(Query.wholeNumber({
    minimum: 1,
    maximum: 100_000,
    requires: 'near',
    description: `The radius of \`near\`, in metres: a whole number written like \`page\`, 1 to 100000; ${DEFAULT_RADIUS_M} when left out. Only with \`near\`.`,
    example: 2000,
  })),
  bbox: Type.Optional(Query.box({
    description: `Only listings inside this box: \`<min_lng>,<min_lat>,<max_lng>,<max_lat>\` (GeoJSON order) in ${COORDINATE_FORM}, edges included. A \`min_lng\` above \`max_lng\` is a box across the antimeridian (longitude 180); \`min_lat\` above \`max_lat\` is 400. A listing without a location never matches. Not with \`near\`.`,
    example: '103.80,1.26,103.87,1.31',
  })),
};

/** The values of FILTER_PARAMETERS once validated. */
export interface FilterQuery {
  usage_type?: string[];
  min_size_sqft?: string;
  max_size_sqft?: string;
  min_price?: string;
  max_price?: string;
  featured?: boolean;
  takeover?: boolean;
  q?: string;
  near?: { lat: number; lng: number };
  radius_m?: number;
  bbox?: { minLng: number; minLat: number; maxLng: number; maxLat: number };
}

function number(text: string | undefined): number | undefined {
  return text === undefined ? undefined : Number(text);
}

/** A min above its max: 400 naming both, with the numbers as sent (10^309 is not "Infinity" to the client). */
function ordered(query: FilterQuery, minName: 'min_size_sqft' | 'min_price', min: number | undefined, maxName: 'max_size_sqft' | 'max_price', max: number | undefined): void {
  if (min !== undefined && max !== undefined && min > max) {
    throw badRequest(`Query parameter "${minName}" (${asSent(query[minName]!)}) is above "${maxName}" (${asSent(query[maxName]!)}).`);
  }
}

/** A validated decimal (digits and a dot) as sent, cut short if long. */
const asSent = (decimal: string) => (decimal.length > 40 ? `${decimal.slice(0, 40)}…` : decimal);

/**
 * The filter a validated query asks for (undefined: none) and its canonical text (equal for
 * equal meanings: the key of the view and of cached answers), or the 400 of the rules between
 * parameters.
 */
export function filterOf(query: FilterQuery): { filter: ListingFilter | undefined; key: string } {
  const minSize = number(query.min_size_sqft);
  const maxSize = number(query.max_size_sqft);
  const minPrice = number(query.min_price);
  const maxPrice = number(query.max_price);
  ordered(query, 'min_size_sqft', minSize, 'max_size_sqft', maxSize);
  ordered(query, 'min_price', minPrice, 'max_price', maxPrice);
  if (query.near !== undefined && query.bbox !== undefined) throw badRequest('Query parameters "near" and "bbox" cannot be combined; send one of them.');
  if (query.radius_m !== undefined && query.near === undefined) throw badRequest('Query parameter "radius_m" needs "near" (the point the radius is around).');
  const usage = query.usage_type === undefined ? 0 : usageMask(query.usage_type);
  const { featured, takeover, bbox } = query;
  const words = query.q === undefined ? undefined : searchWords(query.q);
  const near = query.near === undefined ? undefined : { ...query.near, radiusM: query.radius_m ?? DEFAULT_RADIUS_M };
  const parts = [usage, minSize, maxSize, minPrice, maxPrice, featured, takeover, words, near, bbox];
  if (usage === 0 && parts.slice(1).every((part) => part === undefined)) return { filter: undefined, key: '' };
  const filter: ListingFilter = { usage, minSize, maxSize, minPrice, maxPrice, featured, takeover, words, near, bbox };
  // A bound past the largest double reads as Infinity (D23 has no upper cap), which JSON writes as
  // null, the same as no bound: written as text, it keeps a key of its own.
  return { filter, key: JSON.stringify(parts, (_name, value: unknown) => (value === Infinity ? 'Infinity' : value)) };
}
