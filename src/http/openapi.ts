import { COUNTRY_CODES, hostForCountry, type Country } from '../core/countries.js';
import type { ErrorCode } from '../core/api-error.js';
import { MAX_INT32, UUID_PATTERN } from '../core/formats.js';
import { CURSOR_REFUSED } from '../readmodel/feed.js';
import { SORT_KEYS } from '../readmodel/views.js';
import { USAGE_NAMES } from '../listings/taxonomy.js';
import { ALLOWED_METHODS, EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../cors/cors.js';
import { changePageSchema, errorSchema, listingRemovedSchema, listingSchema, listingUpsertedSchema, pageSchema, type Listing } from '../listings/listing.js';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE } from './v1/params.js';

/**
 * The OpenAPI 3.1 document of /v1, built from the very JSON schemas the answers are checked against
 * (listing.ts), so that the document cannot drift from the responses. `npm run openapi` writes it
 * to openapi.json; GET /openapi.json serves it with the deployment's domain and countries.
 * test/http/openapi.test.ts checks that the committed file is current, that it describes exactly
 * the routes of the /v1 route table, that Redocly CLI finds no problem in it, and that real
 * responses of a listening server validate against it. docs/api.md is the prose reference.
 *
 * The document is written for the tools consumers feed it to (validators, SDK generators, docs
 * renderers), so its text states each rule itself: it never cites D-numbers or the specification.
 *
 * Adding an endpoint (the change feed, D22) is one more entry in `endpoints()` plus its schemas in
 * `SERVER_SCHEMAS`; adding query parameters (the filters and sort of D23) is more entries in
 * `components.parameters` and in the list endpoint's `parameters`, and a sentence in its 400.
 * Everything every /v1 endpoint shares (the key, rate limit, CORS, conditional requests, errors)
 * is built once below and attached to every endpoint.
 */
export interface OpenApiOptions {
  /** The deployment's API_DOMAIN, the default of the servers' `domain` variable (D3). */
  apiDomain?: string;
  /** The countries the deployment serves (COUNTRIES); all of them by default. */
  countries?: readonly Country[];
}

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
};

type Json = Record<string, unknown>;

const JSON_MEDIA = 'application/json';
const SERVER_SCHEMAS = [listingSchema, pageSchema, changePageSchema, listingUpsertedSchema, listingRemovedSchema, errorSchema] as const;
const SCHEMA_NAMES: ReadonlySet<string> = new Set(SERVER_SCHEMAS.map((s) => s.$id));
const ERROR_CODES: ReadonlySet<string> = new Set(errorSchema.properties.error.enum);
/** D21: what answer.ts sends with every 200 and 304. */
export const CACHE_CONTROL = 'private, no-cache';

/**
 * Ids as the service stores and sends them: a UUID's 8-4-4-4-12 text form, lowercase. The import
 * and the CLI accept any such hexadecimal text (either case, stored lowercase), without checking
 * the RFC 9562 version and variant digits, so the published document does not say
 * `format: uuid`: strict validators (zod's `z.uuid()`, which generators emit for that format)
 * would refuse ids the service legitimately sends. See docs/api.md, "Ids".
 */
export const ID_PATTERN = UUID_PATTERN;
/** The path parameter: the service accepts either case (and answers 404 for anything else, D11). */
export const ID_PARAMETER_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const ID_TEXT = 'A UUID in its 8-4-4-4-12 hexadecimal text form, lowercase. The version and variant digits are not checked: do not validate ids as strict RFC 9562 UUIDs.';

/**
 * An answer's schema (listing.ts) as the published component:
 *
 * - `$id` dropped, and `$ref: 'Listing#'` rewritten to `#/components/schemas/Listing`; any other
 *   reference is an error, so that a new kind of reference cannot silently break the document;
 * - `additionalProperties: false` dropped: answers carry exactly the listed fields, but the
 *   published contract lets v1 add fields, which a validating client must accept (an absent
 *   `additionalProperties` allows them; `true` would add an index signature to every generated
 *   TypeScript type and lose typo checks). The tests keep the strict check on real responses;
 * - `format: 'uuid'` replaced by the pattern the service really guarantees (ID_PATTERN).
 */
function toComponent(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponent);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [name, child] of Object.entries(value)) {
    if (name === '$id') continue;
    if (name === 'additionalProperties' && child === false) continue;
    if (name === 'format' && child === 'uuid') {
      out.pattern = ID_PATTERN;
    } else if (name === '$ref') {
      const target = typeof child === 'string' ? /^([A-Za-z][A-Za-z0-9_]*)#$/.exec(child)?.[1] : undefined;
      if (target === undefined || !SCHEMA_NAMES.has(target)) throw new Error(`openapi: unsupported schema reference ${JSON.stringify(child)}`);
      out.$ref = `#/components/schemas/${target}`;
    } else if (name === 'properties' && child !== null && typeof child === 'object') {
      // Property names are data, not keywords: a property called "$id" would be kept.
      out.properties = Object.fromEntries(Object.entries(child).map(([p, s]) => [p, toComponent(s)]));
    } else {
      out[name] = toComponent(child);
    }
  }
  return out;
}

