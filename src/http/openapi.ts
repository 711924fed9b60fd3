import { COUNTRY_CODES, hostForCountry, type Country } from '../core/countries.js';
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from '../core/api-error.js';
import { DEFAULT_RATE_LIMIT_PER_MINUTE, type Deprecation } from '../config/index.js';
import { MIN_SUNSET_MONTHS } from '../config/deprecations.js';
import { POLICY_NAME, WINDOW_SECONDS } from '../ratelimit/limiter.js';
import { deprecationHeaders, deprecationOf } from './deprecations.js';
import { DISABLE_AFTER_MS, PREVIOUS_SECRET_MS, REPLAY_HEADER, RETRY_DELAYS_MS } from '../webhooks/deliverer.js';
import { ATTEMPT_TIMEOUT_MS } from '../webhooks/send.js';
import { CACHE_CONTROL } from './v1/routes.js';
import type { TObject } from '#typebox';
import { UUID_PATTERN } from '../core/formats.js';
import { ALLOWED_METHODS, EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../cors/cors.js';
import { changePageSchema, errorSchema, facetsSchema, listingRemovedSchema, listingSchema, listingUpsertedSchema, pageSchema, usageTypeSchema } from '../listings/listing.js';
import type { Endpoint, Examples } from './v1/endpoint.js';
import { ENDPOINTS } from './v1/endpoints/index.js';
import { ERROR_EXAMPLES, ETAG, FEATURED_ID, REQUEST_ID, RESET, SPARSE_ID } from './v1/examples.js';
import { MAX_QUERY_PARAMETERS } from './v1/query.js';
import { MAX_TARGET_LENGTH } from './front.js';
import { WEBHOOK_MESSAGE_SCHEMAS } from '../webhooks/messages.js';

/**
 * The OpenAPI 3.1 document of /v1, generated from the endpoints' declarations (v1/endpoints/: each
 * one's parameters, answers and examples) and the very JSON schemas the answers are checked against
 * (listing.ts), so that the document cannot drift from the routes or the responses. `npm run openapi` writes it
 * to openapi.json; GET /openapi.json serves it with the deployment's domain and countries.
 * test/http/openapi.test.ts checks that the committed file is current, that Redocly CLI finds no problem in it, and that real
 * responses of a listening server validate against it. docs/api.md is the guide, which links here.
 *
 * The document is written for the tools consumers feed it to (validators, SDK generators, docs
 * renderers), so its text states each rule itself: it never cites D-numbers or the specification.
 *
 * Adding an endpoint is one more declaration in v1/endpoints/ (plus its answer's schema in
 * `SERVER_SCHEMAS`); adding a query parameter is one more property of its querystring schema.
 * Everything every /v1 endpoint shares (the key, rate limit, CORS, conditional requests, errors)
 * is built once below and attached to every endpoint.
 */
export interface OpenApiOptions {
  /** The deployment's API_DOMAIN, the default of the servers' `domain` variable (D3). */
  apiDomain?: string;
  /** The countries the deployment serves (COUNTRIES); all of them by default. */
  countries?: readonly Country[];
  /**
   * API_DEPRECATIONS (D29): operations under a deprecated prefix are `deprecated: true`, and each of
   * their answers documents the Deprecation, Sunset and Link headers. None by default, so the
   * committed openapi.json marks nothing.
   */
  deprecations?: readonly Deprecation[];
}

export type OpenApiDocument = Record<string, unknown> & {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
};

type Json = Record<string, unknown>;

const JSON_MEDIA = 'application/json';
const SERVER_SCHEMAS = [
  listingSchema, usageTypeSchema, pageSchema, facetsSchema, changePageSchema, listingUpsertedSchema, listingRemovedSchema, errorSchema,
] as const;
const SCHEMA_NAMES: ReadonlySet<string> = new Set(SERVER_SCHEMAS.map((s) => s.$id));
const PUBLISHED_CODES: ReadonlySet<string> = new Set(errorSchema.properties.error.enum);

/** A duration as the prose says it: 5 s, 2 min, 1 h, 24 hours. */
export function spokenDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? '1 h' : ms >= 86_400_000 ? `${ms / 3_600_000} hours` : `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** The error table (core/api-error.ts) in words: "`bad_request` 400 (and 414, 417, 431), ...". */
function errorCodeList(): string {
  // Statuses HTTP gives some refusals of a malformed request (front.ts), which keep the code bad_request (D6).
  const alsoAs: Partial<Record<ErrorCode, number[]>> = { bad_request: [414, 417, 431] };
  return ERROR_CODES.map((code) => `\`${code}\` ${ERROR_STATUS[code]}${alsoAs[code] ? ` (and ${alsoAs[code].join(', ')})` : ''}`).join(', ');
}

