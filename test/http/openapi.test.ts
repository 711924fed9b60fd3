import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { sql } from 'kysely';
import { COUNTRY_CODES, hostForCountry } from '../../src/core/countries.js';
import { buildOpenApiDocument } from '../../src/http/openapi.js';
import { errorSchema, listingSchema } from '../../src/listings/listing.js';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.js';

/**
 * Item 10: the OpenAPI 3.1 document (openapi.json) is generated from the schemas the server
 * serialises with, is current, is a well-formed 3.1 document, and describes what a real listening
 * server really sends: bodies (validated with Ajv, JSON Schema 2020-12), statuses and headers.
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
for (const keyword of ['openapi', 'info', 'servers', 'paths', 'components', 'security', 'tags']) ajv.addKeyword(keyword);
ajv.addSchema(doc, DOC_ID);

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

/** A header value as its schema's type: integers are sent as digits. */
function headerValue(schema: Json, raw: string): unknown {
  return schema.type === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
}

/** Headers whose presence the document must account for when the server sends them. */
const API_HEADER = /^(x-|access-control-|retry-after$|allow$)/;

/**
 * Checks a real response against the document: its status is documented for this operation,
 * its body matches the documented schema (or is absent where none is documented), every required
 * header is there with a valid value, every optional one sent is valid, and every API header the
 * server sent is documented.
 */
function assertDocumented(responseRef: string, res: TestResponse, what: string): void {
  const documented = resolvePointer(responseRef);
  const response = deref(documented);
  const refOfResponse = typeof documented.$ref === 'string' ? documented.$ref : responseRef;
  const schemaRef = response.content?.['application/json']?.schema === undefined ? undefined : `${refOfResponse}/content/application~1json/schema`;
  if (schemaRef === undefined) {
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
function operationResponse(path: string, method: string, res: TestResponse): string {
  const responses = doc.paths[path]?.[method]?.responses;
  assert.ok(responses, `no ${method.toUpperCase()} ${path} operation in the document`);
  assert.ok(Object.hasOwn(responses, String(res.status)), `${method.toUpperCase()} ${path} answered ${res.status}, which is not documented: ${res.body.slice(0, 200)}`);
  return pointer('paths', path, method, 'responses', String(res.status));
}

function check(path: string, method: string, res: TestResponse, expectedStatus: number): void {
  const what = `${method.toUpperCase()} ${path} ${expectedStatus}`;
  assert.equal(res.status, expectedStatus, `${what}: got ${res.status} ${res.body.slice(0, 200)}`);
  assertDocumented(operationResponse(path, method, res), res, what);
}

const LIST = '/v1/listings';
const DETAIL = '/v1/listings/{id}';

/** Every $ref in the document, with where it is. */
function refsOf(node: Json, at: string[] = []): Array<{ ref: string; at: string }> {
  if (Array.isArray(node)) return node.flatMap((n, i) => refsOf(n, [...at, String(i)]));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) =>
    k === '$ref' && typeof v === 'string' ? [{ ref: v, at: at.join('/') }] : refsOf(v, [...at, k]),
  );
}

