import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../../config/index.js';
import type { ErrorCode } from '../../core/api-error.js';
import type { Listing } from '../../listings/listing.js';
import { CURSOR_REFUSED } from '../../readmodel/feed.js';
import { targetTooLong } from '../front.js';
import { tooManyParameters } from './query.js';

/**
 * The examples of the published document (openapi.ts and the endpoints' declarations). Error
 * messages are the server's own, word for word: the live tests compare them with what a listening
 * server says in the same situation.
 */
export const ORG_ID = 'c2e4a6b8-1d3f-4a5c-8e7b-9f0a1b2c3d4e';
export const FEATURED_ID = '3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71';
export const SPARSE_ID = '7d2b9e40-1c6a-4f38-a5d7-3e9b0c8f2a16';
export const REQUEST_ID = 'req_9f1c2e7a4b3d5c6000012k';
export const ETAG = '"FSvtPvGtRkwJiYRuFxQlrirDCtZ"';
export const RESET = 1795341660;

/** A featured listing with every field set. */
export const featuredListing: Listing = {
  id: FEATURED_ID,
  building_id: '9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35',
  org_id: ORG_ID,
  title: 'Ground-floor cafe with outdoor seating',
  size_sqft: 1250,
  usage_types: ['F&B', 'Cafe'],
  price: 9.5,
  price_basis: 'per_sqft_per_month',
  currency: 'SGD',
  is_takeover: true,
  is_featured: true,
  status: 'active',
  expiry_date: '2027-03-31T15:59:59.000Z',
  available_from: '2026-12-01T00:00:00.000Z',
  min_lease_tenure: '24 months',
  view_count: 1874,
  inquiry_count: 23,
  building_name: 'Telok Ayer Point',
  street_address: '18 Telok Ayer Street',
  location: { lat: 1.2812, lng: 103.8486 },
  images: [
    `https://cdn.example.com/listings/${FEATURED_ID}/1.jpg`,
    `https://cdn.example.com/listings/${FEATURED_ID}/2.jpg`,
    `https://cdn.example.com/listings/${FEATURED_ID}/3.jpg`,
  ],
  cover_image_index: 1,
  url: `https://www.example.com/listings/${FEATURED_ID}`,
  created_at: '2026-10-14T02:45:11.382Z',
};

/** A listing with nothing optional set: nulls and no photos. */
export const sparseListing: Listing = {
  id: SPARSE_ID,
  building_id: '5b8e2f14-9c3a-4d71-8e62-0f4a7b1c9d23',
  org_id: ORG_ID,
  title: null,
  size_sqft: null,
  usage_types: ['Office'],
  price: null,
  price_basis: null,
  currency: 'SGD',
  is_takeover: false,
  is_featured: false,
  status: 'active',
  expiry_date: null,
  available_from: null,
  min_lease_tenure: null,
  view_count: 0,
  inquiry_count: 0,
  building_name: null,
  street_address: null,
  location: null,
  images: [],
  cover_image_index: 0,
  url: `https://www.example.com/listings/${SPARSE_ID}`,
  created_at: '2026-11-02T09:12:40.051Z',
};

const errorExample = (summary: string, error: ErrorCode, message: string) => ({ summary, value: { error, message } });

/**
 * Error examples whose messages are the server's own, word for word: the live tests compare them
 * with what a listening server says in the same situation.
 */