/** The webhook retry schedule (webhooks/deliverer.ts) in words: "5 s, 30 s, ..., then every 2 h". */
export function retrySchedule(): string {
  const delays = RETRY_DELAYS_MS.map(spokenDuration);
  return `${delays.slice(0, -1).join(', ')}, then every ${delays.at(-1)}`;
}

/**
 * Ids as the service stores and sends them: a UUID's 8-4-4-4-12 text form, lowercase. The import
 * and the CLI accept any such hexadecimal text (either case, stored lowercase), without checking
 * the RFC 9562 version and variant digits, so the published document does not say
 * `format: uuid`: strict validators (zod's `z.uuid()`, which generators emit for that format)
 * would refuse ids the service legitimately sends. See docs/api.md, "The listing object".
 */
export const ID_PATTERN = UUID_PATTERN;

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
  const limit = DEFAULT_RATE_LIMIT_PER_MINUTE;
  const headers: HeaderSet = {
    'X-RateLimit-Limit': header(
      `The key's ceiling of requests per rolling ${WINDOW_SECONDS} seconds (${limit} unless arranged otherwise).${when}`,
      { type: 'integer', minimum: 1 },
      required,
      limit,
    ),
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
    // D29: the same state in the IETF fields (draft-ietf-httpapi-ratelimit-headers).
    'RateLimit-Policy': header(
      `The key's quota as an IETF structured field (draft-ietf-httpapi-ratelimit-headers): the policy \`"${POLICY_NAME}"\`, \`q\` its requests (as \`X-RateLimit-Limit\`) per \`w\` = ${WINDOW_SECONDS} rolling seconds. ` +
        `Read it with a structured-field parser: more parameters may be added within v1.${when}`,
      { type: 'string', pattern: `^"${POLICY_NAME}";q=[1-9][0-9]*;w=${WINDOW_SECONDS}(;.+)?$` },
      required,
      `"${POLICY_NAME}";q=${limit};w=${WINDOW_SECONDS}`,
    ),
    RateLimit: header(
      `Where the key stands, as an IETF structured field (draft-ietf-httpapi-ratelimit-headers): \`r\` how many more requests would be admitted right now (as \`X-RateLimit-Remaining\`), ` +
        `\`t\` whole seconds until a request is admitted again: 0 when one would be now, ${limited ? 'here equal to `Retry-After`' : 'and equal to `Retry-After` on a 429'}. ` +
        `Read it with a structured-field parser: more parameters may be added within v1.${when}`,
      { type: 'string', pattern: limited ? `^"${POLICY_NAME}";r=0;t=[1-9][0-9]*(;.+)?$` : `^"${POLICY_NAME}";r=(0|[1-9][0-9]*);t=(0|[1-9][0-9]*)(;.+)?$` },
      required,
      limited ? `"${POLICY_NAME}";r=0;t=12` : `"${POLICY_NAME}";r=57;t=0`,
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
  if (!PUBLISHED_CODES.has(code)) throw new Error(`openapi: error code ${code} is not in errorSchema`);
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
      `\`rate_limited\`: the key has made as many requests as its limit allows in the last ${WINDOW_SECONDS} seconds. Retry after \`Retry-After\` seconds. A refused request does not count, so retrying too early does not lock the key out.`,
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
      `Any other error, in the same JSON shape. In particular: 405 \`method_not_allowed\` with an \`Allow: ${ALLOWED_METHODS}\` header for any method other than GET, HEAD or OPTIONS on an API path (never for this operation), decided before any other check; 414 \`bad_request\` for a request target (path and query) over ${MAX_TARGET_LENGTH} characters, and 431 \`bad_request\` for request headers over the size limit, both before any other check; and 417 \`bad_request\` for an \`Expect\` header other than \`100-continue\`.`,
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
      { methodNotAllowed: x.methodNotAllowed, targetTooLong: x.targetTooLong, headersTooLarge: x.headersTooLarge },
    ),
  };
}

