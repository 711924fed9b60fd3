import { Type } from 'typebox';
import { badRequest } from '../../../core/api-error.js';
import { MAX_PER_PAGE } from '../../../listings/listing.js';
import { USAGE_NAMES, usageMask } from '../../../listings/taxonomy.js';
import { SORT_KEYS, type ListingFilter } from '../../../readmodel/views.js';
import { defineEndpoint } from '../endpoint.js';
import { ERROR_EXAMPLES as x, featuredListing, sparseListing } from '../examples.js';
import { Query } from '../query.js';
import { CHECKS } from './checks.js';

export const DEFAULT_PER_PAGE = 20;

const bound = (which: 'at least' | 'at most', field: string, example: number) =>
  Type.Optional(Query.decimal({
    description: `Only listings whose \`${field}\` is ${which} this (inclusive); a listing whose \`${field}\` is null does not match. A non-negative decimal number: digits, optionally a dot and more digits (\`.5\` and \`5.\` are refused), an optional leading \`+\`, no other sign, spaces or exponent, no upper cap. A lower bound above its upper bound is 400.`,
    example: String(example),
  }));

/** Spec 4.2, D7 (paging), D23 (filters and sort). */
const listQuery = Type.Object({
  page: Query.wholeNumber({
    minimum: 1,
    default: 1,
    description: 'The page number, from 1. A base-10 whole number: an optional leading `+`, no other sign, no decimals, exponent or surrounding spaces; at least 1 and at most 2147483647; given at most once. Anything else is 400 `bad_request`. A page beyond the last gives 200 with `items: []`.',
    example: 2,
  }),
  per_page: Query.wholeNumber({
    minimum: 1,
    default: DEFAULT_PER_PAGE,
    clampTo: MAX_PER_PAGE,
    description: `The page size, written like \`page\`, at least 1, else 400 \`bad_request\`. A value above ${MAX_PER_PAGE} is not an error: it is clamped to ${MAX_PER_PAGE}, and the envelope's \`per_page\` reports the size applied. Above 2147483647, or given twice, is 400.`,
    example: 50,
  }),
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
  sort: Type.Optional(Query.oneOf(SORT_KEYS, {
    description: 'Orders by one field instead of the default order (featured first, then newest first): `price`, `size_sqft` or `created_at`, ascending, or descending with a leading `-`. Listings whose field is null come last in both directions; ties are broken by `id`, ascending; featured listings are not put first.',
    example: '-price',
  })),
});

function number(text: string | undefined): number | undefined {
  return text === undefined ? undefined : Number(text);
}

function ordered(minName: string, min: number | undefined, maxName: string, max: number | undefined): void {
  if (min !== undefined && max !== undefined && min > max) throw badRequest(`Query parameter "${minName}" (${min}) is above "${maxName}" (${max}).`);
}

export const listListings = defineEndpoint({
  url: '/v1/listings',
  operationId: 'listListings',
  summary: 'List active listings',
  description: [
    `The active listings of the key's account in the key's country, a page at a time: featured listings first, then newest first (by \`created_at\`), then by \`id\`, so that paging is stable and no listing appears on two pages or on none. A listing is active when its status is active and its expiry date, if any, has not passed; one that expires drops out at once.`,
    '',
    'To read everything, request `page=1, 2, ...` until `page` equals `pages` (`pages` is at least 1, even when there are no listings). A page beyond the last is not an error: it has `items: []` and the true `total` and `pages`.',
    '',
    'Filters (all optional, each given at most once) narrow the list to what a page of your site shows, e.g. `usage_type=Office&min_size_sqft=1000`; `sort` orders it by price, size or creation time instead. `total` and `pages` then count the filtered set.',
    '',
    `${CHECKS}, the query parameters (400).`,
  ],
  querystring: listQuery,
  ok: {
    description: 'A page of listings in the page envelope. With filters, `total` and `pages` count the filtered listings.',
    schema: 'ListingPage',
    examples: {
      page: { summary: 'The first page of two listings', value: { items: [featuredListing, sparseListing], page: 1, per_page: 20, total: 2, pages: 1 } },
      clamped: { summary: 'per_page=500, clamped to 100, on the second page', value: { items: [], page: 2, per_page: 100, total: 2, pages: 1 } },
      empty: { summary: 'No active listings', value: { items: [], page: 1, per_page: 20, total: 0, pages: 1 } },
    },
  },
  badRequest: {
    description:
      '`page` or `per_page` is not a base-10 whole number (an optional leading `+`; no other sign, decimals, exponent or surrounding spaces), is below 1 or above 2147483647, or is given more than once; or a filter or `sort` is malformed, given more than once, names a usage type outside the taxonomy, or has a lower bound above its upper bound. The message names the parameter.',
    examples: {
      pageNotANumber: x.pageNotANumber,
      perPageTwice: x.perPageTwice,
      perPageZero: x.perPageZero,
      usageTypeUnknown: x.usageTypeUnknown,
      minAboveMax: x.minAboveMax,
      sortUnknown: x.sortUnknown,
    },
  },
  read(reads, tenant, query) {
    const minSize = number(query.min_size_sqft);
    const maxSize = number(query.max_size_sqft);
    const minPrice = number(query.min_price);
    const maxPrice = number(query.max_price);
    ordered('min_size_sqft', minSize, 'max_size_sqft', maxSize);
    ordered('min_price', minPrice, 'max_price', maxPrice);
    const usage = query.usage_type === undefined ? 0 : usageMask(query.usage_type);
    const { featured, takeover, sort } = query;
    const filtered = usage !== 0 || minSize !== undefined || maxSize !== undefined || minPrice !== undefined
      || maxPrice !== undefined || featured !== undefined || takeover !== undefined;
    if (!filtered && sort === undefined) return reads.listPage(tenant, query.page, query.per_page);
    const filter: ListingFilter | undefined = filtered ? { usage, minSize, maxSize, minPrice, maxPrice, featured, takeover } : undefined;
    // The filter and sort in one canonical text (equal for equal meanings): the view's cache key.
    const key = JSON.stringify([usage, minSize, maxSize, minPrice, maxPrice, featured, takeover, sort ?? null]);
    return reads.listPage(tenant, query.page, query.per_page, { filter, sort, key });
  },
});