export const ERROR_EXAMPLES = {
  pageNotANumber: errorExample('A parameter that is not a whole number', 'bad_request', 'Query parameter "page" must be a whole number written in digits, got "abc".'),
  perPageTwice: errorExample('A parameter given twice', 'bad_request', 'Query parameter "per_page" was given 2 times; give it once.'),
  perPageZero: errorExample('A page size below 1', 'bad_request', 'Query parameter "per_page" must be 1 or more.'),
  hostTwice: errorExample('The Host header sent twice', 'bad_request', 'The Host header was sent more than once; send it once.'),
  usageTypeUnknown: errorExample(
    'A usage type that is not in the taxonomy',
    'bad_request',
    'Query parameter "usage_type" holds "Offices", which is not a usage type; use these names, exactly spelt and comma-separated: Office, Shared Office, F&B, Pub, Cafe, Restaurant, Cloud Kitchen, Industrial, Food Factory, Warehouse, Retail, Kiosk, Shop, Anchor, Clinic.',
  ),
  minAboveMax: errorExample('A lower bound above the upper one', 'bad_request', 'Query parameter "min_price" (9) is above "max_price" (8.5).'),
  sortUnknown: errorExample('A sort that is not offered', 'bad_request', 'Query parameter "sort" must be one of price, -price, size_sqft, -size_sqft, created_at, -created_at, distance, got "rank".'),
  qNoWord: errorExample('A search with no word in it', 'bad_request', 'Query parameter "q" holds no word (only spaces or punctuation); send letters or digits.'),
  nearOutOfRange: errorExample(
    'A point off the map',
    'bad_request',
    'Query parameter "near" is out of range: it must be lat,lng (latitude -90 to 90, longitude -180 to 180), got "103.85,1.28".',
  ),
  nearAndBbox: errorExample('Two places at once', 'bad_request', 'Query parameters "near" and "bbox" cannot be combined; send one of them.'),
  distanceWithoutNear: errorExample('A distance order without a point', 'bad_request', 'Query parameter "sort" is "distance", which needs "near" (the point distances are measured from).'),
  limitZero: errorExample('A limit below 1', 'bad_request', 'Query parameter "limit" must be 1 or more.'),
  cursorRefused: errorExample('A cursor that cannot be used (edited, another key\'s, or older than the history kept)', 'bad_request', CURSOR_REFUSED),
  missingKey: errorExample('No Authorization header', 'unauthorized', 'Missing API key: send the header "Authorization: Bearer <API_KEY>".'),
  malformedKey: errorExample('A key that is not one the service issued (e.g. truncated)', 'unauthorized', 'Malformed API key: expected <cc>_live_<secret> as issued in the dashboard; check that it was copied whole.'),
  unknownKey: errorExample('A revoked or unknown key', 'unauthorized', 'Unknown or revoked API key. Compare it with your keys in the dashboard (Settings > Developer); requests made with a revoked key are listed there under Failed requests.'),
  otherCountry: errorExample('A key sent to another country\'s host', 'unauthorized', 'This API key is for country "sg" and cannot be used on the "my" host. Call the "sg" host with it, or create a key for "my" in the dashboard (Settings > Developer).'),
  originNotAllowed: errorExample(
    'A browser page on an origin that is not registered',
    'origin_not_allowed',
    'The origin "https://www.elsewhere.example" is not registered for this key\'s account in country "sg". Register it in the dashboard (Settings > Developer > Failed requests lists this request with a button to allow the origin), or call the API from your server.',
  ),
  noListing: errorExample('No active listing with this id for this key', 'not_found', 'No active listing with this id is visible to this key.'),
  unknownHost: errorExample('A host that serves no country', 'not_found', 'No API is served at host "api.xx.example.com"; use the API host of your key\'s country.'),
  rateLimited: errorExample('The key\'s limit is used up', 'rate_limited', `Rate limit of ${DEFAULT_RATE_LIMIT_PER_MINUTE} requests per minute exceeded; retry after 12 s.`),
  internalError: errorExample(
    'A failure on the service\'s side',
    'internal_error',
    `Something went wrong on our side; retry with exponential backoff. Request id: ${REQUEST_ID}.`,
  ),
  methodNotAllowed: errorExample('POST on /v1/listings', 'method_not_allowed', 'Method POST is not allowed here; use GET, HEAD or OPTIONS.'),
  headersTooLarge: errorExample('Request headers over the size limit (status 431)', 'bad_request', 'Request headers are too large.'),
  targetTooLong: errorExample('A URL over the length limit (status 414)', 'bad_request', targetTooLong().message),
  tooManyParameters: errorExample('More query parameters than the limit', 'bad_request', tooManyParameters().message),
} as const;
