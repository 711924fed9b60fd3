import { Type } from '#typebox';
import { defineEndpoint } from '../endpoint.js';
import { ERROR_EXAMPLES as x } from '../examples.js';
import { CHECKS } from './checks.js';
import { FILTER_PARAMETERS, filterOf } from './listing-filters.js';

/** D27: the list's filters (D23, D26, D28), and nothing of paging or order. */
const facetsQuery = Type.Object(FILTER_PARAMETERS);

export const listFacets = defineEndpoint({
  url: '/v1/listings/facets',
  operationId: 'listListingFacets',
  summary: 'Count active listings by usage type, flag, price and size',
  description: [
    'Counts of the active listings that the list would show for the same filters, for a page of filter chips ("Office (12) · Retail (7)") and range sliders. It takes the list\'s filters (`usage_type`, the size and price bounds, `featured`, `takeover`, `q`, `near` with `radius_m`, `bbox`) with the same rules, and ignores `page`, `per_page` and `sort`.',
    '',
    'Each usage type\'s count is computed as if the request had no `usage_type` filter, and the `featured` and `takeover` counts as if it had no filter on that flag, so that a page can show what choosing another chip would give; every other figure applies all the filters. It counts as one request against the rate limit, and has an ETag with free 304 answers like the list.',
    '',
    `${CHECKS}, the query parameters (400).`,
  ],
  querystring: facetsQuery,
  ok: {
    description: 'The counts of the listings the filters select.',
    schema: 'ListingFacets',
    examples: {
      offices: {
        summary: 'usage_type=Office: the other types keep their counts',
        value: {
          total: 12,
          usage_types: [
            { name: 'Office', count: 12 }, { name: 'Shared Office', count: 3 }, { name: 'F&B', count: 9 }, { name: 'Pub', count: 1 }, { name: 'Cafe', count: 4 },
            { name: 'Restaurant', count: 3 }, { name: 'Cloud Kitchen', count: 1 }, { name: 'Industrial', count: 2 }, { name: 'Food Factory', count: 0 },
            { name: 'Warehouse', count: 2 }, { name: 'Retail', count: 7 }, { name: 'Kiosk', count: 1 }, { name: 'Shop', count: 5 }, { name: 'Anchor', count: 0 },
            { name: 'Clinic', count: 1 },
          ],
          featured: { true: 2, false: 10 },
          takeover: { true: 1, false: 11 },
          price: [{ currency: 'SGD', price_basis: 'per_sqft_per_month', min: 4.2, max: 11.5, count: 10 }],
          size_sqft: { min: 450, max: 5200, count: 11 },
        },
      },
    },
  },
  badRequest: {
    description:
      'a filter is malformed, given more than once, names a usage type outside the taxonomy, or has a lower bound above its upper bound; `q` is empty, longer than 200 characters or has no letter or digit; `near` or `bbox` is malformed or out of range, both are given, or `radius_m` comes without `near`. The message names the parameter.',
    examples: {
      usageTypeUnknown: x.usageTypeUnknown, minAboveMax: x.minAboveMax, qNoWord: x.qNoWord, nearOutOfRange: x.nearOutOfRange, nearAndBbox: x.nearAndBbox,
    },
  },
  read(reads, tenant, query) {
    const { filter, key } = filterOf(query);
    return reads.facets(tenant, filter, key);
  },
});