// ---- Endpoints ---------------------------------------------------------------------------------

/** The route table's `:name` as OpenAPI's `{name}`. */
export const openApiPath = (route: string): string => route.replace(/:([A-Za-z]+)/g, '{$1}');

/**
 * The parameters of an endpoint's schemas (endpoint.ts, query.ts), as OpenAPI parameter objects:
 * the property's description and first example move to the parameter; a query parameter is
 * required only when the client must send it (one with a default never is); an array is one
 * parameter of comma-separated values (`style: form, explode: false`), the only way the API reads
 * one. Keywords the validator reads but JSON Schema does not know (`x-clamp`) stay out.
 * An optional parameter's example is an example, not a value to send (issue 40 item 11): see
 * `optionalExample`.
 */
function parametersOf(schema: TObject | undefined, where: 'query' | 'path'): Record<string, Json> {
  const parameters: Record<string, Json> = {};
  if (schema === undefined) return parameters;
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties)) {
    const { description, examples, ...rest } = JSON.parse(JSON.stringify(property)) as Json & { description: string; examples: unknown[] };
    const published = Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith('x-')));
    const mustSend = where === 'path' || (required.has(name) && rest.default === undefined);
    parameters[name] = {
      name,
      in: where,
      required: mustSend,
      description,
      ...(rest.type === 'array' ? { style: 'form', explode: false } : {}),
      schema: published,
      ...(mustSend ? { example: examples[0] } : optionalExample(examples[0])),
    };
  }
  return parameters;
}

/**
 * The example of an optional parameter, shown but not sent by "try it" (issue 40 item 11).
 * Interactive references fill a parameter's example into their request form, and send it: /docs
 * (Scalar) did, so its first "try it" of the list asked for page 2 of featured offices and retail
 * between 800 and 2500 sq ft, and got an empty list. As an Example Object under `default`, the
 * name of the example Scalar's request form starts from, with `x-disabled` (Scalar's extension:
 * the parameter is listed with this value but not sent until ticked), it is still documented, and
 * the first request is the plain one. Without it Scalar would fill in the schema's `default`
 * (sent: harmless but not asked for) or first `enum` value (`sort=price`: an order nobody chose).
 */
function optionalExample(value: unknown): Json {
  return { examples: { default: { summary: 'An example value (not a default: leave the parameter out for the default)', value, 'x-disabled': true } } };
}

/** Every endpoint's parameters, by name; a name two endpoints share must mean the same in both. */
function parameterComponents(): Record<string, Json> {
  const components: Record<string, Json> = {};
  for (const endpoint of ENDPOINTS) {
    for (const [name, parameter] of Object.entries({ ...parametersOf(endpoint.querystring, 'query'), ...parametersOf(endpoint.params, 'path') })) {
      const known = components[name];
      if (known !== undefined && JSON.stringify(known) !== JSON.stringify(parameter)) throw new Error(`openapi: parameter ${name} differs between endpoints`);
      components[name] = parameter;
    }
  }
  return components;
}

