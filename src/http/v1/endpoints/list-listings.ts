import { Type } from '#typebox';
import { badRequest } from '../../../core/api-error.js';
import { MAX_PER_PAGE } from '../../../listings/listing.js';
import { SORT_KEYS } from '../../../readmodel/views.js';
import { defineEndpoint } from '../endpoint.js';
import { ERROR_EXAMPLES as x, featuredListing, sparseListing } from '../examples.js';
import { Query } from '../query.js';
import { CHECKS } from './checks.js';
import { FILTER_PARAMETERS, filterOf } from './listing-filters.js';

export const DEFAULT_PER_PAGE = 20;

const FILTER_NAMES = Object.keys(FILTER_PARAMETERS);

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
  ...FILTER_PARAMETERS,
  sort: Type.Optional(Query.oneOf(SORT_KEYS, {
    description: 'Orders by one field instead of the default order (featured first, then newest first): `price`, `size_sqft` or `created_at`, ascending, or descending with a leading `-`. Listings whose field is null come last in both directions; ties are broken by `id`, ascending; featured listings are not put first. `distance`: nearest to `near` first (then by `id`), only with `near` (else 400).',
    example: '-price',
  })),
});

export const listListings = defineEndpoint({
  url: '/v1/listings',
  operationId: 'listListings',
  summary: 'List active listings',
  description: [
    `The active listings of the key's account in the key's country, a page at a time: featured listings first, then newest first (by \`created_at\`), then by \`id\`, so that paging is stable and no listing appears on two pages or on none. A listing is active when its status is active and its expiry date, if any, has not passed; one that expires drops out at once.`,
    '',
    'To read everything, request `page=1, 2, ...` until `page` equals `pages` (`pages` is at least 1, even when there are no listings). A page beyond the last is not an error: it has `items: []` and the true `total` and `pages`.',
    '',
    'Filters (all optional, each given at most once) narrow the list to what a page of your site shows, e.g. `usage_type=Office&min_size_sqft=1000`; `q` is a search box (`q=marina office`); `near` (with `radius_m`) or `bbox` keep the listings in a place. `sort` orders it by price, size, creation time or, with `near`, distance instead. `total` and `pages` then count the filtered set; `GET /v1/listings/facets` counts it by usage type, flag, price and size.',
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
      '`page` or `per_page` is not a base-10 whole number (an optional leading `+`; no other sign, decimals, exponent or surrounding spaces), is below 1 or above 2147483647, or is given more than once; or a filter or `sort` is malformed, given more than once, names a usage type outside the taxonomy, or has a lower bound above its upper bound; `q` is empty, longer than 200 characters or has no letter or digit; `near` or `bbox` is malformed or out of range, both are given, or `radius_m` comes without `near`; `sort=distance` comes without `near`. The message names the parameter.',
    examples: {
      pageNotANumber: x.pageNotANumber,
      perPageTwice: x.perPageTwice,
      perPageZero: x.perPageZero,
      usageTypeUnknown: x.usageTypeUnknown,
      minAboveMax: x.minAboveMax,
      sortUnknown: x.sortUnknown,
      qNoWord: x.qNoWord,
      nearOutOfRange: x.nearOutOfRange,
      nearAndBbox: x.nearAndBbox,
      distanceWithoutNear: x.distanceWithoutNear,
    },
  },
  read(reads, tenant, query) {
    const { sort } = query;
    // The plain list (most requests): nothing to read of the filters.
    const given = query as Record<string, unknown>;
    if (sort === undefined && FILTER_NAMES.every((name) => given[name] === undefined)) return reads.listPage(tenant, query.page, query.per_page);
    const { filter, key } = filterOf(query);
    if (sort === 'distance' && filter?.near === undefined) throw badRequest('Query parameter "sort" is "distance", which needs "near" (the point distances are measured from).');
    if (filter === undefined && sort === undefined) return reads.listPage(tenant, query.page, query.per_page);
    // The filter and sort in one canonical text (equal for equal meanings): the view's cache key.
    return reads.listPage(tenant, query.page, query.per_page, { filter, sort, key: `${key}\n${sort ?? ''}` });
  },
});