describe('OpenAPI document (item 10)', () => {
  describe('openapi.json is generated from the server schemas', () => {
    it('the committed openapi.json is current (else run `npm run openapi`)', () => {
      const text = readFileSync(new URL('../../../openapi.json', import.meta.url), 'utf8');
      const committed = JSON.parse(text);
      assert.deepEqual(committed, doc, 'openapi.json is out of date with the server schemas: run `npm run openapi` and commit openapi.json');
      assert.equal(text, `${JSON.stringify(committed, null, 2)}\n`, 'openapi.json is not formatted as `npm run openapi` writes it: run `npm run openapi`');
    });

    it('component schemas are the serialisation schemas, $id dropped and references rewritten', () => {
      const { $id, ...listing } = listingSchema;
      assert.equal($id, 'Listing');
      assert.deepEqual(doc.components.schemas.Listing, JSON.parse(JSON.stringify(listing)));
      assert.equal(doc.components.schemas.Listing.additionalProperties, false);
      assert.deepEqual(doc.components.schemas.ListingPage.properties.items.items, { $ref: '#/components/schemas/Listing' });
      assert.deepEqual(Object.keys(doc.components.schemas).sort(), ['Error', 'Listing', 'ListingPage']);
      assert.equal(JSON.stringify(doc).includes('"$id"'), false);
    });
  });

  describe('structure (OpenAPI 3.1)', () => {
    it('is version 3.1.x with info, servers, the two paths and bearer security', () => {
      assert.match(doc.openapi, /^3\.1\.\d+$/);
      assert.equal(typeof doc.info.title, 'string');
      assert.equal(typeof doc.info.version, 'string');
      assert.deepEqual(Object.keys(doc.paths).sort(), [LIST, DETAIL]);
      assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
      assert.deepEqual(
        { type: doc.components.securitySchemes.bearerAuth.type, scheme: doc.components.securitySchemes.bearerAuth.scheme },
        { type: 'http', scheme: 'bearer' },
      );
      assert.match(doc.components.securitySchemes.bearerAuth.description, /<cc>_live_<secret>/);
    });

    it('servers are the D3 country hosts, sg on the apex API host', () => {
      const hosts = doc.servers.map((s: Json) => {
        let url: string = s.url;
        for (const [name, v] of Object.entries<Json>(s.variables ?? {})) url = url.replaceAll(`{${name}}`, v.default);
        return new URL(url).host;
      });
      assert.deepEqual(hosts, COUNTRY_CODES.map((c) => hostForCountry(c, 'example.com')));
      assert.equal(hosts[0], 'api.example.com');
      const local = buildOpenApiDocument({ apiDomain: 'localhost', countries: ['sg', 'my'] });
      assert.deepEqual((local.servers as Json[]).map((s) => s.url.replace('{domain}', s.variables.domain.default)), ['https://api.localhost', 'https://api.my.localhost']);
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
      }
    });

    it('operations: unique ids, GET/HEAD/OPTIONS on each path, path parameters declared, responses described', () => {
      const ids = new Set<string>();
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        assert.deepEqual(Object.keys(item).filter((k) => k !== 'description' && k !== 'summary').sort(), ['get', 'head', 'options']);
        const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        for (const method of ['get', 'head', 'options']) {
          const op = item[method];
          assert.ok(!ids.has(op.operationId), `duplicate operationId ${op.operationId}`);
          ids.add(op.operationId);
          const params = (op.parameters ?? []).map(deref);
          for (const name of templated) {
            if (method === 'options') continue;
            assert.ok(params.some((p: Json) => p.in === 'path' && p.name === name && p.required === true), `${method} ${path}: path parameter ${name}`);
          }
          for (const p of params) assert.ok(['query', 'path', 'header'].includes(p.in) && typeof p.name === 'string' && p.schema, `${method} ${path}: parameter ${JSON.stringify(p)}`);
          for (const [status, r] of Object.entries<Json>(op.responses)) {
            assert.match(status, /^[1-5]\d\d$/);
            assert.equal(typeof deref(r).description, 'string');
          }
        }
        assert.deepEqual(item.options.security, [], 'a preflight carries no key (D16)');
        // HEAD documents the statuses and headers of GET, without bodies.
        assert.deepEqual(Object.keys(item.head.responses), Object.keys(item.get.responses));
        for (const [status, r] of Object.entries<Json>(item.head.responses)) {
          assert.equal(r.content, undefined, `HEAD ${path} ${status} has no body`);
          assert.deepEqual(r.headers, item.get.responses[status].headers);
        }
      }
    });

    it('every schema compiles as strict JSON Schema 2020-12', () => {
      const refs = [
        ...Object.keys(doc.components.schemas).map((n) => pointer('components', 'schemas', n)),
        ...Object.keys(doc.components.parameters).map((n) => pointer('components', 'parameters', n, 'schema')),
        ...Object.keys(doc.components.headers).map((n) => pointer('components', 'headers', n, 'schema')),
      ];
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        for (const method of ['get', 'head', 'options']) {
          for (const [status, r] of Object.entries<Json>(item[method].responses)) {
            const at = pointer('paths', path, method, 'responses', status);
            if (r.content) refs.push(`${at}/content/application~1json/schema`);
            for (const [name, h] of Object.entries<Json>(r.headers ?? {})) if (!h.$ref) refs.push(`${at}/headers/${name}/schema`);
          }
        }
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

    it('error responses use the spec error codes exactly, one per status', () => {
      const used = new Set<string>();
      const responses: Array<[string, Json]> = [['405', doc.components.responses.MethodNotAllowed]];
      for (const item of Object.values<Json>(doc.paths)) {
        for (const method of ['get', 'options']) responses.push(...Object.entries<Json>(item[method].responses));
      }
      for (const [status, r] of responses) {
        if (Number(status) < 400) continue;
        const schemaOfCode = r.content['application/json'].schema.allOf[1].properties.error;
        assert.deepEqual(schemaOfCode, { const: SPEC_ERRORS[status] }, `status ${status}`);
        used.add(String(schemaOfCode.const));
      }
      assert.deepEqual([...used].sort(), Object.values(SPEC_ERRORS).sort());
      assert.deepEqual([...errorSchema.properties.error.enum].sort(), Object.values(SPEC_ERRORS).sort());
    });

    it('documents every response of the GET operations, and 429 with Retry-After', () => {
      assert.deepEqual(Object.keys(doc.paths[LIST].get.responses), ['200', '400', '401', '403', '404', '429', '500']);
      assert.deepEqual(Object.keys(doc.paths[DETAIL].get.responses), ['200', '400', '401', '403', '404', '429', '500']);
      for (const path of [LIST, DETAIL]) {
        const limited = doc.paths[path].get.responses[429].headers;
        assert.equal(limited['Retry-After'].required, true);
        for (const status of ['200', '403', '429']) {
          for (const h of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
            assert.equal(doc.paths[path].get.responses[status].headers[h]?.required, true, `${path} ${status} ${h} (D15)`);
          }
        }
        for (const r of Object.values<Json>(doc.paths[path].get.responses)) assert.ok(r.headers['X-Request-Id'], 'D19');
      }
      assert.equal(doc.paths[LIST].get.responses[401].headers['X-RateLimit-Limit'], undefined, '401 is before the limiter (D5)');
    });

    it('the validators are not vacuous: an undocumented field, a missing field or a wrong code fail', () => {
      const listing = {
        id: '9b2f3c1e-5d4a-4b6c-8e7f-0a1b2c3d4e5f', building_id: '11111111-1111-4111-8111-111111111111', org_id: null,
        title: null, size_sqft: null, usage_types: ['Office'], price: null, currency: 'SGD', is_takeover: false,
        is_featured: false, status: 'active', expiry_date: null, available_from: null, min_lease_tenure: null,
        view_count: 0, inquiry_count: 0, building_name: null, street_address: null, images: [], cover_image_index: 0,
        url: 'https://www.example.com/l/1', created_at: '2026-01-01T00:00:00.000Z',
      };
      const listingRef = pointer('components', 'schemas', 'Listing');
      assert.equal(isValid(listingRef, listing), true);
      assert.equal(isValid(listingRef, { ...listing, owner_account_id: 'x' }), false, 'additionalProperties: false');
      const { url: _url, ...missing } = listing;
      assert.equal(isValid(listingRef, missing), false);
      assert.equal(isValid(listingRef, { ...listing, created_at: 'yesterday' }), false, 'date-time format is checked');
      assert.equal(isValid(listingRef, { ...listing, id: 'not-a-uuid' }), false, 'uuid format is checked');
      assert.equal(isValid(listingRef, { ...listing, status: 'leased' }), false);
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
    const seen: Json[] = [];

    before(async () => {
      server = await startTestServer();
      orgId = await server.createAccount('organisation');
      orgKey = (await server.createKey(orgId)).key;
      const landlordId = await server.createAccount('individual');
      landlordKey = (await server.createKey(landlordId)).key;
      await server.addListings(orgId, [
        {
          id: full,
          usage_types: ['F&B', 'Cafe'],
          is_takeover: true,
          is_featured: true,
          expiry_date: '2027-06-30T00:00:00Z',
          available_from: '2026-12-01T00:00:00Z',
          min_lease_tenure: '12 months',
          view_count: 321,
          inquiry_count: 7,
          building_name: 'Harbour Point',
          street_address: '1 Harbour Road',
          images: ['https://cdn.example.com/a.jpg', 'https://cdn.example.com/b.jpg'],
          cover_image_index: 1,
        },
        {
          id: sparse, title: null, size_sqft: null, price: null, building_name: null, street_address: null,
          expiry_date: null, available_from: null, min_lease_tenure: null, images: [],
        },
      ]);
      await server.addListings(landlordId, [{ id: landlordListing, usage_types: ['Clinic'] }]);
      await server.allowOrigin(orgId, origin);
    });
    after(() => server?.close());

    it('200 list and detail bodies of every shape (nulls, images, individual landlord)', async () => {
      for (const [key, ids] of [[orgKey, [full, sparse]], [landlordKey, [landlordListing]]] as const) {
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
    });

    it('200 pages: clamped per_page, paging, a page beyond the last; HEAD is the same without a body', async () => {
      const clamped = await server.get('/v1/listings?per_page=500', { key: orgKey });
      check(LIST, 'get', clamped, 200);
      assert.equal(clamped.json.per_page, 100);
      const second = await server.get('/v1/listings?page=2&per_page=1', { key: orgKey });
      check(LIST, 'get', second, 200);
      assert.deepEqual([second.json.page, second.json.pages, second.json.items.length], [2, 2, 1]);
      const beyond = await server.get('/v1/listings?page=9', { key: orgKey });
      check(LIST, 'get', beyond, 200);
      assert.deepEqual(beyond.json.items, []);
      check(LIST, 'head', await server.get('/v1/listings', { key: orgKey, method: 'HEAD' }), 200);
      check(DETAIL, 'head', await server.get(`/v1/listings/${full}`, { key: orgKey, method: 'HEAD' }), 200);
      check(DETAIL, 'head', await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ff', { key: orgKey, method: 'HEAD' }), 404);
      check(LIST, 'head', await server.get('/v1/listings', { method: 'HEAD' }), 401);
    });

    it('browser calls: a registered origin gets 200 with the D18 headers, another gets 403', async () => {
      const ok = await server.get('/v1/listings', { key: orgKey, headers: { origin } });
      check(LIST, 'get', ok, 200);
      assert.equal(ok.headers['access-control-allow-origin'], origin);
      assert.ok(ok.headers['access-control-expose-headers']);
      const refused = await server.get(`/v1/listings/${full}`, { key: orgKey, headers: { origin: 'https://elsewhere.example' } });
      check(DETAIL, 'get', refused, 403);
      assert.equal(refused.headers['access-control-allow-origin'], 'https://elsewhere.example');
      check(LIST, 'get', await server.get('/v1/listings', { key: orgKey, headers: { origin: 'null' } }), 403);
    });

    it('400, 401, 404 and 405 bodies and headers', async () => {
      check(LIST, 'get', await server.get('/v1/listings?page=abc', { key: orgKey }), 400);
      check(LIST, 'get', await server.get('/v1/listings?per_page=0', { key: orgKey }), 400);
      check(LIST, 'get', await server.get('/v1/listings?page=1&page=2', { key: orgKey }), 400);
      check(DETAIL, 'get', await server.get('/v1/listings/%ZZ', { key: orgKey }), 404);
      check(LIST, 'get', await server.get('/v1/listings'), 401);
      check(LIST, 'get', await server.get('/v1/listings', { key: 'sg_live_nope' }), 401);
      check(DETAIL, 'get', await server.get(`/v1/listings/${full}`, { key: orgKey, host: 'api.my.localhost' }), 401);
      check(DETAIL, 'get', await server.get(`/v1/listings/${full}`, { key: orgKey, host: 'api.nowhere.localhost' }), 404);
      check(LIST, 'get', await server.get('/v1/listings', { key: orgKey, host: 'api.nowhere.localhost' }), 404);
      check(DETAIL, 'get', await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ff', { key: orgKey }), 404);
      check(DETAIL, 'get', await server.get('/v1/listings/not-a-uuid', { key: orgKey }), 404);
      check(DETAIL, 'get', await server.get(`/v1/listings/${landlordListing}`, { key: orgKey }), 404);
      const methodRef = pointer('components', 'responses', 'MethodNotAllowed');
      for (const [method, path] of [['POST', '/v1/listings'], ['DELETE', `/v1/listings/${full}`], ['PUT', '/v1/listings/x']]) {
        const res = await server.get(path!, { key: orgKey, method, headers: { origin } });
        assert.equal(res.status, 405, `${method} ${path}`);
        assertDocumented(methodRef, res, `${method} ${path} 405`);
      }
    });

    it('OPTIONS preflight: 204 with the D16 headers, for any origin and without a key; 404 on an unknown host', async () => {
      const pre = await server.get('/v1/listings', {
        method: 'OPTIONS',
        headers: { origin: 'https://anyone.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, accept' },
      });
      check(LIST, 'options', pre, 204);
      for (const h of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age']) {
        assert.ok(pre.headers[h], h);
      }
      check(DETAIL, 'options', await server.get(`/v1/listings/${full}`, { method: 'OPTIONS' }), 204);
      check(DETAIL, 'options', await server.get(`/v1/listings/${full}`, { method: 'OPTIONS', host: 'api.nowhere.localhost' }), 404);
    });

    it('429 with Retry-After and Remaining 0, after lowering the key limit', async () => {
      const accountId = await server.createAccount('organisation');
      const limited = await server.createKey(accountId);
      assert.equal(await server.service.store.keys.setRateLimit(limited.id, 2), true);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 200);
      check(LIST, 'get', await server.get('/v1/listings?page=x', { key: limited.key }), 400);
      const refused = await server.get(`/v1/listings/${full}`, { key: limited.key, headers: { origin } });
      check(DETAIL, 'get', refused, 429);
      assert.equal(refused.headers['x-ratelimit-remaining'], '0');
      assert.equal(refused.headers['x-ratelimit-limit'], '2');
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 429);
      server.clock.advance(60_000);
      check(LIST, 'get', await server.get('/v1/listings', { key: limited.key }), 200);
    });

    it('500 internal_error when the store fails under a request', async () => {
      const db = server.service.store.db;
      // A tenant this process has not read yet, so that its listings must come from the database.
      const fresh = await server.createAccount();
      const freshKey = (await server.createKey(fresh)).key;
      await sql`ALTER TABLE listings RENAME TO listings_moved_away`.execute(db);
      try {
        const res = await server.get('/v1/listings/a0000000-0000-4000-8000-0000000000ee', { key: freshKey });
        check(DETAIL, 'get', res, 500);
        const list = await server.get('/v1/listings?per_page=7', { key: freshKey });
        check(LIST, 'get', list, 500);
      } finally {
        await sql`ALTER TABLE listings_moved_away RENAME TO listings`.execute(db);
      }
    });

    it('GET /openapi.json serves the document with this deployment\'s hosts, on any host, without a key', async () => {
      for (const host of ['api.localhost', 'docs.anything.example']) {
        const res = await server.get('/openapi.json', { host });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.ok(res.headers['x-request-id']);
        assert.deepEqual(res.json, buildOpenApiDocument({ apiDomain: server.config.apiDomain, countries: server.config.countries }));
        assert.equal((res.json as Json).servers[0].variables.domain.default, 'localhost');
      }
    });
  });
});
