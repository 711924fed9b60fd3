import { COUNTRY_CODES, hostForCountry, type Country } from '../core/countries.js';
import type { ErrorCode } from '../core/api-error.js';
import { MAX_INT32 } from '../core/formats.js';
import { ALLOWED_METHODS, EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../cors/cors.js';
import { errorSchema, listingSchema, pageSchema } from '../listings/listing.js';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE } from './v1/params.js';

/**
 * The OpenAPI 3.1 document of the two endpoints (spec 4, D3-D19), built from the very JSON schemas
 * the server serialises with (listing.ts), so that the document cannot drift from the responses.
 * `npm run openapi` writes it to openapi.json; test/http/openapi.test.ts checks that the committed
 * file is current and that real responses of a listening server validate against it.
 */
export interface OpenApiOptions {
  /** The deployment's API_DOMAIN, the default of the servers' `domain` variable (D3). */
  apiDomain?: string;
  /** The countries the deployment serves (OPERATIONS `COUNTRIES`); all of them by default. */
  countries?: readonly Country[];
}

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
};

const JSON_MEDIA = 'application/json';
const SERVER_SCHEMAS = [listingSchema, pageSchema, errorSchema] as const;
const SCHEMA_NAMES: ReadonlySet<string> = new Set(SERVER_SCHEMAS.map((s) => s.$id));
const ERROR_CODES: ReadonlySet<string> = new Set(errorSchema.properties.error.enum);

/**
 * A Fastify shared schema as an OpenAPI component: `$id` dropped, `$ref: 'Listing#'` rewritten to
 * `#/components/schemas/Listing`. Anything else that looks like a reference is an error, so that a
 * new kind of reference in listing.ts cannot silently produce a broken document.
 */