const ref = (kind: 'schemas' | 'parameters' | 'responses' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });

// ---- Examples ----------------------------------------------------------------------------------

const ORG_ID = 'c2e4a6b8-1d3f-4a5c-8e7b-9f0a1b2c3d4e';
const FEATURED_ID = '3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71';
const SPARSE_ID = '7d2b9e40-1c6a-4f38-a5d7-3e9b0c8f2a16';
const REQUEST_ID = 'req_9f1c2e7a4b3d5c6000012k';
const ETAG = '"FSvtPvGtRkwJiYRuFxQlrirDCtZ"';
const RESET = 1795341660;

/** A featured listing with every field set. */
const featuredListing: Listing = {
  id: FEATURED_ID,
  building_id: '9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35',
  org_id: ORG_ID,
  title: 'Ground-floor cafe with outdoor seating',
  size_sqft: 1250,
  usage_types: ['F&B', 'Cafe'],
  price: 9.5,
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
const sparseListing: Listing = {
  id: SPARSE_ID,
  building_id: '5b8e2f14-9c3a-4d71-8e62-0f4a7b1c9d23',
  org_id: ORG_ID,
  title: null,
  size_sqft: null,
  usage_types: ['Office'],
  price: null,
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
  images: [],
  cover_image_index: 0,
  url: `https://www.example.com/listings/${SPARSE_ID}`,
  created_at: '2026-11-02T09:12:40.051Z',
};

type Examples = Record<string, { summary: string; value: unknown }>;

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
    'Query parameter "usage_type" holds "Offices", which is not a usage type; use names of the taxonomy, exactly spelt and comma-separated: Office, Shared Office, F&B, Pub, Cafe, Restaurant, Cloud Kitchen, Industrial, Food Factory, Warehouse, Retail, Kiosk, Shop, Anchor, Clinic.',
  ),
  minAboveMax: errorExample('A lower bound above the upper one', 'bad_request', 'Query parameter "min_price" (9) is above "max_price" (8.5).'),
  sortUnknown: errorExample('A sort that is not offered', 'bad_request', 'Query parameter "sort" must be one of price, -price, size_sqft, -size_sqft, created_at, -created_at, got "rank".'),
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
  rateLimited: errorExample('The key\'s limit is used up', 'rate_limited', 'Rate limit of 60 requests per minute exceeded; retry after 12 s.'),
  internalError: errorExample(
    'A failure on the service\'s side',
    'internal_error',
    `Something went wrong on our side; retry with exponential backoff. Request id: ${REQUEST_ID}.`,
  ),
  methodNotAllowed: errorExample('POST on /v1/listings', 'method_not_allowed', 'Method POST is not allowed here; use GET, HEAD or OPTIONS.'),
  headersTooLarge: errorExample('Request headers over the size limit (status 431)', 'bad_request', 'Request headers are too large.'),
} as const;

// ---- Headers -----------------------------------------------------------------------------------

type HeaderSet = Record<string, Json>;

const header = (description: string, schema: Json, required: boolean, example?: unknown): Json =>
  example === undefined ? { description, required, schema } : { description, required, schema, example };

/** Headers that mean the same wherever they appear: shared components, referenced by name. */
function sharedHeaders(): HeaderSet {
  return {
    'X-Request-Id': header(
      'The id of this request, also in the service\'s log line for it. Quote it when reporting a problem.',
      { type: 'string', minLength: 1 },
      true,
      REQUEST_ID,
    ),
    Vary: header('Always includes `Origin`: answers differ by the request\'s `Origin` header.', { type: 'string', pattern: '(^|,\\s*)Origin(\\s*,|$)' }, true, 'Origin'),
    'X-Content-Type-Options': header('Always `nosniff`: browsers must not guess another type than the declared JSON.', { type: 'string', const: 'nosniff' }, true, 'nosniff'),
    'Access-Control-Allow-Origin': header(
      'Browser calls only: the request\'s `Origin`, echoed on every answer, errors included, so that browser code can read the error code. Absent without an `Origin` header and for the literal origin `null`. `Access-Control-Allow-Credentials` is never sent.',
      { type: 'string' },
      false,
      'https://www.example.com',
    ),
    'Access-Control-Expose-Headers': header(
      `Browser calls only, like \`Access-Control-Allow-Origin\`: the headers browser code may read, \`${EXPOSED_HEADERS}\`.`,
      { type: 'string', const: EXPOSED_HEADERS },
      false,
      EXPOSED_HEADERS,
    ),
    ETag: header(
      'A strong entity tag of this exact body: the same body has the same tag on every server and after restarts, a different body a different tag. Send it back in `If-None-Match` to get `304 Not Modified` while the body is unchanged.',
      { type: 'string', pattern: '^"[^"]*"$' },
      true,
      ETAG,
    ),
    'Cache-Control': header(
      `Always \`${CACHE_CONTROL}\`: a browser may keep the answer but must revalidate it on every use (with \`If-None-Match\`, which costs nothing when unchanged).`,
      { type: 'string', const: CACHE_CONTROL },
      true,
      CACHE_CONTROL,
    ),
  };
}