const parameterNames = (endpoint: Endpoint): string[] =>
  [endpoint.querystring, endpoint.params].flatMap((schema) => Object.keys(schema?.properties ?? {}));

/**
 * An operation's error answers, one per code of the error table (core/api-error.ts) under the
 * code's status: a new code is a compile error here until it is given its answer.
 * `method_not_allowed` is never the answer to a GET (the only method an operation has): it is
 * described in the `default` answer, with the other statuses some codes also take.
 */
function errorResponses(endpoint: Endpoint): Record<number, Json> {
  const x = ERROR_EXAMPLES;
  const badRequest = [
    '`bad_request`: a malformed request.',
    endpoint.badRequest?.description ?? '',
    `Also a \`Host\` header that is missing or sent twice, a request target naming another host, or a query of more than ${MAX_QUERY_PARAMETERS} parameters: refused before the key check, so without rate-limit headers. Not retryable until the request is fixed.`,
  ].filter((s) => s !== '');
  const notFound = endpoint.notFound === undefined
    ? '`not_found`: this host serves no country; use the API host of your key\'s country. Refused before the key check, so without rate-limit headers.'
    : `\`not_found\`: ${endpoint.notFound.description} Also when this host serves no country (then before the key check, so without rate-limit headers).`;
  const byCode: Record<ErrorCode, Json | null> = {
    bad_request: errorResponse('bad_request', badRequest.join(' '), { ...rateLimitHeaders(false), ...commonHeaders() }, { ...endpoint.badRequest?.examples, hostTwice: x.hostTwice, tooManyParameters: x.tooManyParameters }),
    unauthorized: ref('responses', 'Unauthorized'),
    origin_not_allowed: ref('responses', 'OriginNotAllowed'),
    not_found: errorResponse(
      'not_found',
      notFound,
      endpoint.notFound === undefined ? commonHeaders() : { ...rateLimitHeaders(false), ...commonHeaders() },
      { ...endpoint.notFound?.examples, unknownHost: x.unknownHost },
    ),
    method_not_allowed: null,
    rate_limited: ref('responses', 'RateLimited'),
    internal_error: ref('responses', 'InternalError'),
  };
  return Object.fromEntries(ERROR_CODES.flatMap((code) => (byCode[code] === null ? [] : [[ERROR_STATUS[code], byCode[code]]])));
}

function operation(endpoint: Endpoint, deprecation: Deprecation | undefined, shared: Record<string, Json>): Json {
  const responses: Record<string, Json> = {
    200: {
      ...jsonResponse(
        endpoint.ok.description,
        { ETag: ref('headers', 'ETag'), 'Cache-Control': ref('headers', 'Cache-Control'), ...rateLimitHeaders(true), ...commonHeaders() },
        ref('schemas', endpoint.ok.schema),
        endpoint.ok.examples,
      ),
      ...(endpoint.ok.links === undefined ? {} : { links: endpoint.ok.links }),
    },
    304: ref('responses', 'NotModified'),
    ...errorResponses(endpoint),
    default: ref('responses', 'Error'),
  };
  return {
    operationId: endpoint.operationId,
    tags: ['Listings'],
    summary: endpoint.summary,
    description: [...endpoint.description, ...(deprecation === undefined ? [] : ['', deprecationNote(deprecation)])].join('\n'),
    ...(deprecation === undefined ? {} : { deprecated: true }),
    parameters: [...parameterNames(endpoint).map((name) => ref('parameters', name)), ref('parameters', 'ifNoneMatch')],
    responses: deprecation === undefined ? responses : withDeprecationHeaders(responses, deprecation, shared),
  };
}

// ---- Deprecation (D29) -------------------------------------------------------------------------

const isoDate = (ms: number) => new Date(ms).toISOString().replace(/T00:00:00\.000Z$/, '').replace(/\.000Z$/, 'Z');