function toComponent(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponent);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(value)) {
    if (name === '$id') continue;
    if (name === '$ref') {
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

// ---- Response headers (D15, D16, D18, D19) ---------------------------------------------------

type HeaderSet = Record<string, Record<string, unknown>>;

const header = (description: string, schema: Record<string, unknown>, required: boolean) => ({ description, required, schema });

/** The headers that are the same on every response: shared components, referenced by name. */
function sharedHeaders(): HeaderSet {
  return {
    'X-Request-Id': header('Id of this request, also in the server\'s log line for it (D19). Quote it when reporting a problem.', { type: 'string', minLength: 1 }, true),
    Vary: header('Always includes `Origin`: responses differ by the request\'s Origin header (D18).', { type: 'string', pattern: '(^|,\\s*)Origin(\\s*,|$)' }, true),
    'Access-Control-Allow-Origin': header(
      'Browser calls only (D18): the request\'s Origin, echoed on every response, errors included, so that browser code can read the error code. Absent without an Origin header and for the literal origin `null`. `Access-Control-Allow-Credentials` is never sent.',
      { type: 'string' },
      false,
    ),
    'Access-Control-Expose-Headers': header(`Browser calls only, as \`Access-Control-Allow-Origin\` (D18): \`${EXPOSED_HEADERS}\`.`, { type: 'string', const: EXPOSED_HEADERS }, false),
    'X-Content-Type-Options': header('Always `nosniff`: browsers must not guess another type than the declared JSON.', { type: 'string', const: 'nosniff' }, true),
    Allow: header(`The methods of the path: \`${ALLOWED_METHODS}\`.`, { type: 'string', const: ALLOWED_METHODS }, true),
  };
}

/** D18, D19: on every response. */
function commonHeaders(): HeaderSet {
  const names = ['X-Request-Id', 'Vary', 'X-Content-Type-Options', 'Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
  return Object.fromEntries(names.map((name) => [name, ref('headers', name)]));
}

/**
 * D15: on every response that passes the 401 stage, 429 included; `required` where the response
 * can only come after that stage.
 */
function rateLimitHeaders(required: boolean, limited = false): HeaderSet {
  const when = required ? '' : ' Present when the request got past the key check (D15).';
  const headers: HeaderSet = {
    'X-RateLimit-Limit': header(`The key's ceiling of requests per rolling minute (D14).${when}`, { type: 'integer', minimum: 1 }, required),
    'X-RateLimit-Remaining': header(
      `How many more requests would be admitted right now; 0 on a 429.${when}`,
      limited ? { type: 'integer', const: 0 } : { type: 'integer', minimum: 0 },
      required,
    ),
    'X-RateLimit-Reset': header(`Unix epoch seconds (an integer) at which the full limit is available again; never in the past.${when}`, { type: 'integer', minimum: 0 }, required),
  };
  if (limited) {
    headers['Retry-After'] = header(
      'Whole seconds to wait (at least 1): a request sent after waiting that long is admitted, if nothing else was sent meanwhile (D15).',
      { type: 'integer', minimum: 1 },
      true,
    );
  }
  return headers;
}

const allowHeader = (): HeaderSet => ({ Allow: ref('headers', 'Allow') });

// ---- Responses ---------------------------------------------------------------------------------

interface ResponseSpec {
  description: string;
  headers: HeaderSet;
  /** JSON body schema; omitted for HEAD (no body) and 204. */
  schema?: Record<string, unknown>;
}

function errorBody(codes: readonly ErrorCode[]): Record<string, unknown> {
  for (const code of codes) {
    if (!ERROR_CODES.has(code)) throw new Error(`openapi: error code ${code} is not in errorSchema`);
  }
  return {
    allOf: [ref('schemas', 'Error'), { type: 'object', properties: { error: codes.length === 1 ? { const: codes[0] } : { enum: [...codes] } } }],
  };
}

function toResponse(spec: ResponseSpec, withBody: boolean): Record<string, unknown> {
  const response: Record<string, unknown> = {
    description: spec.description,
    headers: spec.headers,
  };
  if (withBody && spec.schema !== undefined) response.content = { [JSON_MEDIA]: { schema: spec.schema } };
  return response;
}

type Endpoint = 'list' | 'detail';

/** Every response of GET (and, bodiless, HEAD) on an endpoint, per D5's order of checks. */
function readResponses(endpoint: Endpoint): Record<string, ResponseSpec> {
  const responses: Record<string, ResponseSpec> = {
    200:
      endpoint === 'list'
        ? {
            description: 'A page of the key\'s active listings (spec 4.2): featured first, then newest first, then by id (D9). A page beyond the last has `items: []` and the true `total` and `pages` (D7).',
            headers: { ...rateLimitHeaders(true), ...commonHeaders() },
            schema: ref('schemas', 'ListingPage'),
          }
        : {
            description: 'The listing, bare (not in an envelope), with every field of the listing object, null where unset (spec 4.3, D12).',
            headers: { ...rateLimitHeaders(true), ...commonHeaders() },
            schema: ref('schemas', 'Listing'),
          },
  };
  if (endpoint === 'list') {
    responses[400] = {
      description:
        '`bad_request`: a malformed query parameter (D7): `page` or `per_page` not a base-10 integer, below 1, above 2147483647, or given twice. Not retryable until the request is fixed.',
      headers: { ...rateLimitHeaders(true), ...commonHeaders() },
      schema: errorBody(['bad_request']),
    };
  }
  if (endpoint === 'detail') {
    responses[400] = {
      description:
        '`bad_request`: a malformed request: the Host header missing or sent twice, or a request target naming another host (D6). Refused before the key check, so no rate-limit headers. Not retryable until the request is fixed.',
      headers: commonHeaders(),
      schema: errorBody(['bad_request']),
    };
  }
  responses[401] = {
    description:
      '`unauthorized`: the key is missing, malformed, unknown or revoked, or belongs to another country than this host (spec 5, D3, D4). Not retryable until the key is fixed. No rate-limit headers: the request did not reach the limiter.',
    headers: commonHeaders(),
    schema: errorBody(['unauthorized']),
  };
  responses[403] = {
    description:
      '`origin_not_allowed`: the key is valid, but the request\'s `Origin` is not registered for the key\'s account in its country (spec 4.4, D17; the literal origin `null` is never allowed). Register the origin in the dashboard or call from a server. Not retryable until fixed.',
    headers: { ...rateLimitHeaders(true), ...commonHeaders() },
    schema: errorBody(['origin_not_allowed']),
  };
  responses[404] = {
    description:
      endpoint === 'list'
        ? '`not_found`: this host serves no country (D3); use the API host of your key\'s country.'
        : '`not_found`: no active listing with this id is visible to this key: it does not exist, is not active or has expired, belongs to another account or country, or the id is not a UUID (spec 4.3, D10, D11); also when this host serves no country (D3). The cases are deliberately not distinguished.',
    // A host that serves no country is refused before the key check, so the list's 404 never
    // carries rate-limit headers; the detail's "no such listing" 404 always does.
    headers: endpoint === 'list' ? commonHeaders() : { ...rateLimitHeaders(false), ...commonHeaders() },
    schema: errorBody(['not_found']),
  };
  responses[429] = {
    description:
      '`rate_limited`: more than the key\'s limit of requests in a rolling minute (spec 8, D14). Retry after `Retry-After` seconds. A refused request does not count against the limit (D5).',
    headers: { ...rateLimitHeaders(true, true), ...commonHeaders() },
    schema: errorBody(['rate_limited']),
  };
  responses[500] = {
    description: '`internal_error`: a failure on the service side; the message carries the request id, never a stack trace (D6). Retry with exponential backoff.',
    headers: { ...rateLimitHeaders(false), ...commonHeaders() },
    schema: errorBody(['internal_error']),
  };
  return responses;
}

// ---- Operations --------------------------------------------------------------------------------

function readOperation(endpoint: Endpoint, method: 'get' | 'head'): Record<string, unknown> {
  const head = method === 'head';
  const what = endpoint === 'list' ? 'List active listings' : 'Fetch one active listing';
  const responses = Object.fromEntries(Object.entries(readResponses(endpoint)).map(([status, spec]) => [status, toResponse(spec, !head)]));
  const operation: Record<string, unknown> = {
    operationId: `${head ? 'head' : 'get'}${endpoint === 'list' ? 'Listings' : 'Listing'}`,
    tags: ['Listings'],
    summary: head ? `${what} (headers only)` : what,
    description: head
      ? `As GET, with the same checks, statuses and headers, and no body. It counts against the rate limit like a GET (D5).`
      : endpoint === 'list'
        ? 'The key\'s account\'s active listings in the key\'s country (D1, D10), paginated. To read everything, request `page=1, 2, ...` until `page` equals `pages` (`pages` is never 0, D8). Checks in order (D5): host (404), key (401), rate limit (429), browser origin (403), query parameters (400).'
        : 'One active listing of the key\'s account in the key\'s country, by id. Checks in order (D5): host (404), key (401), rate limit (429), browser origin (403), look-up (404).',
    parameters: endpoint === 'list' ? [ref('parameters', 'page'), ref('parameters', 'per_page')] : [ref('parameters', 'listingId')],
    responses,
  };
  return operation;
}

function preflightOperation(endpoint: Endpoint): Record<string, unknown> {
  const cors = (description: string, schema: Record<string, unknown>) => header(description, schema, false);
  return {
    operationId: `preflight${endpoint === 'list' ? 'Listings' : 'Listing'}`,
    tags: ['CORS'],
    summary: 'CORS preflight',
    description:
      'Answered for any origin, without a key (a preflight carries none) and without counting against any rate limit (D16). The allow-list is enforced on the real request, which gets 403 `origin_not_allowed` for an unregistered origin (D17).',
    security: [],
    parameters: [
      { name: 'Origin', in: 'header', required: false, description: 'The browser page\'s origin.', schema: { type: 'string' } },
      { name: 'Access-Control-Request-Method', in: 'header', required: false, schema: { type: 'string' } },
      {
        name: 'Access-Control-Request-Headers',
        in: 'header',
        required: false,
        description: '`Authorization` is always granted; other standard, safe headers are granted when asked for; anything else is not (D16).',
        schema: { type: 'string' },
      },
    ],
    responses: {
      204: {
        description: 'Preflight answer. The `Access-Control-*` headers are sent when the request has an `Origin` (not the literal `null`).',
        headers: {
          ...allowHeader(),
          'Access-Control-Allow-Methods': cors(`\`${ALLOWED_METHODS}\`.`, { type: 'string', const: ALLOWED_METHODS }),
          'Access-Control-Allow-Headers': cors('`Authorization`, plus any other requested header that is safe (D16).', { type: 'string', pattern: '^Authorization(, [a-z-]+)*$' }),
          'Access-Control-Max-Age': cors('Seconds the browser may cache this answer.', { type: 'integer', const: PREFLIGHT_MAX_AGE_SECONDS }),
          ...commonHeaders(),
        },
      },
      404: toResponse({ description: '`not_found`: this host serves no country (D3).', headers: commonHeaders(), schema: errorBody(['not_found']) }, true),
    },
  };
}

function pathItem(endpoint: Endpoint): Record<string, unknown> {
  return {
    description: `Methods: ${ALLOWED_METHODS}. Any other method gets 405 \`method_not_allowed\` with an \`Allow\` header, before any other check (D5, D6; response \`#/components/responses/MethodNotAllowed\`).`,
    get: readOperation(endpoint, 'get'),
    head: readOperation(endpoint, 'head'),
    options: preflightOperation(endpoint),
  };
}

// ---- The document ------------------------------------------------------------------------------

export function buildOpenApiDocument(options: OpenApiOptions = {}): OpenApiDocument {
  const domain = options.apiDomain ?? 'example.com';
  const countries = options.countries ?? COUNTRY_CODES;
  const schemas = Object.fromEntries(SERVER_SCHEMAS.map((s) => [s.$id, toComponent(s)]));

  return {
    openapi: '3.1.0',
    info: {
      title: 'Listings Developer API',
      version: '1.0.0',
      summary: 'Read-only access to an organisation\'s active commercial-property listings.',
      description: [
        'A read-only, versioned HTTP/JSON API returning an organisation\'s currently active commercial-space listings, for showing them on the organisation\'s own website. All endpoints live under `/v1`; within v1 new fields may be added to the listing object, and clients must ignore fields they do not know (spec 2.1 rule 4, spec 9).',
        '',
        '**Hosts.** Each key belongs to one country and works only on that country\'s host (D3): `sg` is served at `api.{domain}`, every other country `cc` at `api.{cc}.{domain}`. A key sent to another country\'s host gets 401; a host that serves no country gets 404.',
        '',
        '**Errors.** Every error is JSON `{"error": CODE, "message": TEXT}` (more fields may be added) with `Content-Type: application/json` (D6). Codes: `bad_request` 400, `unauthorized` 401, `origin_not_allowed` 403, `not_found` 404, `method_not_allowed` 405, `rate_limited` 429, `internal_error` 500. 429 and 5xx are retryable with exponential backoff; the others are not until the request or configuration is fixed.',
        '',
        '**Rate limit.** 60 requests per rolling minute per key by default, bursts up to the limit allowed (D14). Every response that passes the key check carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`; a 429 also carries `Retry-After` (D15).',
        '',
        '**Browsers (CORS).** Calls with an `Origin` header are allowed only from origins registered for the key\'s account in the dashboard (Settings, Developer); others get 403 `origin_not_allowed` (D17). Preflights are answered without a key (D16). Every response to a browser, errors included, carries `Access-Control-Allow-Origin` and exposes the rate-limit headers, `Retry-After` and `X-Request-Id` (D18). Server-to-server calls (no `Origin`) are not checked. Image URLs are public and need neither a key nor CORS.',
        '',
        'Every response carries `X-Request-Id` (D19).',
      ].join('\n'),
    },
    servers: countries.map((country) => ({
      url: `https://${hostForCountry(country, '{domain}')}`,
      description: `Country ${country} (keys ${country}_live_...). A local server (API_DOMAIN=localhost) speaks plain http on its port.`,
      variables: { domain: { default: domain, description: 'The deployment\'s API domain (OPERATIONS API_DOMAIN).' } },
    })),
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Listings', description: 'Active listings of the key\'s account in the key\'s country.' },
      { name: 'CORS', description: 'Browser preflights (D16).' },
    ],
    paths: {
      '/v1/listings': pathItem('list'),
      '/v1/listings/{id}': pathItem('detail'),
    },
    components: {
      schemas,
      parameters: {
        page: {
          name: 'page',
          in: 'query',
          required: false,
          description:
            '1-based page number (D7): a base-10 integer (an optional leading `+`, no other sign, no decimals, exponent or surrounding whitespace), at least 1 and at most 2147483647, else 400 `bad_request`; given twice is 400. A page beyond the last gives 200 with `items: []`.',
          schema: { type: 'integer', minimum: 1, maximum: MAX_INT32, default: 1 },
        },
        per_page: {
          name: 'per_page',
          in: 'query',
          required: false,
          description: `Page size (D7): written like \`page\`, at least 1, else 400 \`bad_request\`. A value above ${MAX_PER_PAGE} is not an error: it is clamped to ${MAX_PER_PAGE}, and the envelope's \`per_page\` reports the size applied. Above 2147483647, or given twice, is 400.`,
          schema: { type: 'integer', minimum: 1, maximum: MAX_INT32, default: DEFAULT_PER_PAGE },
        },
        listingId: {
          name: 'id',
          in: 'path',
          required: true,
          description: 'The `id` of a listing from the list endpoint. An id that is not a UUID gives 404, like any id the key cannot see (D11).',
          schema: { type: 'string', format: 'uuid' },
        },
      },
      headers: sharedHeaders(),
      responses: {
        MethodNotAllowed: toResponse(
          {
            description: '`method_not_allowed`: a method other than GET, HEAD or OPTIONS on a path of the API (D5, D6). Decided before any other check, so no rate-limit headers.',
            headers: { ...allowHeader(), ...commonHeaders() },
            schema: errorBody(['method_not_allowed']),
          },
          true,
        ),
      },
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key, `Authorization: Bearer <API_KEY>` (spec 5). Format `<cc>_live_<secret>`: `<cc>` the key\'s lowercase country code (one of `sg my uk in us ca au nz`), which selects its host; `live` literally; `<secret>` random characters `[A-Za-z0-9]` (D2). Keys are created and revoked in the dashboard (Settings, Developer), shown once, and revoked at once (D4). Keep keys server-side.',
        },
      },
    },
  };
}