/** On every answer of the API. */
function commonHeaders(): HeaderSet {
  const names = ['X-Request-Id', 'Vary', 'X-Content-Type-Options', 'Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
  return Object.fromEntries(names.map((name) => [name, ref('headers', name)]));
}

/**
 * On every answer to a request whose key was accepted (so not on a 401, nor on anything refused
 * before the key is looked at); `required` where the answer can only come after that.
 */
function rateLimitHeaders(required: boolean, limited = false): HeaderSet {
  const when = required ? '' : ' Present when the request got past the key check.';
  const headers: HeaderSet = {
    'X-RateLimit-Limit': header(`The key's ceiling of requests per rolling minute (60 unless arranged otherwise).${when}`, { type: 'integer', minimum: 1 }, required, 60),
    'X-RateLimit-Remaining': header(
      `How many more requests would be admitted right now; 0 on a 429.${when}`,
      limited ? { type: 'integer', const: 0 } : { type: 'integer', minimum: 0 },
      required,
      limited ? 0 : 57,
    ),
    'X-RateLimit-Reset': header(
      `Unix time in whole seconds at which the full limit is available again; never in the past.${when}`,
      { type: 'integer', minimum: 0 },
      required,
      RESET,
    ),
  };
  if (limited) {
    headers['Retry-After'] = header(
      'Whole seconds to wait, at least 1: a request sent after waiting that long is admitted, provided nothing else was sent meanwhile.',
      { type: 'integer', minimum: 1 },
      true,
      12,
    );
  }
  return headers;
}

// ---- Responses ---------------------------------------------------------------------------------

/** The name of the schema of one code's error body: `bad_request` -> `BadRequestError`. */
const errorSchemaName = (code: ErrorCode) => `${code.split('_').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}Error`;

/** One named schema per error code: the body of `ErrorBody` with that code (what generated clients branch on). */
function errorCodeSchemas(): Record<string, Json> {
  return Object.fromEntries(errorSchema.properties.error.enum.map((code) => [errorSchemaName(code), {
    type: 'object',
    description: `An error answer whose code is \`${code}\`. More fields may be added within v1.`,
    required: ['error', 'message'],
    properties: { error: { type: 'string', const: code, examples: [code] }, message: errorSchema.properties.message },
  }]));
}

function errorBody(code: ErrorCode): Json {
  if (!ERROR_CODES.has(code)) throw new Error(`openapi: error code ${code} is not in errorSchema`);
  return ref('schemas', errorSchemaName(code));
}

function jsonResponse(description: string, headers: HeaderSet, schema: Json, examples: Examples): Json {
  return { description, headers, content: { [JSON_MEDIA]: { schema, examples } } };
}

function errorResponse(code: ErrorCode, description: string, headers: HeaderSet, examples: Examples): Json {
  return jsonResponse(description, headers, errorBody(code), examples);
}

/** Answers that are the same on every /v1 endpoint: components, referenced by name. */
function sharedResponses(): Record<string, Json> {
  const x = ERROR_EXAMPLES;
  return {
    NotModified: {
      description:
        'Not Modified: the request\'s `If-None-Match` holds the tag of the body this request would get (or is `*`). No body: use the copy you have. Free: it does not count against the rate limit and is given even when the key has no requests left; `X-RateLimit-Remaining` says how many would be admitted now, without taking one.',
      headers: { ETag: ref('headers', 'ETag'), 'Cache-Control': ref('headers', 'Cache-Control'), ...rateLimitHeaders(true), ...commonHeaders() },
    },
    Unauthorized: errorResponse(
      'unauthorized',
      '`unauthorized`: the key is missing, malformed, unknown or revoked, or belongs to another country than this host. A revocation takes effect on the next request. Not retryable until the key is fixed. No rate-limit headers: the request never reached the limiter.',
      commonHeaders(),
      { missingKey: x.missingKey, malformedKey: x.malformedKey, unknownKey: x.unknownKey, otherCountry: x.otherCountry },
    ),
    OriginNotAllowed: errorResponse(
      'origin_not_allowed',
      '`origin_not_allowed`: the key is valid, but the request\'s `Origin` (scheme, host and port) is not registered for the key\'s account in its country; the literal origin `null` never is. Register the origin in the dashboard (Settings, Developer), or call the API from your server. Not retryable until fixed. It counts against the rate limit.',
      { ...rateLimitHeaders(true), ...commonHeaders() },
      { originNotAllowed: x.originNotAllowed },
    ),
    RateLimited: errorResponse(
      'rate_limited',
      '`rate_limited`: the key has made as many requests as its limit allows in the last 60 seconds. Retry after `Retry-After` seconds. A refused request does not count, so retrying too early does not lock the key out.',
      { ...rateLimitHeaders(true, true), ...commonHeaders() },
      { rateLimited: x.rateLimited },
    ),
    InternalError: errorResponse(
      'internal_error',
      '`internal_error`: a failure on the service\'s side; the message carries the request id, never internal details. Retry with exponential backoff.',
      { ...rateLimitHeaders(false), ...commonHeaders() },
      { internalError: x.internalError },
    ),
    Error: jsonResponse(
      `Any other error, in the same JSON shape. In particular: 405 \`method_not_allowed\` with an \`Allow: ${ALLOWED_METHODS}\` header for any method other than GET, HEAD or OPTIONS on an API path (never for this operation), decided before any other check; 431 \`bad_request\` for request headers over the size limit; and 417 \`bad_request\` for an \`Expect\` header other than \`100-continue\`.`,
      {
        Allow: header(`Sent with 405: the methods of the path, \`${ALLOWED_METHODS}\`.`, { type: 'string', const: ALLOWED_METHODS }, false, ALLOWED_METHODS),
        ...rateLimitHeaders(false),
        'X-Request-Id': ref('headers', 'X-Request-Id'),
        Vary: header('Sent by the API\'s router (with 405, for example): `Origin`.', { type: 'string' }, false, 'Origin'),
        'X-Content-Type-Options': ref('headers', 'X-Content-Type-Options'),
        'Access-Control-Allow-Origin': ref('headers', 'Access-Control-Allow-Origin'),
        'Access-Control-Expose-Headers': ref('headers', 'Access-Control-Expose-Headers'),
      },
      ref('schemas', 'ErrorBody'),
      { methodNotAllowed: x.methodNotAllowed, headersTooLarge: x.headersTooLarge },
    ),
  };
}

// ---- Endpoints ---------------------------------------------------------------------------------

interface Endpoint {
  /** The URL of the /v1 route table (routes.ts), Fastify style (`:id`). */
  route: string;
  operationId: string;
  summary: string;
  description: string;
  /** Its own parameters; `If-None-Match` is added to every endpoint. */
  parameters: Json[];
  /** `links`: how an answer's values feed the next call (OpenAPI link objects). */
  ok: { description: string; schema: Json; examples: Examples; links?: Record<string, Json> };
  /** What makes a request to this endpoint malformed, besides a bad Host header. */
  badRequest: { description: string; examples: Examples };
  /** When this endpoint answers 404, besides a host that serves no country. */
  notFound?: { description: string; examples: Examples };
}

/** The route table's `:name` as OpenAPI's `{name}`. */
export const openApiPath = (route: string): string => route.replace(/:([A-Za-z]+)/g, '{$1}');

const CHECKS =
  'Checks, in this order, the first failure answering: the host (404), the key (401), the rate limit (429), the browser origin (403)';

/** Every /v1 endpoint. test/http/openapi.test.ts checks that these are exactly the route table's. */
function endpoints(): Endpoint[] {
  const x = ERROR_EXAMPLES;
  return [
    {
      route: '/v1/listings',
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
      ].join('\n'),
      parameters: [
        ref('parameters', 'page'), ref('parameters', 'per_page'), ref('parameters', 'usage_type'), ref('parameters', 'min_size_sqft'),
        ref('parameters', 'max_size_sqft'), ref('parameters', 'min_price'), ref('parameters', 'max_price'), ref('parameters', 'featured'),
        ref('parameters', 'takeover'), ref('parameters', 'sort'),
      ],
      ok: {
        description: 'A page of listings in the page envelope. With filters, `total` and `pages` count the filtered listings.',
        schema: ref('schemas', 'ListingPage'),
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
    },
    {
      route: '/v1/listings/changes',
      operationId: 'listChanges',
      summary: 'Changes since a cursor (keep a copy in sync)',
      description: [
        'What changed in the key\'s listings since a cursor, as events, so that a copy of them can be kept up to date without reading every page again.',
        '',
        '**Replay.** Start without a cursor: the first answers give every visible listing as `listing.upserted`. Apply each event in order: `listing.upserted` is put (store the listing, replacing any copy), `listing.removed` is delete (a removal of an id you do not hold is nothing to do). While `has_more` is true, ask again at once with `next_cursor`; when it is false you are caught up: keep `next_cursor` and poll with it later. Replaying from any cursor brings a copy that was exact then up to date again, and a caught-up copy holds exactly the listings (and objects) that reading every page of the list would give.',
        '',
        '**Events.** A listing that becomes visible, or changes while visible, gives `listing.upserted` with the whole listing object, exactly as in the list. One that stops being visible (another status, another owner or country) gives `listing.removed`. An expiry passing is a removal at the expiry instant, with no write needed. Events come in the order they took effect (`at`); a listing may appear in several answers, and its last event is its current state.',
        '',
        '**Polling.** An answer with no new events is byte for byte the previous answer with the same cursor (its `next_cursor` is that cursor): send its `ETag` in `If-None-Match` and such polls are free 304s.',
        '',
        '**Cursors** are opaque and tamper-evident: only the cursors this API issued for this key\'s account and country are accepted, on any instance, for as long as the change history after them is kept (at least 30 days); anything else is 400, and you start again without a cursor.',
        '',
        `${CHECKS}, the query parameters and the cursor (400). The list's filters do not apply here.`,
      ].join('\n'),
      parameters: [ref('parameters', 'cursor'), ref('parameters', 'limit')],
      ok: {
        description: 'Events since the cursor.',
        schema: ref('schemas', 'ChangePage'),
        links: {
          next: {
            operationId: 'listChanges',
            parameters: { cursor: '$response.body#/next_cursor' },
            description: 'The next call: at once while `has_more` is true, else the next poll.',
          },
        },
        examples: {
          first: {
            summary: 'The first answer, without a cursor: every visible listing',
            value: { items: [{ type: 'listing.upserted', id: FEATURED_ID, at: '2026-11-20T03:14:07.512Z', listing: featuredListing }], next_cursor: 'WzEsImMyZTQiLCJzZyIsImwiLDQyLCIiLCIiLCIiLCIiXQ.9dY3xN0pQm2Lr7Vs8Kc1Za', has_more: false },
          },
          changes: {
            summary: 'A later poll: a listing changed, another was leased, a third expired',
            value: {
              items: [
                { type: 'listing.upserted', id: FEATURED_ID, at: '2026-11-21T08:00:00.000Z', listing: { ...featuredListing, price: 9.25 } },
                { type: 'listing.removed', id: SPARSE_ID, at: '2026-11-21T09:30:00.000Z' },
                { type: 'listing.removed', id: '5b8e2c1d-7a4f-4e3b-9d6c-0f1a2b3c4d5e', at: '2026-11-21T15:59:59.000Z' },
              ],
              next_cursor: 'WzEsImMyZTQiLCJzZyIsImwiLDQ1LCIyMDI2LTExLTIxVDE1OjU5OjU5LjAwMFoiLCI1YjhlIiwiIiwiIl0.q7Rm2Xc9Lk3Vb1Nz5Pd8Ws',
              has_more: false,
            },
          },
          caughtUp: { summary: 'Nothing new: the same cursor back', value: { items: [], next_cursor: 'WzEsImMyZTQiLCJzZyIsImwiLDQyLCIiLCIiLCIiLCIiXQ.9dY3xN0pQm2Lr7Vs8Kc1Za', has_more: false } },
        },
      },
      badRequest: {
        description:
          '`limit` is not a base-10 whole number (as `page`), is below 1 or above 2147483647, or is given more than once; or `cursor` is given more than once or cannot be used: it was edited or forged, was issued for another account or country, or is older than the change history kept (at least 30 days). Start again without a cursor.',
        examples: { limitZero: x.limitZero, cursorRefused: x.cursorRefused },
      },
    },
    {
      route: '/v1/listings/:id',
      operationId: 'getListing',
      summary: 'Get one active listing',
      description: [
        'One active listing of the key\'s account in the key\'s country, by id: the bare listing object (no envelope), with every field present, exactly as in the list\'s `items`.',
        '',
        `${CHECKS}, the look-up (404).`,
      ].join('\n'),
      parameters: [ref('parameters', 'listingId')],
      ok: { description: 'The listing.', schema: ref('schemas', 'Listing'), examples: { featured: { summary: 'A featured listing', value: featuredListing }, sparse: { summary: 'A listing with nothing optional set', value: sparseListing } } },
      badRequest: { description: '', examples: {} },
      notFound: {
        description:
          'no active listing with this id is visible to this key: it does not exist, is not active or has expired, belongs to another account or another country, or the id is not a UUID. The cases are deliberately not told apart.',
        examples: { noListing: x.noListing },
      },
    },
  ];
}

function operation(endpoint: Endpoint): Json {
  const x = ERROR_EXAMPLES;
  const badRequest = [
    '`bad_request`: a malformed request.',
    endpoint.badRequest.description,
    'Also a `Host` header that is missing or sent twice, or a request target naming another host: refused before the key check, so without rate-limit headers. Not retryable until the request is fixed.',
  ].filter((s) => s !== '');
  const notFound = endpoint.notFound === undefined
    ? '`not_found`: this host serves no country; use the API host of your key\'s country. Refused before the key check, so without rate-limit headers.'
    : `\`not_found\`: ${endpoint.notFound.description} Also when this host serves no country (then before the key check, so without rate-limit headers).`;
  return {
    operationId: endpoint.operationId,
    tags: ['Listings'],
    summary: endpoint.summary,
    description: endpoint.description,
    parameters: [...endpoint.parameters, ref('parameters', 'ifNoneMatch')],
    responses: {
      200: {
        ...jsonResponse(
          endpoint.ok.description,
          { ETag: ref('headers', 'ETag'), 'Cache-Control': ref('headers', 'Cache-Control'), ...rateLimitHeaders(true), ...commonHeaders() },
          endpoint.ok.schema,
          endpoint.ok.examples,
        ),
        ...(endpoint.ok.links === undefined ? {} : { links: endpoint.ok.links }),
      },
      304: ref('responses', 'NotModified'),
      400: errorResponse('bad_request', badRequest.join(' '), { ...rateLimitHeaders(false), ...commonHeaders() }, { ...endpoint.badRequest.examples, hostTwice: x.hostTwice }),
      401: ref('responses', 'Unauthorized'),
      403: ref('responses', 'OriginNotAllowed'),
      404: errorResponse(
        'not_found',
        notFound,
        endpoint.notFound === undefined ? commonHeaders() : { ...rateLimitHeaders(false), ...commonHeaders() },
        { ...endpoint.notFound?.examples, unknownHost: x.unknownHost },
      ),
      429: ref('responses', 'RateLimited'),
      500: ref('responses', 'InternalError'),
      default: ref('responses', 'Error'),
    },
  };
}

/**
 * A path item: its GET. HEAD and OPTIONS are answered too but are not operations of their own in
 * the document: a generated SDK would turn them into functions nobody should call (a browser sends
 * its preflights itself, and HEAD is GET without a body). The path's description says what they do.
 */
function pathItem(endpoint: Endpoint): Json {
  return {
    description: [
      `Also answered on this path: \`HEAD\`, exactly as GET (same checks, statuses and headers, counted against the rate limit alike) without a body; and \`OPTIONS\`, the CORS preflight that browsers send by themselves: 204 for any origin, without a key and without counting against any rate limit, with \`Access-Control-Allow-Methods: ${ALLOWED_METHODS}\`, \`Access-Control-Allow-Headers\` (\`Authorization\`, plus standard headers such as \`If-None-Match\` when asked for) and \`Access-Control-Max-Age: ${PREFLIGHT_MAX_AGE_SECONDS}\`.`,
      `Any other method gets 405 \`method_not_allowed\` with \`Allow: ${ALLOWED_METHODS}\`, before any other check.`,
    ].join(' '),
    get: operation(endpoint),
  };
}

// ---- Servers -----------------------------------------------------------------------------------

/**
 * Country hosts (D3): `sg` is served at `api.<domain>`, every other country `cc` at
 * `api.<cc>.<domain>`. One URL template cannot say both honestly (a `country` variable would need
 * an empty value and a dot that comes and goes), and a `host` variable listing the eight hosts
 * would bake one domain into its enum, leaving no room for another deployment or a local port. So
 * two servers: Singapore's, and the regional one whose `country` variable lists exactly the other
 * countries this deployment serves. `domain` is free text (a deployment's API_DOMAIN, with a port
 * where there is one); `scheme` is https, or http for a local server. A server is left out when
 * the deployment serves none of its countries.
 */
function servers(domain: string, countries: readonly Country[]): Json[] {
  const host = domain.replace(/:\d+$/, '');
  const local = host === 'localhost' || host.endsWith('.localhost');
  const scheme = {
    enum: ['https', 'http'],
    default: local ? 'http' : 'https',
    description: '`https` for a deployment; `http` for a local server (`API_DOMAIN=localhost`).',
  };
  const domainVariable = {
    default: domain,
    description: 'The service\'s API domain, with `:port` when not the scheme\'s default: e.g. `localhost:3000` for a local server.',
  };
  const result: Json[] = [];
  if (countries.includes('sg')) {
    result.push({
      url: `{scheme}://${hostForCountry('sg', '{domain}')}`,
      description: 'Singapore (keys `sg_live_...`).',
      // The country this host serves, for generated clients (the SDK's host rule comes from it).
      'x-country': 'sg',
      variables: { scheme, domain: domainVariable },
    });
  }
  const regional = countries.filter((c) => c !== 'sg');
  if (regional.length > 0) {
    result.push({
      url: '{scheme}://api.{country}.{domain}',
      description: `Every other country, on its own host (keys \`<country>_live_...\`): ${regional.join(', ')}.`,
      variables: {
        scheme,
        country: { enum: [...regional], default: regional[0], description: 'The key\'s country: the two letters its key starts with.' },
        domain: domainVariable,
      },
    });
  }
  return result;
}

// ---- The document ------------------------------------------------------------------------------

export function buildOpenApiDocument(options: OpenApiOptions = {}): OpenApiDocument {
  const domain = options.apiDomain ?? 'example.com';
  const countries = options.countries ?? COUNTRY_CODES;
  const codeSchemas = errorCodeSchemas();
  const schemas = { ...Object.fromEntries(SERVER_SCHEMAS.map((s) => [s.$id, toComponent(s)])), ...codeSchemas };
  const all = endpoints();

  const document: OpenApiDocument = {
    openapi: '3.1.0',
    info: {
      title: 'Listings Developer API',
      version: '1.0.0',
      summary: 'Read-only access to an organisation\'s active commercial-property listings.',
      description: [
        'A read-only, versioned HTTP/JSON API returning an organisation\'s currently active commercial-space listings (retail, office, food and beverage, industrial, clinic), for showing them on the organisation\'s own website. Keys and browser origins are managed in the dashboard (Settings, Developer), not through the API.',
        '',
        '**Versions.** Every path starts with `/v1`. Within v1, new fields may be added to the listing object and the page envelope: ignore fields you do not know (validators: allow additional properties). Fields are never removed or renamed within v1.',
        '',
        '**Hosts.** Each key belongs to one country and works only on that country\'s host: `sg` at `api.{domain}`, every other country at `api.{country}.{domain}` (the two servers below). A key sent to another country\'s host gets 401; a host that serves no country gets 404.',
        '',
        '**Keys.** `Authorization: Bearer <cc>_live_<secret>`. Keep keys on your server; a key used from a browser works only from origins registered for it.',
        '',
        '**Errors.** Every error is JSON `{"error": CODE, "message": TEXT}` (more fields may be added) with `Content-Type: application/json`. Codes: `bad_request` 400 (and 417, 431), `unauthorized` 401, `origin_not_allowed` 403, `not_found` 404, `method_not_allowed` 405, `rate_limited` 429, `internal_error` 500. Retry 429 after `Retry-After` and 5xx with exponential backoff; the others are not retryable until the request or the configuration is fixed.',
        '',
        '**Rate limit.** 60 requests per rolling 60 seconds per key by default (higher limits are arranged with your account contact); a burst of the whole limit at once is allowed. Every answer past the key check carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`; a 429 also carries `Retry-After`.',
        '',
        '**Conditional requests.** Every 200 carries a strong `ETag` and `Cache-Control: private, no-cache`. Send the tag back in `If-None-Match`: while the body is unchanged the answer is `304 Not Modified`, without a body, and free (it does not count against the rate limit).',
        '',
        '**Browsers (CORS).** A request with an `Origin` header is answered only for origins registered for the key\'s account in its country; others get 403 `origin_not_allowed`. Preflights are answered for any origin, without a key. Every answer to a browser, errors included, carries `Access-Control-Allow-Origin` and exposes `ETag`, the rate-limit headers, `Retry-After` and `X-Request-Id`. Calls without `Origin` (from a server) are not checked. Image URLs are public: they need neither a key nor CORS.',
        '',
        'Every answer carries `X-Request-Id`; quote it when reporting a problem.',
      ].join('\n'),
      // No support address or licence text exists in this repository: these say who to ask and
      // that the API is not open source; a deployment with published terms should put them here.
      contact: { name: 'Your account contact (keys and browser origins: the dashboard, Settings > Developer)' },
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: servers(domain, countries),
    security: [{ bearerAuth: [] }],
    tags: [{ name: 'Listings', description: 'The active listings of the key\'s account in the key\'s country.' }],
    paths: Object.fromEntries(all.map((endpoint) => [openApiPath(endpoint.route), pathItem(endpoint)])),
    components: {
      schemas,
      parameters: {
        page: {
          name: 'page',
          in: 'query',
          required: false,
          description:
            'The page number, from 1. A base-10 whole number: an optional leading `+`, no other sign, no decimals, exponent or surrounding spaces; at least 1 and at most 2147483647; given at most once. Anything else is 400 `bad_request`. A page beyond the last gives 200 with `items: []`.',
          schema: { type: 'integer', minimum: 1, maximum: MAX_INT32, default: 1 },
          example: 2,
        },
        per_page: {
          name: 'per_page',
          in: 'query',
          required: false,
          description: `The page size, written like \`page\`, at least 1, else 400 \`bad_request\`. A value above ${MAX_PER_PAGE} is not an error: it is clamped to ${MAX_PER_PAGE}, and the envelope's \`per_page\` reports the size applied. Above 2147483647, or given twice, is 400.`,
          schema: { type: 'integer', minimum: 1, maximum: MAX_INT32, default: DEFAULT_PER_PAGE },
          example: 50,
        },
        usage_type: {
          name: 'usage_type',
          in: 'query',
          required: false,
          description: `Only listings of these usage types: one or more names of the taxonomy, comma-separated, exactly spelt (case-sensitive, no spaces around names; \`F&B\` is sent as \`F%26B\`, \`Shared Office\` as \`Shared%20Office\`: a \`+\` is a plus sign, not a space). A main type matches every listing of that type; a sub-type matches listings with that sub-type; several names match any of them. Names: ${USAGE_NAMES.join(', ')}. Any other name is 400.`,
          style: 'form',
          explode: false,
          schema: { type: 'array', minItems: 1, items: { type: 'string', enum: [...USAGE_NAMES] } },
          example: ['Office', 'Retail'],
        },
        ...Object.fromEntries(([['min_size_sqft', 'at least', 'size_sqft', 800], ['max_size_sqft', 'at most', 'size_sqft', 2500], ['min_price', 'at least', 'price', 4.5], ['max_price', 'at most', 'price', 12]] as const).map(([name, bound, field, example]) => [name, {
          name,
          in: 'query',
          required: false,
          description: `Only listings whose \`${field}\` is ${bound} this (inclusive); a listing whose \`${field}\` is null does not match. A non-negative decimal number: digits, optionally a dot and more digits (\`.5\` and \`5.\` are refused), an optional leading \`+\`, no other sign, spaces or exponent, no upper cap. A lower bound above its upper bound is 400.`,
          schema: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$' },
          example: String(example),
        }])),
        featured: { name: 'featured', in: 'query', required: false, description: 'Only featured (`true`) or only not featured (`false`) listings.', schema: { type: 'boolean' }, example: true },
        takeover: { name: 'takeover', in: 'query', required: false, description: 'Only lease takeovers (`true`) or only other listings (`false`).', schema: { type: 'boolean' }, example: false },
        sort: {
          name: 'sort',
          in: 'query',
          required: false,
          description: 'Orders by one field instead of the default order (featured first, then newest first): `price`, `size_sqft` or `created_at`, ascending, or descending with a leading `-`. Listings whose field is null come last in both directions; ties are broken by `id`, ascending; featured listings are not put first.',
          schema: { type: 'string', enum: [...SORT_KEYS] },
          example: '-price',
        },
        cursor: {
          name: 'cursor',
          in: 'query',
          required: false,
          description: 'The `next_cursor` of an earlier answer, as it was (opaque). Without it, the feed starts from the beginning: every visible listing. A cursor that cannot be used is 400: start again without one.',
          schema: { type: 'string' },
          example: '<next_cursor of the previous answer>',
        },
        limit: {
          name: 'limit',
          in: 'query',
          required: false,
          description: 'Events per answer, written like `page`: from 1 to 1000, default 100. A value above 1000 (up to 2147483647) is clamped to 1000; below 1, above 2147483647, or given twice is 400.',
          schema: { type: 'integer', minimum: 1, maximum: MAX_INT32, default: 100 },
          example: 500,
        },
        listingId: {
          name: 'id',
          in: 'path',
          required: true,
          description: `The \`id\` of a listing from the list endpoint. ${ID_TEXT.replace('lowercase', 'in either case')} Any other id gets 404, like an id the key cannot see.`,
          schema: { type: 'string', pattern: ID_PARAMETER_PATTERN },
          example: FEATURED_ID,
        },
        ifNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description:
            'The `ETag` of a copy you hold (also accepted: its weak form `W/"..."`, a comma-separated list of tags, or `*`). When it matches the body this request would get, the answer is `304 Not Modified` without a body, and it does not count against the rate limit, even when the key has no requests left. Only an answer that would otherwise be 200 becomes 304: a request that fails a check gets that error, and a request whose tag does not match is answered and counted as usual.',
          schema: { type: 'string' },
          example: ETAG,
        },
      },
      headers: sharedHeaders(),
      responses: sharedResponses(),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: '<cc>_live_<secret>',
          description:
            'An API key, sent as `Authorization: Bearer <API_KEY>`. Format `<cc>_live_<secret>`: `<cc>` is the key\'s lowercase country code (one of `sg my uk in us ca au nz`), which selects its host; `live` is literal; `<secret>` is random letters and digits, ending in a checksum so that a mistyped key is refused at once. Keys are created and revoked in the dashboard (Settings, Developer); the full key is shown once, at creation, and cannot be recovered; a revocation takes effect on the next request. Keep keys server-side.',
        },
      },
    },
  };
  // Only the codes some answer names get a schema of their own.
  const used = JSON.stringify([document.paths, document.components.responses]);
  for (const name of Object.keys(codeSchemas)) {
    if (!used.includes(`"#/components/schemas/${name}"`)) delete (document.components.schemas as Record<string, unknown>)[name];
  }
  return document;
}