/** What a deprecated operation's description adds: since when, until when, and where to read more. */
function deprecationNote(d: Deprecation): string {
  const sunset = d.sunset === undefined ? 'No removal date is set yet' : `It may be removed after ${isoDate(d.sunset)} (\`Sunset\`)`;
  return `**Deprecated** since ${isoDate(d.since * 1000)}: it keeps working as documented, and every answer says so in \`Deprecation\`, \`Link\` and \`Sunset\` headers. ${sunset}. What to use instead: ${d.link}`;
}

/**
 * The headers of a deprecated operation's answers, each the exact value the service sends. Required
 * on every documented status; optional in `default`, whose 431 (and a 414 refused with it) is
 * answered before the service reads the request.
 */
function deprecationHeaderSet(d: Deprecation, required: boolean): HeaderSet {
  const sent = deprecationHeaders(d);
  const exactly = (value: string) => ({ type: 'string', const: value });
  const headers: HeaderSet = {
    Deprecation: header(
      `This operation is deprecated: the Unix time (in seconds, after \`@\`) since when (RFC 9745). It keeps working; plan the move the \`Link\` page describes.`,
      exactly(sent.deprecation!),
      required,
      sent.deprecation,
    ),
  };
  if (sent.sunset !== undefined) {
    headers.Sunset = header('The HTTP date after which this operation may be removed (RFC 8594).', exactly(sent.sunset), required, sent.sunset);
  }
  headers.Link = header('The page that describes the deprecation and what to use instead (`rel="deprecation"`, RFC 9745).', exactly(sent.link!), required, sent.link);
  return headers;
}

/** A deprecated operation's answers: shared ones copied out of their components, each with the D29 headers. */
function withDeprecationHeaders(responses: Record<string, Json>, d: Deprecation, shared: Record<string, Json>): Record<string, Json> {
  return Object.fromEntries(Object.entries(responses).map(([status, response]) => {
    const name = typeof response.$ref === 'string' ? response.$ref.replace('#/components/responses/', '') : undefined;
    const resolved = name === undefined ? response : shared[name];
    if (resolved === undefined) throw new Error(`openapi: no shared response ${name}`);
    return [status, { ...resolved, headers: { ...(resolved.headers as HeaderSet), ...deprecationHeaderSet(d, status !== 'default') } }];
  }));
}

/**
 * A path item: its GET. HEAD and OPTIONS are answered too but are not operations of their own in
 * the document: a generated SDK would turn them into functions nobody should call (a browser sends
 * its preflights itself, and HEAD is GET without a body). The path's description says what they do.
 */
function pathItem(endpoint: Endpoint, deprecation: Deprecation | undefined, shared: Record<string, Json>): Json {
  return {
    description: [
      `Also answered on this path: \`HEAD\`, exactly as GET (same checks, statuses and headers, counted against the rate limit alike) without a body; and \`OPTIONS\`, the CORS preflight that browsers send by themselves: 204 for any origin, without a key and without counting against any rate limit, with \`Access-Control-Allow-Methods: ${ALLOWED_METHODS}\`, \`Access-Control-Allow-Headers\` (\`Authorization\`, plus standard headers such as \`If-None-Match\` when asked for) and \`Access-Control-Max-Age: ${PREFLIGHT_MAX_AGE_SECONDS}\`.`,
      `Any other method gets 405 \`method_not_allowed\` with \`Allow: ${ALLOWED_METHODS}\`, before any other check.`,
    ].join(' '),
    get: operation(endpoint, deprecation, shared),
  };
}

// ---- Webhooks ----------------------------------------------------------------------------------

const webhookHeader = (name: string, description: string, example: string, required = true) => ({ name, in: 'header', required, description, schema: { type: 'string' }, example });

