import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { sql } from '#kysely';
import { COUNTRY_CODES, hostForCountry } from '../../src/core/countries.js';
import { ALLOWED_METHODS, EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../../src/cors/cors.js';
import { buildOpenApiDocument, ID_PATTERN, openApiPath, retrySchedule, spokenDuration } from '../../src/http/openapi.js';
import { ERROR_CODES, ERROR_STATUS } from '../../src/core/api-error.js';
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../../src/config/index.js';
import { MAX_PER_PAGE } from '../../src/listings/listing.js';
import { WINDOW_SECONDS } from '../../src/ratelimit/limiter.js';
import { DISABLE_AFTER_MS, PREVIOUS_SECRET_MS, REPLAY_HEADER, RETRY_DELAYS_MS } from '../../src/webhooks/deliverer.js';
import { ATTEMPT_TIMEOUT_MS } from '../../src/webhooks/send.js';
import { CACHE_CONTROL } from '../../src/http/v1/routes.js';
import { ENDPOINTS } from '../../src/http/v1/endpoints/index.js';
import { ERROR_EXAMPLES } from '../../src/http/v1/examples.js';
import { MAX_QUERY_PARAMETERS } from '../../src/http/v1/query.js';
import { MAX_TARGET_LENGTH } from '../../src/http/front.js';
import { errorSchema, listingSchema, pageSchema, usageTypeSchema } from '../../src/listings/listing.js';
import { USAGE_NAMES } from '../../src/listings/taxonomy.js';
import type { TestResponse, TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

/**
 * Item 10: the OpenAPI 3.1 document (openapi.json) is generated from the schemas the server
 * serialises with, is current, is a well-formed 3.1 document that consumers' tools can use, and
 * describes what a real listening server really sends: bodies (validated with Ajv, JSON Schema
 * 2020-12), statuses and headers, 304s included. Redocly's lint is test/unit/openapi-lint.test.ts.
 */

type Json = any;
const doc: Json = buildOpenApiDocument();
const DOC_ID = 'https://listings-api.test/openapi.json';
/** The spec's error table (section 7) plus D6's one addition, by status. */
const SPEC_ERRORS: Record<string, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'origin_not_allowed',
  404: 'not_found',
  405: 'method_not_allowed',
  429: 'rate_limited',
  500: 'internal_error',
};
const GET_STATUSES = ['200', '304', '400', '401', '403', '404', '429', '500', 'default'];

/** RFC 6901 JSON pointer of a document location, from the document's root. */
const pointer = (...parts: string[]) => `#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

function resolvePointer(ref: string): Json {
  assert.ok(ref.startsWith('#/'), `only local references are used, got ${ref}`);
  let node: Json = doc;
  for (const raw of ref.slice(2).split('/')) {
    const part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    assert.ok(node !== null && typeof node === 'object' && Object.hasOwn(node, part), `$ref ${ref} does not resolve (at "${part}")`);
    node = node[part];
  }
  return node;
}

const deref = (node: Json): Json => (node !== null && typeof node === 'object' && typeof node.$ref === 'string' ? deref(resolvePointer(node.$ref)) : node);

// One Ajv (JSON Schema 2020-12, as OpenAPI 3.1) over the whole document, strict, with formats:
// every schema is reached by its JSON pointer, so `#/components/schemas/...` references resolve.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats.default(ajv);
// The OpenAPI format registry's `decimal`: a decimal number written as a string (the filters' bounds).
ajv.addFormat('decimal', /^[-+]?[0-9]+(\.[0-9]+)?$/);
for (const keyword of ['openapi', 'info', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags']) ajv.addKeyword(keyword);
// The Example Object's and the Parameter Object's `example` sit beside schemas in the document.
ajv.addKeyword('example');
// OpenAPI's `discriminator` (on the change feed's events) is a hint for code generators; the
// `oneOf` beside it is what validates.
ajv.addKeyword('discriminator');
ajv.addSchema(doc, DOC_ID);

/**
 * The serialisation schemas themselves (listing.ts), strict: exactly the 22 fields, no other. The
 * published document allows fields added later; what this server sends today must still be exactly
 * the documented fields, and these validators keep that check.
 */
const strictAjv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats.default(strictAjv);
strictAjv.addSchema([listingSchema, usageTypeSchema, pageSchema, errorSchema] as Json[]);
const strictListing = strictAjv.getSchema('Listing')!;
const strictPage = strictAjv.getSchema('ListingPage')!;
const LISTING_FIELDS = Object.keys(listingSchema.properties);

const validators = new Map<string, ReturnType<typeof ajv.compile>>();
function validatorAt(ref: string) {
  let validate = validators.get(ref);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `${DOC_ID}${ref}` });
    validators.set(ref, validate);
  }
  return validate;
}

function assertValid(ref: string, value: unknown, what: string): void {
  const validate = validatorAt(ref);
  assert.ok(validate(value), `${what} does not match ${ref}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
}

function isValid(ref: string, value: unknown): boolean {
  return validatorAt(ref)(value) as boolean;
}

/** A listing exactly as serialised: every field of listing.ts, in its order, and no other. */
function assertStrictListing(listing: Json, what: string): void {
  assert.ok(strictListing(listing), `${what}: ${strictAjv.errorsText(strictListing.errors)}`);
  assert.deepEqual(Object.keys(listing), LISTING_FIELDS, `${what}: the 22 fields in order`);
}

/** A header value as its schema's type: integers are sent as digits. */
function headerValue(schema: Json, raw: string): unknown {
  return schema.type === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
}

/** Headers whose presence the document must account for when the server sends them. */
const API_HEADER = /^(x-|access-control-|retry-after$|allow$|etag$|cache-control$|ratelimit$|ratelimit-policy$|deprecation$|sunset$|link$)/;

/**
 * Checks a real response against the document: its body matches the documented schema (or is
 * absent where none is documented, and always for HEAD), every required header is there with a
 * valid value, every optional one sent is valid, and every API header the server sent is documented.
 */
function assertDocumented(responseRef: string, res: TestResponse, what: string, head = false): void {
  const documented = resolvePointer(responseRef);
  const response = deref(documented);
  const refOfResponse = typeof documented.$ref === 'string' ? documented.$ref : responseRef;
  const schemaRef = response.content?.['application/json']?.schema === undefined ? undefined : `${refOfResponse}/content/application~1json/schema`;
  if (schemaRef === undefined || head) {
    assert.equal(res.body, '', `${what}: no body is documented, yet one was sent`);
  } else {
    assert.match(String(res.headers['content-type']), /^application\/json\b/, `${what}: Content-Type`);
    assert.notEqual(res.json, undefined, `${what}: body is not JSON: ${res.body.slice(0, 200)}`);
    assertValid(schemaRef, res.json, `${what}: body`);
  }
  const headers: Record<string, Json> = response.headers ?? {};
  const lowerDocumented = new Set(Object.keys(headers).map((h) => h.toLowerCase()));
  for (const [name, documentedHeader] of Object.entries(headers)) {
    const h = deref(documentedHeader);
    const raw = res.headers[name.toLowerCase()];
    if (raw === undefined) {
      assert.ok(!h.required, `${what}: documented required header ${name} is missing`);
      continue;
    }
    const value = headerValue(h.schema, String(raw));
    const validate = ajv.compile(h.schema);
    assert.ok(validate(value), `${what}: header ${name}: ${JSON.stringify(raw)} does not match ${JSON.stringify(h.schema)}`);
  }
  for (const name of Object.keys(res.headers)) {
    if (API_HEADER.test(name)) assert.ok(lowerDocumented.has(name), `${what}: header ${name} is sent but not documented for this response`);
  }
}

/** The documented response of an operation for a real response's status (which must be documented). */
function operationResponse(path: string, res: TestResponse): string {
  const responses = doc.paths[path]?.get?.responses;
  assert.ok(responses, `no GET ${path} operation in the document`);
  assert.ok(Object.hasOwn(responses, String(res.status)), `GET ${path} answered ${res.status}, which is not documented: ${res.body.slice(0, 200)}`);
  return pointer('paths', path, 'get', 'responses', String(res.status));
}

/**
 * A real answer to GET (or HEAD, which the document describes as GET without a body) checked
 * against the GET operation's documented response for its status.
 */
function check(path: string, method: 'get' | 'head', res: TestResponse, expectedStatus: number): void {
  const what = `${method.toUpperCase()} ${path} ${expectedStatus}`;
  assert.equal(res.status, expectedStatus, `${what}: got ${res.status} ${res.body.slice(0, 200)}`);
  assertDocumented(operationResponse(path, res), res, what, method === 'head');
  if (method === 'get' && expectedStatus === 200) {
    if (path === LIST) {
      assert.ok(strictPage(res.json), `${what}: ${strictAjv.errorsText(strictPage.errors)}`);
      res.json.items.forEach((l: Json, i: number) => assertStrictListing(l, `${what} items[${i}]`));
    } else if (path === CHANGES) {
      assert.deepEqual(Object.keys(res.json), ['items', 'next_cursor', 'has_more'], `${what}: exactly the documented fields`);
      res.json.items.forEach((e: Json, i: number) => {
        assert.deepEqual(Object.keys(e), e.type === 'listing.upserted' ? ['type', 'id', 'at', 'listing'] : ['type', 'id', 'at'], `${what} items[${i}]`);
        if (e.type === 'listing.upserted') assertStrictListing(e.listing as Json, `${what} items[${i}].listing`);
      });
    } else {
      assertStrictListing(res.json, what);
    }
  }
}

/** A real error's message is the one the document's example shows for that case. */
function assertExampleMessage(res: TestResponse, example: { value: { error: string; message: string } }): void {
  assert.deepEqual(res.json, example.value, 'the documented example is what the server says');
}

/** A GET error answer: documented for its operation and status (check), and worded as its example. Returns it. */
function checkDocumentedError(path: string, res: TestResponse, status: number, example: { value: { error: string; message: string } }): TestResponse {
  check(path, 'get', res, status);
  assertExampleMessage(res, example);
  return res;
}

const LIST = '/v1/listings';
const DETAIL = '/v1/listings/{id}';
const CHANGES = '/v1/listings/changes';
const FACETS = '/v1/listings/facets';
const DEFAULT_RESPONSE = pointer('components', 'responses', 'Error');

/** Every $ref in the document, with where it is. */
function refsOf(node: Json, at: string[] = []): Array<{ ref: string; at: string }> {
  if (Array.isArray(node)) return node.flatMap((n, i) => refsOf(n, [...at, String(i)]));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) =>
    k === '$ref' && typeof v === 'string' ? [{ ref: v, at: at.join('/') }] : refsOf(v, [...at, k]),
  );
}

/** Every string under a `description` or `summary` key, with where it is. */
function proseOf(node: Json, at: string[] = []): Array<{ text: string; at: string }> {
  if (Array.isArray(node)) return node.flatMap((n, i) => proseOf(n, [...at, String(i)]));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) =>
    (k === 'description' || k === 'summary' || k === 'name') && typeof v === 'string' ? [{ text: v, at: [...at, k].join('/') }] : proseOf(v, [...at, k]),
  );
}

/** A server's URL with its variables substituted. */
function serverUrl(server: Json, values: Record<string, string> = {}): string {
  let url: string = server.url;
  for (const [name, v] of Object.entries<Json>(server.variables ?? {})) url = url.replaceAll(`{${name}}`, values[name] ?? v.default);
  return url;
}

/** The published form of a serialisation schema: what openapi.ts's toComponent is documented to do. */
function published(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(published);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries<Json>(schema)) {
    if (k === '$id' || (k === 'additionalProperties' && v === false)) continue;
    if (k === 'format' && v === 'uuid') out.pattern = ID_PATTERN;
    else if (k === '$ref') out.$ref = `#/components/schemas/${String(v).replace(/#$/, '')}`;
    else out[k] = published(v);
  }
  return out;
}