/** What an organisation's endpoint receives (OpenAPI 3.1 `webhooks`): one operation per message type. */
function webhooks(): Json {
  const headers = [
    webhookHeader('webhook-id', 'The message id: the same on every retry of the message. Deduplicate on it.', 'msg_4b2f8c1e-7d3a-4e5b-9c6d-0a1b2c3d4e5f'),
    webhookHeader('webhook-timestamp', 'Unix seconds of this attempt. Refuse a message whose timestamp is more than 5 minutes from your clock.', '1795341600'),
    webhookHeader(
      'webhook-signature',
      `\`v1,\` and the base64 HMAC-SHA256 of \`{webhook-id}.{webhook-timestamp}.{body}\`, keyed with the base64-decoded part of the endpoint's secret (\`whsec_...\`); for ${spokenDuration(PREVIOUS_SECRET_MS)} after a secret rotation, two such signatures separated by a space. Verify with any Standard Webhooks library.`,
      'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    ),
    webhookHeader(
      REPLAY_HEADER,
      '`true` on a message sent again because a replay was asked for (the dashboard\'s Replay, `webhook replay`), until the endpoint has caught up; absent otherwise. Not signed: treat a replay like any message (idempotently).',
      'true',
      false,
    ),
  ];
  const operation = (name: keyof typeof WEBHOOK_MESSAGE_SCHEMAS, summary: string, example: unknown) => ({
    post: {
      operationId: name.replace(/Message$/, '').replace(/^./, (c) => c.toLowerCase()),
      tags: ['Listings'],
      summary,
      description:
        `Sent to the URL registered for the account and country, with \`Content-Type: application/json\`. Answer with a 2xx within ${spokenDuration(ATTEMPT_TIMEOUT_MS)} (do slow work afterwards); anything else, or no answer, is retried with the same message after ${retrySchedule()}, and the endpoint is disabled after ${spokenDuration(DISABLE_AFTER_MS)} of failures. Messages of an endpoint come one at a time, in the order of the changes. An endpoint may be told of one kind of change only, or of listings of some usage types only (then an upserted listing of none of them is in \`removed\`); a message left with nothing is not sent.`,
      parameters: headers,
      requestBody: { required: true, content: { [JSON_MEDIA]: { schema: ref('schemas', name), examples: { message: { summary, value: example } } } } },
      // Any 2xx is a success; 204 is what a receiver usually answers (and what the lint's header rule exempts: the answer is the receiver's, not this API's).
      responses: { 204: { description: 'Received (any 2xx status counts): the next message may be sent.' } },
      security: [],
    },
  });
  return {
    'listings-changed': operation('ListingsChangedMessage', 'Listings changed', {
      type: 'listings.changed',
      timestamp: '2026-11-21T09:30:01.204Z',
      data: { country: 'sg', upserted: [FEATURED_ID], removed: [SPARSE_ID] },
    }),
    'listings-resync': operation('ListingsResyncMessage', 'Read every listing again', { type: 'listings.resync', timestamp: '2026-11-21T09:30:01.204Z', data: { country: 'sg' } }),
    'webhook-test': operation('WebhookTestMessage', 'A test event', { type: 'webhook.test', timestamp: '2026-11-21T09:30:01.204Z', data: { country: 'sg' } }),
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
  const shared = sharedResponses();
  const deprecations = options.deprecations ?? [];
  const schemas = { ...Object.fromEntries(SERVER_SCHEMAS.map((s) => [s.$id, toComponent(s)])), ...codeSchemas, ...WEBHOOK_MESSAGE_SCHEMAS };

  const document: OpenApiDocument = {
    openapi: '3.1.0',
    info: {
      title: 'Listings Developer API',
      version: '1.0.0',
      summary: 'Read-only access to an organisation\'s active commercial-property listings.',
      description: [
        'A read-only, versioned HTTP/JSON API returning an organisation\'s currently active commercial-space listings (retail, office, food and beverage, industrial, clinic), for showing them on the organisation\'s own website. Keys and browser origins are managed in the dashboard (Settings, Developer), not through the API.',
        '',
        `**Versions.** Every path starts with \`/v1\`. Within v1, fields (of the listing object, the page envelope and error bodies), endpoints, optional query parameters and headers may be added: ignore what you do not know (validators: allow additional properties). Nothing is removed or renamed, no type or meaning changes, and no parameter becomes required within v1. An operation on its way out is marked \`deprecated\` here, its answers carry \`Deprecation\`, \`Link\` and usually \`Sunset\` headers, and it keeps working for at least ${MIN_SUNSET_MONTHS} months after its deprecation date.`,
        '',
        '**Hosts.** Each key belongs to one country and works only on that country\'s host: `sg` at `api.{domain}`, every other country at `api.{country}.{domain}` (the two servers below). A key sent to another country\'s host gets 401; a host that serves no country gets 404.',
        '',
        '**Keys.** `Authorization: Bearer <cc>_live_<secret>`. Keep keys on your server; a key used from a browser works only from origins registered for it.',
        '',
        `**Errors.** Every error is JSON \`{"error": CODE, "message": TEXT}\` (more fields may be added) with \`Content-Type: application/json\`. Codes: ${errorCodeList()}. Retry 429 after \`Retry-After\` and 5xx with exponential backoff; the others are not retryable until the request or the configuration is fixed.`,
        '',
        `**Rate limit.** ${DEFAULT_RATE_LIMIT_PER_MINUTE} requests per rolling ${WINDOW_SECONDS} seconds per key by default (higher limits are arranged with your account contact); a burst of the whole limit at once is allowed. Every answer past the key check carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`, and the same in the IETF fields \`RateLimit-Policy\` and \`RateLimit\` (draft-ietf-httpapi-ratelimit-headers); a 429 also carries \`Retry-After\`.`,
        '',
        `**Conditional requests.** Every 200 carries a strong \`ETag\` and \`Cache-Control: ${CACHE_CONTROL}\`. Send the tag back in \`If-None-Match\`: while the body is unchanged the answer is \`304 Not Modified\`, without a body, and free (it does not count against the rate limit).`,
        '',
        '**Browsers (CORS).** A request with an `Origin` header is answered only for origins registered for the key\'s account in its country; others get 403 `origin_not_allowed`. Preflights are answered for any origin, without a key. Every answer to a browser, errors included, carries `Access-Control-Allow-Origin` and exposes `ETag`, the rate-limit headers, `Retry-After`, `X-Request-Id` and the deprecation headers. Calls without `Origin` (from a server) are not checked. Image URLs are public: they need neither a key nor CORS.',
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
    paths: Object.fromEntries(ENDPOINTS.map((endpoint) => [openApiPath(endpoint.url), pathItem(endpoint, deprecationOf(deprecations, endpoint.url), shared)])),
    webhooks: webhooks(),
    components: {
      schemas,
      parameters: {
        ...parameterComponents(),
        ifNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description:
            'The `ETag` of a copy you hold (also accepted: its weak form `W/"..."`, a comma-separated list of tags, or `*`). When it matches the body this request would get, the answer is `304 Not Modified` without a body, and it does not count against the rate limit, even when the key has no requests left. Only an answer that would otherwise be 200 becomes 304: a request that fails a check gets that error, and a request whose tag does not match is answered and counted as usual.',
          schema: { type: 'string' },
          ...optionalExample(ETAG),
        },
      },
      headers: sharedHeaders(),
      responses: shared,
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
  // Only the shared answers some operation still refers to (a deprecated one has its own copies), and
  // only the codes some answer names, get a component.
  const referred = JSON.stringify(document.paths);
  for (const name of Object.keys(shared)) {
    if (!referred.includes(`"#/components/responses/${name}"`)) delete (document.components.responses as Record<string, unknown>)[name];
  }
  if (Object.keys(document.components.responses ?? {}).length === 0) delete document.components.responses;
  const used = JSON.stringify([document.paths, document.components.responses]);
  for (const name of Object.keys(codeSchemas)) {
    if (!used.includes(`"#/components/schemas/${name}"`)) delete (document.components.schemas as Record<string, unknown>)[name];
  }
  return document;
}