describe('OpenAPI document (item 10)', () => {
  describe('openapi.json is generated from the server schemas', () => {
    it('the committed openapi.json is current (else run `npm run openapi`)', () => {
      const text = readFileSync(new URL('../../../openapi.json', import.meta.url), 'utf8');
      const committed = JSON.parse(text);
      assert.deepEqual(committed, doc, 'openapi.json is out of date with the server schemas: run `npm run openapi` and commit openapi.json');
      assert.equal(text, `${JSON.stringify(committed, null, 2)}\n`, 'openapi.json is not formatted as `npm run openapi` writes it: run `npm run openapi`');
    });

    it('component schemas are the serialisation schemas, published: $id dropped, references rewritten, extra fields allowed, ids as the service sends them', () => {
      assert.equal(listingSchema.$id, 'Listing');
      assert.deepEqual(doc.components.schemas.Listing, published(JSON.parse(JSON.stringify(listingSchema))));
      assert.deepEqual(doc.components.schemas.ListingPage, published(JSON.parse(JSON.stringify(pageSchema))));
      assert.deepEqual(doc.components.schemas.ErrorBody, published(JSON.parse(JSON.stringify(errorSchema))));
      // The serialiser stays strict (it emits exactly the listed fields); the contract does not forbid more.
      assert.equal(listingSchema.additionalProperties, false);
      assert.equal(pageSchema.additionalProperties, false);
      assert.equal(doc.components.schemas.Listing.additionalProperties, undefined);
      assert.equal(doc.components.schemas.ListingPage.additionalProperties, undefined);
      assert.deepEqual(doc.components.schemas.ListingPage.properties.items.items, { $ref: '#/components/schemas/Listing' });
      // Not `Error`, which would shadow the built-in type in generated clients; one named schema per code an answer names.
      assert.deepEqual(Object.keys(doc.components.schemas).sort(), [
        'BadRequestError', 'ChangePage', 'ErrorBody', 'InternalErrorError', 'Listing', 'ListingFacets', 'ListingPage', 'ListingRemoved', 'ListingUpserted',
        // The webhook messages (D24), for the document's `webhooks`.
        'ListingsChangedMessage', 'ListingsResyncMessage',
        'NotFoundError', 'OriginNotAllowedError', 'RateLimitedError', 'UnauthorizedError',
        // The taxonomy's names, one type for generated clients (Listing.usage_types references it).
        'UsageType', 'WebhookTestMessage',
      ]);
      assert.deepEqual(doc.components.schemas.Listing.properties.usage_types.items, { $ref: '#/components/schemas/UsageType' });
      assert.deepEqual(doc.components.schemas.UsageType.enum, USAGE_NAMES);
      // The feed's events: a union told apart by `type`, which code generators read.
      assert.deepEqual(doc.components.schemas.ChangePage.properties.items.items.discriminator.propertyName, 'type');
      assert.deepEqual(doc.components.schemas.ChangePage.properties.items.items.oneOf, [{ $ref: '#/components/schemas/ListingUpserted' }, { $ref: '#/components/schemas/ListingRemoved' }]);
      assert.equal(JSON.stringify(doc).includes('"$id"'), false);
      assert.equal(JSON.stringify(doc).includes('"uuid"'), false, 'no format: uuid (see ID_PATTERN)');
    });

    it('issue 42: each operation answers the status of every error code of the error table but 405 (described in `default`), and its prose states the code\'s figures', () => {
      const statuses = ERROR_CODES.filter((code) => code !== 'method_not_allowed').map((code) => String(ERROR_STATUS[code]));
      for (const path of Object.values(doc.paths) as Array<{ get: { responses: Record<string, unknown> } }>) {
        assert.deepEqual(Object.keys(path.get.responses).sort(), ['200', '304', ...statuses, 'default'].sort());
      }
      const text = JSON.stringify(doc);
      for (const code of ERROR_CODES) assert.ok(text.includes(`\`${code}\` ${ERROR_STATUS[code]}`), `the info lists ${code} with its status`);
      // Numbers in prose, from the code that enforces them.
      const webhook = doc.webhooks['listings-changed'].post;
      assert.match(webhook.description, new RegExp(`within ${ATTEMPT_TIMEOUT_MS / 1000} s`));
      assert.match(webhook.description, new RegExp(`after ${RETRY_DELAYS_MS[0]! / 1000} s, `));
      assert.ok(webhook.description.includes(`after ${retrySchedule()}, and the endpoint is disabled after ${DISABLE_AFTER_MS / 3_600_000} hours`));
      assert.ok(text.includes(`for ${PREVIOUS_SECRET_MS / 3_600_000} hours after a secret rotation`));
      assert.ok(doc.info.description.includes(`${DEFAULT_RATE_LIMIT_PER_MINUTE} requests per rolling ${WINDOW_SECONDS} seconds`));
      assert.ok(doc.info.description.includes(`Cache-Control: ${CACHE_CONTROL}`));
      assert.equal(doc.components.schemas.ListingPage.properties.per_page.maximum, MAX_PER_PAGE);
      assert.equal(doc.paths[LIST].get.responses[200].headers['X-RateLimit-Limit'].example, DEFAULT_RATE_LIMIT_PER_MINUTE);
    });

    it('spokenDuration and retrySchedule say the durations as the prose does', () => {
      assert.deepEqual([5_000, 30_000, 120_000, 3_600_000, 7_200_000, 86_400_000].map(spokenDuration), ['5 s', '30 s', '2 min', '1 h', '2 h', '24 hours']);
      assert.match(retrySchedule(), /^(\d+ (s|min|h), )+then every \d+ (s|min|h)$/);
    });

    it('documents exactly the paths of the /v1 endpoints', () => {
      const routes = ENDPOINTS.map((endpoint) => openApiPath(endpoint.url));
      assert.deepEqual(Object.keys(doc.paths).sort(), routes.sort());
    });
  });

  describe('structure (OpenAPI 3.1)', () => {
    it('is version 3.1.x with info (contact, license), servers, the four paths and bearer security', () => {
      assert.match(doc.openapi, /^3\.1\.\d+$/);
      assert.equal(typeof doc.info.title, 'string');
      assert.equal(typeof doc.info.version, 'string');
      assert.equal(typeof doc.info.contact.name, 'string');
      assert.equal(typeof doc.info.license.name, 'string');
      assert.deepEqual(Object.keys(doc.paths).sort(), [LIST, FACETS, CHANGES, DETAIL].sort());
      assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
      const scheme = doc.components.securitySchemes.bearerAuth;
      assert.deepEqual({ type: scheme.type, scheme: scheme.scheme, bearerFormat: scheme.bearerFormat }, { type: 'http', scheme: 'bearer', bearerFormat: '<cc>_live_<secret>' });
      assert.match(scheme.description, /<cc>_live_<secret>/);
    });

    it('servers: Singapore on the apex API host, every other country on api.<cc>.<domain>, by variables', () => {
      assert.equal(doc.servers.length, 2);
      const [sg, regional] = doc.servers;
      assert.equal(new URL(serverUrl(sg)).host, 'api.example.com');
      assert.deepEqual(regional.variables.country.enum, COUNTRY_CODES.filter((c) => c !== 'sg'));
      const hosts = [serverUrl(sg), ...regional.variables.country.enum.map((country: string) => serverUrl(regional, { country }))].map((u) => new URL(u).host);
      assert.deepEqual(hosts, COUNTRY_CODES.map((c) => hostForCountry(c, 'example.com')));
      for (const server of doc.servers) {
        assert.deepEqual(server.variables.scheme.enum, ['https', 'http']);
        assert.equal(server.variables.scheme.default, 'https');
        assert.equal(server.variables.domain.default, 'example.com');
        // Every variable of the URL is declared, and every declared one is used.
        assert.deepEqual([...server.url.matchAll(/\{([^}]+)\}/g)].map((m: string[]) => m[1]).sort(), Object.keys(server.variables).sort());
      }
      // Another domain with a port: the hosts a local server answers on.
      assert.equal(serverUrl(regional, { scheme: 'http', domain: 'localhost:3000', country: 'my' }), 'http://api.my.localhost:3000');

      const local = buildOpenApiDocument({ apiDomain: 'localhost', countries: ['sg', 'my'] }) as Json;
      assert.deepEqual(local.servers.map((s: Json) => serverUrl(s)), ['http://api.localhost', 'http://api.my.localhost']);
      assert.deepEqual(local.servers[1].variables.country.enum, ['my']);
      const ukOnly = buildOpenApiDocument({ apiDomain: 'listings.example.net', countries: ['uk'] }) as Json;
      assert.deepEqual(ukOnly.servers.map((s: Json) => serverUrl(s)), ['https://api.uk.listings.example.net']);
      const sgOnly = buildOpenApiDocument({ apiDomain: 'listings.example.net', countries: ['sg'] }) as Json;
      assert.deepEqual(sgOnly.servers.map((s: Json) => serverUrl(s)), ['https://api.listings.example.net']);
    });

    it('every $ref resolves, to the right kind of component', () => {
      const refs = refsOf(doc);
      assert.ok(refs.length > 20);
      for (const { ref, at } of refs) {
        assert.doesNotThrow(() => resolvePointer(ref), `${at}: ${ref}`);
        const kind = /\/(schemas|headers|parameters|responses)\//.exec(ref)?.[1];
        assert.ok(kind !== undefined && ref.startsWith(`#/components/${kind}/`), `${at}: ${ref}`);
        const parent = at.split('/');
        if (kind === 'headers') assert.equal(parent.at(-2), 'headers', `${at}: a header reference outside headers`);
        if (kind === 'parameters') assert.equal(parent.at(-2), 'parameters', `${at}: a parameter reference outside parameters`);
        if (kind === 'responses') assert.equal(parent.at(-2), 'responses', `${at}: a response reference outside responses`);
      }
    });

    it('operations: GET only (HEAD and OPTIONS described on the path), listListings and getListing, path parameters declared, responses described', () => {
      const ids: string[] = [];
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        assert.deepEqual(Object.keys(item).filter((k) => k !== 'description' && k !== 'summary'), ['get'], `${path}: no HEAD or OPTIONS operations (SDK functions nobody should call)`);
        assert.match(item.description, /`HEAD`/);
        assert.match(item.description, /`OPTIONS`/);
        assert.match(item.description, /405 `method_not_allowed`/);
        const op = item.get;
        ids.push(op.operationId);
        const params = (op.parameters ?? []).map(deref);
        const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        for (const name of templated) {
          assert.ok(params.some((p: Json) => p.in === 'path' && p.name === name && p.required === true), `${path}: path parameter ${name}`);
        }
        assert.deepEqual(params.filter((p: Json) => p.in === 'path').map((p: Json) => p.name), templated, `${path}: no undeclared path parameters`);
        for (const p of params) {
          assert.ok(['query', 'path', 'header'].includes(p.in) && typeof p.name === 'string' && p.schema, `${path}: parameter ${JSON.stringify(p)}`);
          assert.equal(typeof p.description, 'string', `${path}: parameter ${p.name} is described`);
          if (p.required) {
            assert.notEqual(p.example, undefined, `${path}: parameter ${p.name} has an example`);
          } else {
            // Issue 40 item 11: an optional parameter's example is documented, not pre-set in "try it" (Scalar's x-disabled).
            assert.equal(p.example, undefined, `${path}: optional parameter ${p.name} has no bare example, which "try it" would send`);
            assert.deepEqual(Object.keys(p.examples ?? {}), ['default'], `${path}: parameter ${p.name} has its example`);
            assert.equal(p.examples.default['x-disabled'], true, `${path}: parameter ${p.name}'s example is not sent until chosen`);
          }
        }
        assert.ok(params.some((p: Json) => p.in === 'header' && p.name === 'If-None-Match' && p.required === false), `${path}: If-None-Match (D21)`);
        assert.deepEqual(Object.keys(op.responses), GET_STATUSES, `${path}: statuses`);
        for (const [status, r] of Object.entries<Json>(op.responses)) {
          assert.match(status, /^([1-5]\d\d|default)$/);
          assert.equal(typeof deref(r).description, 'string');
        }
      }
      assert.deepEqual(ids, ['listListings', 'listListingFacets', 'listChanges', 'getListing']);
    });

    it('says each rule in words: no description cites a decision number, the specification or the operator contract', () => {
      const cites = proseOf(doc).filter(({ text }) => /\bD\d{1,2}\b|\bspec(ification)?\b\s*\d|\bOPERATIONS\b|\bDECISIONS\b|shared\//.test(text));
      assert.deepEqual(cites.map((c) => `${c.at}: ${c.text.slice(0, 80)}`), []);
      assert.ok(proseOf(doc).length > 60, 'the walk found the descriptions');
    });

    it('every schema compiles as strict JSON Schema 2020-12', () => {
      const refs = [
        ...Object.keys(doc.components.schemas).map((n) => pointer('components', 'schemas', n)),
        ...Object.keys(doc.components.parameters).map((n) => pointer('components', 'parameters', n, 'schema')),
        ...Object.keys(doc.components.headers).map((n) => pointer('components', 'headers', n, 'schema')),
      ];
      const responseAt = (at: string, r: Json) => {
        if (r.$ref) return;
        if (r.content) refs.push(`${at}/content/application~1json/schema`);
        for (const [name, h] of Object.entries<Json>(r.headers ?? {})) if (!h.$ref) refs.push(`${at}/headers/${name}/schema`);
      };
      for (const [name, r] of Object.entries<Json>(doc.components.responses)) responseAt(pointer('components', 'responses', name), r);
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        for (const [status, r] of Object.entries<Json>(item.get.responses)) responseAt(pointer('paths', path, 'get', 'responses', status), r);
      }
      for (const ref of refs) assert.doesNotThrow(() => validatorAt(ref), ref);
      // OpenAPI 3.0's `nullable` is not 3.1 (Ajv would accept it): null is a type, as in listing.ts.
      assert.equal(JSON.stringify(doc).includes('"nullable"'), false);
    });

    it('D7 parameters: integers from 1; per_page above 100 documented as clamped, not rejected', () => {
      const { page, per_page: perPage } = doc.components.parameters;
      assert.deepEqual(page.schema, { type: 'integer', minimum: 1, maximum: 2147483647, default: 1 });
      assert.deepEqual(perPage.schema, { type: 'integer', minimum: 1, maximum: 2147483647, default: 20 });
      assert.match(perPage.description, /clamped to 100/);
      assert.equal(isValid(pointer('components', 'parameters', 'per_page', 'schema'), 500), true, '500 is accepted (and clamped)');
      assert.equal(isValid(pointer('components', 'parameters', 'page', 'schema'), 0), false);
      assert.equal(doc.components.schemas.ListingPage.properties.per_page.maximum, 100, 'the envelope reports the clamped size');
    });

    it('error responses use the spec error codes exactly, one per status; the default response covers 405', () => {
      const used = new Set<string>();
      for (const item of Object.values<Json>(doc.paths)) {
        for (const [status, documented] of Object.entries<Json>(item.get.responses)) {
          const r = deref(documented);
          if (status === 'default') {
            assert.deepEqual(r.content['application/json'].schema, { $ref: '#/components/schemas/ErrorBody' });
            assert.match(r.description, /405 `method_not_allowed`/);
            for (const example of Object.values<Json>(r.content['application/json'].examples)) used.add(example.value.error);
            continue;
          }
          if (Number(status) < 400) continue;
          const named = r.content['application/json'].schema.$ref as string;
          const schemaOfCode = doc.components.schemas[named.replace('#/components/schemas/', '')].properties.error;
          assert.deepEqual(schemaOfCode, { type: 'string', const: SPEC_ERRORS[status], examples: [SPEC_ERRORS[status]] }, `status ${status}`);
          used.add(String(schemaOfCode.const));
        }
      }
      assert.deepEqual([...used].sort(), Object.values(SPEC_ERRORS).sort());
      assert.deepEqual([...errorSchema.properties.error.enum].sort(), Object.values(SPEC_ERRORS).sort());
    });

    it('documents every response of the GET operations: D15 and D29 headers, 429 with Retry-After, D21 ETag and Cache-Control on 200 and 304', () => {
      for (const path of [LIST, DETAIL]) {
        const responses = doc.paths[path].get.responses;
        const headersOf = (status: string) => deref(responses[status]).headers;
        assert.equal(headersOf('429')['Retry-After'].required, true);
        for (const status of ['200', '304', '403', '429']) {
          for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit']) {
            assert.equal(headersOf(status)[h]?.required, true, `${path} ${status} ${h} (D15, D29)`);
          }
        }
        for (const status of ['400', '500', 'default']) assert.equal(headersOf(status).RateLimit?.required, false, `${path} ${status}: RateLimit when past the key check (D29)`);
        assert.match(headersOf('429').RateLimit.schema.pattern, /r=0;t=\[1-9\]/, 'a 429 has r=0 and t >= 1 (D29)');
        // D29: nothing in v1 is deprecated today: the committed document marks no operation.
        assert.equal(doc.paths[path].get.deprecated, undefined, `${path} is not deprecated`);
        for (const status of GET_STATUSES) assert.equal(headersOf(status).Deprecation, undefined, `${path} ${status}: no Deprecation header documented`);
        for (const status of ['200', '304']) {
          for (const h of ['ETag', 'Cache-Control']) assert.equal(deref(headersOf(status)[h])?.required, true, `${path} ${status} ${h} (D21)`);
        }
        assert.equal(deref(responses['304']).content, undefined, '304 has no body');
        for (const status of GET_STATUSES) assert.ok(headersOf(status)['X-Request-Id'], `${path} ${status}: D19`);
      }
      assert.equal(deref(doc.paths[LIST].get.responses[401]).headers['X-RateLimit-Limit'], undefined, '401 is before the limiter (D5)');
      assert.equal(deref(doc.paths[LIST].get.responses[401]).headers.RateLimit, undefined, 'nor the D29 fields');
      assert.equal(doc.components.headers['Cache-Control'].schema.const, CACHE_CONTROL);
      assert.equal(doc.components.headers['Access-Control-Expose-Headers'].schema.const, EXPOSED_HEADERS);
      assert.match(EXPOSED_HEADERS, /(^|, )ETag(,|$)/, 'ETag is exposed to browsers (D21)');
    });

    it('every response with a body has examples, and every example validates against its schema', () => {
      const responses: Array<[string, Json]> = Object.entries<Json>(doc.components.responses).map(([n, r]) => [pointer('components', 'responses', n), r]);
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        for (const [status, r] of Object.entries<Json>(item.get.responses)) responses.push([pointer('paths', path, 'get', 'responses', status), r]);
      }
      let count = 0;
      for (const [at, r] of responses) {
        if (r.$ref || r.content === undefined) continue;
        const media = r.content['application/json'];
        const examples = Object.entries<Json>(media.examples ?? {});
        assert.ok(examples.length > 0, `${at}: no example`);
        for (const [name, example] of examples) {
          assert.equal(typeof example.summary, 'string', `${at} ${name}: summary`);
          assertValid(`${at}/content/application~1json/schema`, example.value, `${at} example ${name}`);
          count++;
        }
      }
      assert.ok(count >= 15);
      // The listing examples are exactly what the serialiser would emit: the 22 fields in order.
      const listed = doc.paths[LIST].get.responses['200'].content['application/json'].examples;
      for (const example of Object.values<Json>(listed)) {
        assert.ok(strictPage(example.value), strictAjv.errorsText(strictPage.errors));
        for (const l of example.value.items) assertStrictListing(l, 'list example');
      }
      for (const example of Object.values<Json>(doc.paths[DETAIL].get.responses['200'].content['application/json'].examples)) assertStrictListing(example.value, 'detail example');
      // Parameter and header examples match their schemas too.
      for (const [name, p] of Object.entries<Json>(doc.components.parameters)) {
        assertValid(pointer('components', 'parameters', name, 'schema'), p.example ?? p.examples.default.value, `parameter ${name} example`);
      }
      for (const [name, h] of Object.entries<Json>(doc.components.headers)) assertValid(pointer('components', 'headers', name, 'schema'), h.example, `header ${name} example`);
    });

    it('webhooks (D24): each message type is a POST with the three signature headers (and the optional replay header, issue 43), and its example validates', () => {
      assert.deepEqual(Object.keys(doc.webhooks).sort(), ['listings-changed', 'listings-resync', 'webhook-test']);
      for (const [name, item] of Object.entries<Json>(doc.webhooks)) {
        const { parameters, requestBody } = item.post;
        assert.deepEqual(parameters.map((p: Json) => [p.name, p.in, p.required]), [['webhook-id', 'header', true], ['webhook-timestamp', 'header', true], ['webhook-signature', 'header', true], [REPLAY_HEADER, 'header', false]], name);
        const media = requestBody.content['application/json'];
        const validate = validatorAt(media.schema.$ref);
        for (const example of Object.values<Json>(media.examples)) assert.ok(validate(example.value), `${name}: ${JSON.stringify(validate.errors)}`);
        assert.equal(validate({ ...Object.values<Json>(media.examples)[0].value, type: 'something.else' }), false, `${name}: not vacuous`);
      }
    });

    it('the validators are not vacuous: a missing field or a wrong code fail; an added field passes the published schema only', () => {
      const listing = {
        id: '9b2f3c1e-5d4a-4b6c-8e7f-0a1b2c3d4e5f', building_id: '11111111-1111-4111-8111-111111111111', org_id: null,
        title: null, size_sqft: null, usage_types: ['Office'], price: null, price_basis: null, currency: 'SGD', is_takeover: false,
        is_featured: false, status: 'active', expiry_date: null, available_from: null, min_lease_tenure: null,
        view_count: 0, inquiry_count: 0, building_name: null, street_address: null, location: null, images: [], cover_image_index: 0,
        url: 'https://www.example.com/l/1', created_at: '2026-01-01T00:00:00.000Z',
      };
      const listingRef = pointer('components', 'schemas', 'Listing');
      assert.equal(isValid(listingRef, listing), true);
      // v1 may add fields: a validating client must accept them (published); today's server sends none (strict).
      assert.equal(isValid(listingRef, { ...listing, floor_level: '2' }), true, 'the published schema allows fields added later');
      assert.equal(strictListing({ ...listing, owner_account_id: 'x' }), false, 'the serialisation schema stays strict');
      const pageRef = pointer('components', 'schemas', 'ListingPage');
      const page = { items: [listing], page: 1, per_page: 20, total: 1, pages: 1 };
      assert.equal(isValid(pageRef, { ...page, next_page: null }), true);
      assert.equal(strictPage({ ...page, next_page: null }), false);
      const { url: _url, ...missing } = listing;
      assert.equal(isValid(listingRef, missing), false);
      assert.equal(isValid(listingRef, { ...listing, created_at: 'yesterday' }), false, 'date-time format is checked');
      assert.equal(isValid(listingRef, { ...listing, id: 'not-a-uuid' }), false, 'the id pattern is checked');
      // Ids are any 8-4-4-4-12 hex text, as the import accepts them, whatever the version and variant digits.
      assert.equal(isValid(listingRef, { ...listing, id: '11111111-1111-1111-1111-111111111111' }), true, 'version and variant digits are not checked');
      assert.equal(isValid(listingRef, { ...listing, id: '9B2F3C1E-5D4A-4B6C-8E7F-0A1B2C3D4E5F' }), false, 'ids are sent lowercase');
      assert.equal(isValid(pointer('components', 'parameters', 'id', 'schema'), '9B2F3C1E-5D4A-4B6C-8E7F-0A1B2C3D4E5F'), true, 'the path accepts either case');
      assert.equal(isValid(listingRef, { ...listing, status: 'leased' }), false);
      assert.equal(isValid(listingRef, { ...listing, price_basis: 'per_month' }), true);
      assert.equal(isValid(listingRef, { ...listing, price_basis: 'psf' }), false, 'the price bases are an enum (D25)');
      assert.equal(isValid(listingRef, { ...listing, usage_types: ['Offices'] }), false, 'usage types are the taxonomy\'s names');
      const notFoundRef = `${pointer('paths', DETAIL, 'get', 'responses', '404')}/content/application~1json/schema`;
      assert.equal(isValid(notFoundRef, { error: 'not_found', message: 'x' }), true);
      assert.equal(isValid(notFoundRef, { error: 'unauthorized', message: 'x' }), false);
      assert.equal(isValid(notFoundRef, { error: 'not_found' }), false);
    });
  });

  describe('real responses of a listening server match the document', () => {
    let server: TestServer;
    let orgKey: string;
    let orgId: string;
    let landlordKey: string;
    const origin = 'https://www.tenant-site.example';
    const full = 'a0000000-0000-4000-8000-000000000001';
    const sparse = 'a0000000-0000-4000-8000-000000000002';
    const landlordListing = 'a0000000-0000-4000-8000-000000000003';
    // Not an RFC 9562 UUID (version 0, variant 0), yet accepted by the import: the document must accept it.
    const oddId = '0b000000-0000-0000-0000-000000000004';
    const seen: Json[] = [];

    /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
    async function world(t: TestContext): Promise<void> {
      // No dashboard: no test here asks it anything, and its routes' schemas were two thirds of a world's start.
      server = await freshServer(t, { DASHBOARD_PORT: 'off' });
      orgId = await server.createAccount('organisation');
      orgKey = (await server.createKey(orgId)).key;
      const landlordId = await server.createAccount('individual');
      landlordKey = (await server.createKey(landlordId)).key;
      await server.addListings(orgId, [
        {
          id: full,
          usage_types: ['F&B', 'Cafe'],
          price_basis: 'per_sqft_per_month',
          is_takeover: true,
          is_featured: true,
          expiry_date: '2027-06-30T00:00:00Z',
          available_from: '2026-12-01T00:00:00Z',
          min_lease_tenure: '12 months',
          view_count: 321,
          inquiry_count: 7,
          building_name: 'Harbour Point',
          street_address: '1 Harbour Road',
          location: { lat: -33.8617, lng: 151.2017 },
          images: ['https://cdn.example.com/a.jpg', 'https://cdn.example.com/b.jpg'],
          cover_image_index: 1,
        },
        {
          id: sparse, title: null, size_sqft: null, price: null, building_name: null, street_address: null,
          expiry_date: null, available_from: null, min_lease_tenure: null, images: [],
        },
      ]);
      await server.addListings(landlordId, [
        { id: landlordListing, usage_types: ['Clinic'] },
        { id: oddId.toUpperCase(), building_id: '0B000000-0000-0000-0000-0000000000B1', usage_types: ['Retail', 'Kiosk'] },
      ]);
      await server.allowOrigin(orgId, origin);
    }

    it('200 list and detail bodies of every shape (nulls, images, individual landlord, ids of any version)', async (t) => {
      await world(t);
      for (const [key, ids] of [[orgKey, [full, sparse]], [landlordKey, [landlordListing, oddId]]] as const) {
        const list = await server.get('/v1/listings', { key });
        check(LIST, 'get', list, 200);
        assert.deepEqual(list.json.items.map((l: Json) => l.id).sort(), [...ids].sort());
        seen.push(...list.json.items);
        for (const id of ids) {
          const detail = await server.get(`/v1/listings/${id}`, { key });
          check(DETAIL, 'get', detail, 200);
          seen.push(detail.json);
        }
      }
      // Every nullable field was seen both null and set; images both empty and not; org_id null (D1).
      const nullable = Object.entries<Json>(listingSchema.properties).filter(([, s]) => Array.isArray(s.type) && s.type.includes('null')).map(([n]) => n);
      assert.ok(nullable.length >= 9);
      for (const field of nullable) {
        assert.ok(seen.some((l) => l[field] === null) && seen.some((l) => l[field] !== null), `${field} seen both null and set`);
      }
      assert.ok(seen.some((l) => l.images.length === 2 && l.cover_image_index === 1) && seen.some((l) => l.images.length === 0));
      assert.ok(seen.some((l) => l.is_takeover === true && l.is_featured === true));
      assert.ok(seen.some((l) => l.id === oddId && l.building_id === '0b000000-0000-0000-0000-0000000000b1'), 'imported in capitals, sent lowercase');
      // The path accepts the id in capitals too, as documented.
      check(DETAIL, 'get', await server.get(`/v1/listings/${oddId.toUpperCase()}`, { key: landlordKey }), 200);
    });

    it('200 pages: clamped per_page, paging, a page beyond the last; HEAD is GET without a body', async (t) => {
      await world(t);
      const clamped = await server.get('/v1/listings?per_page=500', { key: orgKey });
      check(LIST, 'get', clamped, 200);
      assert.equal(clamped.json.per_page, 100);
      const second = await server.get('/v1/listings?page=2&per_page=1', { key: orgKey });
      check(LIST, 'get', second, 200);
      assert.deepEqual([second.json.page, second.json.pages, second.json.items.length], [2, 2, 1]);
      const beyond = await server.get('/v1/listings?page=9', { key: orgKey });
      check(LIST, 'get', beyond, 200);
      assert.deepEqual(beyond.json.items, []);
      const head = await server.get('/v1/listings', { key: orgKey, method: 'HEAD' });
      check(LIST, 'head', head, 200);
      const get = await server.get('/v1/listings', { key: orgKey });
      assert.equal(head.headers.etag, get.headers.etag, 'HEAD carries the ETag of the body GET sends');
      check(DETAIL, 'head', await server.get(`/v1/listings/${full}`, { key: orgKey, method: 'HEAD' }), 200);
      check(DETAIL, 'head', await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ff', { key: orgKey, method: 'HEAD' }), 404);
      check(LIST, 'head', await server.get('/v1/listings', { method: 'HEAD' }), 401);
    });

    it('filtered and sorted pages (D23), and their 400s with the documented examples\' messages', async (t) => {
      await world(t);
      for (const query of ['usage_type=Office,F%26B', 'min_price=0&max_price=1000', 'featured=true', 'takeover=false&sort=-price', 'sort=size_sqft&per_page=1&page=2']) {
        check(LIST, 'get', await server.get(`/v1/listings?${query}`, { key: orgKey }), 200);
      }
      checkDocumentedError(LIST, await server.get('/v1/listings?usage_type=Offices', { key: orgKey }), 400, ERROR_EXAMPLES.usageTypeUnknown);
      checkDocumentedError(LIST, await server.get('/v1/listings?min_price=9&max_price=8.5', { key: orgKey }), 400, ERROR_EXAMPLES.minAboveMax);
      checkDocumentedError(LIST, await server.get('/v1/listings?sort=rank', { key: orgKey }), 400, ERROR_EXAMPLES.sortUnknown);
      const tooMany = `${'utm=1&'.repeat(MAX_QUERY_PARAMETERS)}per_page=1`;
      for (const path of [LIST, DETAIL, CHANGES]) {
        const url = path.replace('{id}', 'a0000000-0000-4000-8000-0000000000ff');
        checkDocumentedError(path, await server.get(`${url}?${tooMany}`, { key: orgKey }), 400, ERROR_EXAMPLES.tooManyParameters);
      }
    });

    it('the change feed (D22): both kinds of event, a 304 of a caught-up poll, and its 400s with the documented messages', async (t) => {
      await world(t);
      const first = await server.get('/v1/listings/changes?limit=1000', { key: orgKey });
      check(CHANGES, 'get', first, 200);
      assert.ok(first.json.items.some((e: Json) => e.type === 'listing.upserted'));
      const cursor = first.json.next_cursor as string;
      const idle = await server.get(`/v1/listings/changes?cursor=${cursor}`, { key: orgKey });
      check(CHANGES, 'get', idle, 200);
      check(CHANGES, 'get', await server.get(`/v1/listings/changes?cursor=${cursor}`, { key: orgKey, headers: { 'if-none-match': idle.headers.etag as string } }), 304);
      await server.addListings(orgId, [{ id: full, status: 'leased' }]);
      const removal = await server.get(`/v1/listings/changes?cursor=${cursor}`, { key: orgKey });
      check(CHANGES, 'get', removal, 200);
      assert.deepEqual(removal.json.items.map((e: Json) => [e.type, e.id]), [['listing.removed', full]]);
      await server.addListings(orgId, [{ id: full, status: 'active' }]);
      check(CHANGES, 'head', await server.get('/v1/listings/changes', { key: orgKey, method: 'HEAD' }), 200);
      checkDocumentedError(CHANGES, await server.get('/v1/listings/changes?limit=0', { key: orgKey }), 400, ERROR_EXAMPLES.limitZero);
      checkDocumentedError(CHANGES, await server.get(`/v1/listings/changes?cursor=${cursor.slice(2)}`, { key: orgKey }), 400, ERROR_EXAMPLES.cursorRefused);
      check(CHANGES, 'get', await server.get('/v1/listings/changes'), 401);
    });

    it('304 Not Modified (D21): strong, weak, listed and * tags, on GET and HEAD, for browsers too, free against the limit', async (t) => {
      await world(t);
      const accountId = await server.createAccount('organisation');
      const limited = await server.createKey(accountId);
      assert.equal(await server.service.store.keys.setRateLimit(limited.id, 3), true);
      await server.addListings(accountId, [{ id: 'a0000000-0000-4000-8000-0000000000c1' }]);
      await server.allowOrigin(accountId, origin);

      const list = await server.get('/v1/listings', { key: limited.key });
      check(LIST, 'get', list, 200);
      const detail = await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000c1', { key: limited.key, headers: { origin } });
      check(DETAIL, 'get', detail, 200);
      assert.equal(detail.headers['cache-control'], CACHE_CONTROL);
      const remaining = detail.headers['x-ratelimit-remaining'];
      assert.equal(remaining, '1');

      const tag = String(list.headers.etag);
      for (const inm of [tag, `W/${tag}`, `"other", ${tag}`, '*']) {
        const res = await server.get('/v1/listings', { key: limited.key, headers: { 'if-none-match': inm } });
        check(LIST, 'get', res, 304);
        assert.equal(res.headers.etag, tag, `${inm}: the same ETag`);
        assert.equal(res.headers['x-ratelimit-remaining'], remaining, `${inm}: a 304 is free`);
      }
      const browser = await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000c1', {
        key: limited.key,
        headers: { origin, 'if-none-match': String(detail.headers.etag) },
      });
      check(DETAIL, 'get', browser, 304);
      assert.equal(browser.headers['access-control-allow-origin'], origin);
      assert.match(String(browser.headers['access-control-expose-headers']), /ETag/);
      check(DETAIL, 'head', await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000c1', { key: limited.key, method: 'HEAD', headers: { 'if-none-match': String(detail.headers.etag) } }), 304);

      // A tag that does not match is answered and counted as usual; with the last request taken,
      // a matching tag is still answered 304, for free.
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key, headers: { 'if-none-match': '"stale"' } }), 200);
      const exhausted = await server.get('/v1/listings', { key: limited.key, headers: { 'if-none-match': tag } });
      check(LIST, 'get', exhausted, 304);
      assert.equal(exhausted.headers['x-ratelimit-remaining'], '0');
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 429);
      // A conditional request that ends in an error is that error (D21).
      check(DETAIL, 'get', await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000c2', { key: orgKey, headers: { 'if-none-match': '*' } }), 404);
      check(LIST, 'get', await server.get('/v1/listings?page=0', { key: orgKey, headers: { 'if-none-match': '*' } }), 400);
      check(LIST, 'get', await server.get('/v1/listings', { headers: { 'if-none-match': '*' } }), 401);
    });

    it('a conditional request refused with 429 carries no ETag or Cache-Control of the body it did not send', async (t) => {
      await world(t);
      const accountId = await server.createAccount('organisation');
      const limited = await server.createKey(accountId);
      await server.service.store.keys.setRateLimit(limited.id, 1);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 200);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key, headers: { 'if-none-match': '"stale"' } }), 429);
    });

    it('browser calls: a registered origin gets 200 with the D18 headers, another gets 403', async (t) => {
      await world(t);
      const ok = await server.get('/v1/listings', { key: orgKey, headers: { origin } });
      check(LIST, 'get', ok, 200);
      assert.equal(ok.headers['access-control-allow-origin'], origin);
      assert.ok(ok.headers['access-control-expose-headers']);
      const refused = await server.get(`/v1/listings/${full}`, { key: orgKey, headers: { origin: 'https://www.elsewhere.example' } });
      check(DETAIL, 'get', refused, 403);
      assert.equal(refused.headers['access-control-allow-origin'], 'https://www.elsewhere.example');
      assertExampleMessage(refused, ERROR_EXAMPLES.originNotAllowed);
      check(LIST, 'get', await server.get('/v1/listings', { key: orgKey, headers: { origin: 'null' } }), 403);
    });

    it('400, 401 and 404 bodies and headers, with the documented examples\' messages', async (t) => {
      await world(t);
      const notANumber = checkDocumentedError(LIST, await server.get('/v1/listings?page=abc', { key: orgKey }), 400, ERROR_EXAMPLES.pageNotANumber);
      const zero = checkDocumentedError(LIST, await server.get('/v1/listings?per_page=0', { key: orgKey }), 400, ERROR_EXAMPLES.perPageZero);
      const twice = checkDocumentedError(LIST, await server.get('/v1/listings?per_page=1&per_page=2', { key: orgKey }), 400, ERROR_EXAMPLES.perPageTwice);
      // A parameter 400 comes after the key and limit checks: it carries the rate-limit headers (D15).
      for (const res of [notANumber, zero, twice]) assert.ok(res.headers['x-ratelimit-limit'] && res.headers['x-ratelimit-remaining'] && res.headers['x-ratelimit-reset']);
      check(LIST, 'get', await server.get('/v1/listings?page=1&page=2', { key: orgKey }), 400);
      check(DETAIL, 'get', await server.get('/v1/listings/%ZZ', { key: orgKey }), 404);

      checkDocumentedError(LIST, await server.get('/v1/listings'), 401, ERROR_EXAMPLES.missingKey);
      checkDocumentedError(LIST, await server.get('/v1/listings', { key: 'sg_live_nope' }), 401, ERROR_EXAMPLES.malformedKey);
      const revokedKey = await server.createKey(orgId);
      await server.service.store.keys.revoke(revokedKey.id, new Date(server.clock.now()).toISOString());
      checkDocumentedError(LIST, await server.get('/v1/listings', { key: revokedKey.key }), 401, ERROR_EXAMPLES.unknownKey);
      checkDocumentedError(DETAIL, await server.get(`/v1/listings/${full}`, { key: orgKey, host: 'api.my.localhost' }), 401, ERROR_EXAMPLES.otherCountry);

      check(DETAIL, 'get', await server.get(`/v1/listings/${full}`, { key: orgKey, host: 'api.nowhere.localhost' }), 404);
      check(LIST, 'get', await server.get('/v1/listings', { key: orgKey, host: 'api.nowhere.localhost' }), 404);
      checkDocumentedError(DETAIL, await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ff', { key: orgKey }), 404, ERROR_EXAMPLES.noListing);
      check(DETAIL, 'get', await server.get('/v1/listings/not-a-uuid', { key: orgKey }), 404);
      check(DETAIL, 'get', await server.get(`/v1/listings/${landlordListing}`, { key: orgKey }), 404);
    });

    it('405 for other methods, 431 for oversized headers and 414 for an overlong URL match the operations\' default response', async (t) => {
      await world(t);
      for (const [method, path] of [['POST', '/v1/listings'], ['DELETE', `/v1/listings/${full}`], ['PUT', '/v1/listings/x']]) {
        const res = await server.get(path!, { key: orgKey, method, headers: { origin } });
        assert.equal(res.status, 405, `${method} ${path}`);
        assertDocumented(DEFAULT_RESPONSE, res, `${method} ${path} 405`);
        assert.equal(res.headers.allow, ALLOWED_METHODS);
        assert.equal(res.json.error, 'method_not_allowed');
      }
      assertExampleMessage(await server.get('/v1/listings', { key: orgKey, method: 'POST' }), ERROR_EXAMPLES.methodNotAllowed);
      for (const path of [LIST, DETAIL]) assert.deepEqual(doc.paths[path].get.responses.default, { $ref: '#/components/responses/Error' });

      const tooLarge = await server.get('/v1/listings', { key: orgKey, headers: { 'x-padding': 'x'.repeat(64 * 1024) } });
      assert.equal(tooLarge.status, 431);
      assertDocumented(DEFAULT_RESPONSE, tooLarge, 'oversized headers 431');
      assertExampleMessage(tooLarge, ERROR_EXAMPLES.headersTooLarge);

      const tooLong = await server.get(`/v1/listings?x=${'x'.repeat(MAX_TARGET_LENGTH)}`, { key: orgKey });
      assert.equal(tooLong.status, 414);
      assertDocumented(DEFAULT_RESPONSE, tooLong, 'request target over the length limit 414');
      assertExampleMessage(tooLong, ERROR_EXAMPLES.targetTooLong);
    });

    it('OPTIONS preflight: 204 with the D16 headers the path description names, for any origin and without a key; 404 on an unknown host', async (t) => {
      await world(t);
      const pre = await server.get('/v1/listings', {
        method: 'OPTIONS',
        headers: { origin: 'https://anyone.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, if-none-match, accept' },
      });
      assert.equal(pre.status, 204);
      assert.equal(pre.body, '');
      assert.equal(pre.headers['access-control-allow-origin'], 'https://anyone.example');
      assert.equal(pre.headers['access-control-allow-methods'], ALLOWED_METHODS);
      assert.equal(pre.headers['access-control-allow-headers'], 'Authorization, if-none-match, accept');
      assert.equal(pre.headers['access-control-max-age'], String(PREFLIGHT_MAX_AGE_SECONDS));
      assert.equal(pre.headers['access-control-expose-headers'], EXPOSED_HEADERS);
      assert.equal(pre.headers.allow, ALLOWED_METHODS);
      assert.equal(pre.headers['access-control-allow-credentials'], undefined);
      assert.ok(pre.headers['x-request-id']);
      assert.equal(pre.headers['x-ratelimit-limit'], undefined, 'a preflight is not counted');
      for (const path of [LIST, DETAIL]) {
        const description: string = doc.paths[path].description;
        assert.ok(description.includes(`Access-Control-Allow-Methods: ${ALLOWED_METHODS}`) && description.includes(`Access-Control-Max-Age: ${PREFLIGHT_MAX_AGE_SECONDS}`));
      }
      const detail = await server.get(`/v1/listings/${full}`, { method: 'OPTIONS' });
      assert.equal(detail.status, 204);
      assert.equal(detail.headers['access-control-allow-origin'], undefined, 'no Origin, no CORS headers');
      const unknownHost = await server.get(`/v1/listings/${full}`, { method: 'OPTIONS', host: 'api.nowhere.localhost' });
      assert.equal(unknownHost.status, 404);
      assertValid(pointer('components', 'schemas', 'NotFoundError'), unknownHost.json, 'preflight 404');
      assert.equal(unknownHost.json.error, 'not_found');
    });

    it('429 with Retry-After and Remaining 0, after lowering the key limit', async (t) => {
      await world(t);
      const accountId = await server.createAccount('organisation');
      const limited = await server.createKey(accountId);
      assert.equal(await server.service.store.keys.setRateLimit(limited.id, 2), true);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 200);
      check(LIST, 'get', await server.get('/v1/listings?page=x', { key: limited.key }), 400);
      const refused = await server.get(`/v1/listings/${full}`, { key: limited.key, headers: { origin } });
      check(DETAIL, 'get', refused, 429);
      assert.equal(refused.headers['x-ratelimit-remaining'], '0');
      assert.equal(refused.headers['x-ratelimit-limit'], '2');
      assert.match(refused.json.message, /^Rate limit of 2 requests per minute exceeded; retry after \d+ s\.$/);
      assert.match(ERROR_EXAMPLES.rateLimited.value.message, /^Rate limit of 60 requests per minute exceeded; retry after \d+ s\.$/);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 429);
      server.clock.advance(60_000);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 200);
    });

    it('500 internal_error when the store fails under a request', async (t) => {
      await world(t);
      const db = server.service.store.db;
      // A tenant this process has not read yet, so that its listings must come from the database.
      const fresh = await server.createAccount();
      const freshKey = (await server.createKey(fresh)).key;
      await sql`ALTER TABLE listings RENAME TO listings_moved_away`.execute(db);
      try {
        const res = await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ee', { key: freshKey });
        check(DETAIL, 'get', res, 500);
        assert.match(res.json.message, /^Something went wrong on our side; retry with exponential backoff\. Request id: req_[\w-]+\.$/);
        const list = await server.get('/v1/listings?per_page=7', { key: freshKey });
        check(LIST, 'get', list, 500);
      } finally {
        await sql`ALTER TABLE listings_moved_away RENAME TO listings`.execute(db);
      }
    });

    it('GET /openapi.json serves the document with this deployment\'s hosts, on any host, without a key', async (t) => {
      await world(t);
      for (const host of ['api.localhost', 'docs.anything.example']) {
        const res = await server.get('/openapi.json', { host });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.ok(res.headers['x-request-id']);
        assert.deepEqual(res.json, buildOpenApiDocument({ apiDomain: server.config.apiDomain, countries: server.config.countries }));
        assert.equal((res.json as Json).servers[0].variables.domain.default, 'localhost');
        assert.equal(serverUrl((res.json as Json).servers[0]), 'http://api.localhost', 'a local server speaks http');
      }
    });

    it('GET /openapi.json asked on a port names that port in its servers, so a generated client calls where the document came from', async (t) => {
      await world(t);
      const res = await server.get('/openapi.json', { host: 'api.localhost:3000' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, buildOpenApiDocument({ apiDomain: 'localhost:3000', countries: server.config.countries }));
      assert.equal(serverUrl((res.json as Json).servers[0]), 'http://api.localhost:3000');
    });

    it('the change feed\'s answer links its next_cursor to the next call; the cursor example does not look like a working cursor', () => {
      const ok = deref(doc.paths[CHANGES].get.responses['200']);
      assert.deepEqual(ok.links.next.parameters, { cursor: '$response.body#/next_cursor' });
      assert.equal(ok.links.next.operationId, doc.paths[CHANGES].get.operationId);
      assert.doesNotMatch(String(doc.components.parameters.cursor.example), /^[A-Za-z0-9_-]{20,}(\.[A-Za-z0-9_-]+)?$/);
      for (const name of ['featured', 'takeover']) assert.deepEqual(doc.components.parameters[name].schema, { type: 'boolean' }, name);
    });
  });
});
