import { Type, type TObject, type TSchema } from '#typebox';
import { redactedExcerpt } from '../../auth/key-format.js';
import { badRequest, type ApiError } from '../../core/api-error.js';
import { MAX_INT32 } from '../../core/formats.js';
import { searchWords } from '../../listings/search-words.js';

/**
 * The query string of a /v1 request: how it is parsed (`parseQueryString`, the router's parser),
 * the schema builders an endpoint declares its parameters with (`Query`), and the validator
 * compiled from such a schema (`compileQueryValidator`), which Fastify runs after the guard (D5)
 * and which gives the handler its typed, defaulted values. The schema is the one source: the same
 * object is the route's `schema.querystring` and the OpenAPI document's parameters (openapi.ts).
 *
 * D7's rules are stricter than JSON Schema's type coercion (`1e3`, ` 5` and `5.0` are not whole
 * numbers here, and every message names its parameter), so the validator is written for the
 * handful of shapes the API uses, each with one rule:
 *
 * - `integer` (`Query.wholeNumber`): base-10 digits with an optional leading `+`, at most 2^31-1,
 *   at least `minimum`; above `x-clamp` it is clamped, not refused (`per_page`, `limit`);
 * - `string` with `format: decimal` (`Query.decimal`): digits, optionally a dot and digits, an
 *   optional leading `+`; kept as text (its exact value), for the handler to read;
 * - `boolean`: `true` or `false`;
 * - `string` with `enum`: one of the names;
 * - `array` of an `enum` (`Query.names`): comma-separated names (`style: form, explode: false`);
 * - `string` with `x-shape` (D26, D28): search text (`Query.searchText`), a point (`Query.point`)
 *   or a box (`Query.box`), each read into its value with its own messages;
 * - any other `string`: as sent.
 *
 * Every parameter may be given at most once; unknown parameters are ignored; the first malformed
 * parameter, in the declared order, is the 400.
 */

export type QueryValue = string | string[] | undefined;

/** D7: base-10 digits with an optional leading `+`; no other sign, no decimals, exponent or whitespace. */
const INTEGER = /^\+?[0-9]+$/;
/** D23: one or more digits, optionally a dot and one or more digits, an optional leading `+`. */
const DECIMAL_PATTERN = '^\\+?[0-9]+(\\.[0-9]+)?$';

/** D28: a coordinate, written like a D23 decimal with an optional leading `-` (or `+`). */
const COORDINATE = '[+-]?[0-9]+(?:\\.[0-9]+)?';

interface Described {
  description: string;
  /** The example of the published parameter. */
  example: unknown;
}

/** The parameter shapes the validator knows; each is a plain JSON schema. */
export const Query = {
  /** D7: a whole number from `minimum` (to `maximum`, else 2^31-1); `clampTo` makes larger values (up to 2^31-1) that value instead of a 400. */
  wholeNumber: (opts: Described & { minimum: number; maximum?: number; default?: number; clampTo?: number; requires?: string }) =>
    Type.Integer({
      minimum: opts.minimum,
      maximum: opts.maximum ?? MAX_INT32,
      ...(opts.default === undefined ? {} : { default: opts.default }),
      description: opts.description,
      examples: [opts.example],
      ...(opts.clampTo === undefined ? {} : { 'x-clamp': opts.clampTo }),
      // Another parameter without which this one is a 400 (the endpoint's read checks it).
      ...(opts.requires === undefined ? {} : { 'x-requires': opts.requires }),
    }),
  /** D23: a non-negative decimal number, kept as the text sent. */
  decimal: (opts: Described) => Type.String({ format: 'decimal', pattern: DECIMAL_PATTERN, description: opts.description, examples: [opts.example] }),
  boolean: (opts: Described) => Type.Boolean({ description: opts.description, examples: [opts.example] }),
  /** One of `values`. */
  oneOf: <const T extends readonly string[]>(values: T, opts: Described) =>
    Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description: opts.description, examples: [opts.example] }),
  /** One or more of `values`, comma-separated; `noun` names one value in messages ("a usage type"). */
  names: <const T extends readonly string[]>(values: T, opts: Described & { noun: string }) =>
    Type.Unsafe<T[number][]>({
      type: 'array',
      minItems: 1,
      items: { type: 'string', enum: [...values], title: opts.noun },
      description: opts.description,
      examples: [opts.example],
    }),
  text: (opts: Described) => Type.String({ description: opts.description, examples: [opts.example] }),
  /**
   * D26: search text, 1 to `maxLength` characters once spaces around it are trimmed, with a word in
   * it. The lengths are not JSON Schema's `minLength`/`maxLength` (untrimmed, in UTF-16 units), which
   * would make a client that checks them refuse what the API takes: they are in the description.
   */
  searchText: (opts: Described & { maxLength: number }) =>
    Type.String({
      'x-shape': 'search',
      'x-max-length': opts.maxLength,
      // At least one letter or digit: what a client checking patterns (the SDK's proxy) can refuse itself.
      pattern: '[\\p{L}\\p{N}]',
      description: opts.description,
      examples: [opts.example],
    }),
  /** D28: `<lat>,<lng>`, each a D23 decimal with an optional leading sign; lat -90..90, lng -180..180. */
  point: (opts: Described) =>
    Type.Unsafe<{ lat: number; lng: number }>({ type: 'string', 'x-shape': 'lat-lng', pattern: `^${COORDINATE},${COORDINATE}$`, description: opts.description, examples: [opts.example] }),
  /** D28: `<min_lng>,<min_lat>,<max_lng>,<max_lat>` (GeoJSON order), each like a `point`'s numbers. */
  box: (opts: Described) =>
    Type.Unsafe<{ minLng: number; minLat: number; maxLng: number; maxLat: number }>({
      type: 'string',
      'x-shape': 'bbox',
      pattern: `^${COORDINATE},${COORDINATE},${COORDINATE},${COORDINATE}$`,
      description: opts.description,
      examples: [opts.example],
    }),
};


type Parse = (text: string) => unknown;

/** The value of one parameter from its text: the rule of its schema's shape (see above). */
function parserFor(name: string, schema: Record<string, unknown>): Parse {
  const excerpt = (text: string) => JSON.stringify(redactedExcerpt(text, 40));
  switch (schema.type) {
    case 'integer': {
      const minimum = schema.minimum as number;
      const maximum = schema.maximum as number;
      const clamp = schema['x-clamp'] as number | undefined;
      return (text) => {
        if (!INTEGER.test(text)) throw badRequest(`Query parameter "${name}" must be a whole number written in digits, got ${excerpt(text)}.`);
        const n = Number(text);
        if (n > maximum) throw badRequest(`Query parameter "${name}" is too large (at most ${maximum}).`);
        if (n < minimum) throw badRequest(`Query parameter "${name}" must be ${minimum} or more.`);
        return clamp !== undefined && n > clamp ? clamp : n;
      };
    }
    case 'boolean':
      return (text) => {
        if (text !== 'true' && text !== 'false') throw badRequest(`Query parameter "${name}" must be true or false, got ${excerpt(text)}.`);
        return text === 'true';
      };
    case 'array': {
      const items = schema.items as { enum: readonly string[]; title: string };
      const allowed = new Set(items.enum);
      return (text) => {
        const names = text.split(',');
        for (const item of names) {
          if (!allowed.has(item)) {
            throw badRequest(`Query parameter "${name}" holds ${excerpt(item)}, which is not ${items.title}; use these names, exactly spelt and comma-separated: ${items.enum.join(', ')}.`);
          }
        }
        return names;
      };
    }
    case 'string': {
      if (Array.isArray(schema.enum)) {
        const values = schema.enum as readonly string[];
        return (text) => {
          if (!values.includes(text)) throw badRequest(`Query parameter "${name}" must be one of ${values.join(', ')}, got ${excerpt(text)}.`);
          return text;
        };
      }
      if (schema['x-shape'] === 'search') return searchTextParser(name, schema['x-max-length'] as number);
      if (schema['x-shape'] === 'lat-lng' || schema['x-shape'] === 'bbox') return coordinatesParser(name, schema);
      if (schema.format === 'decimal') {
        const decimal = new RegExp(schema.pattern as string);
        return (text) => {
          if (!decimal.test(text)) throw badRequest(`Query parameter "${name}" must be a non-negative decimal number such as 1200 or 4.5, got ${excerpt(text)}.`);
          return text;
        };
      }
      return (text) => text;
    }
    default:
      throw new Error(`query: parameter ${name} has a shape the validator does not know (${JSON.stringify(schema.type)})`);
  }
}

/** D26: trimmed of spaces, 1 to `maxLength` characters (code points), holding at least one word. */
function searchTextParser(name: string, maxLength: number): Parse {
  return (text) => {
    const trimmed = text.trim();
    const length = [...trimmed].length;
    if (length === 0) throw badRequest(`Query parameter "${name}" is empty; send at least one word, or leave it out.`);
    if (length > maxLength) throw badRequest(`Query parameter "${name}" is ${length} characters long; send at most ${maxLength}.`);
    if (searchWords(trimmed).length === 0) throw badRequest(`Query parameter "${name}" holds no word (only spaces or punctuation); send letters or digits.`);
    return trimmed;
  };
}

/** D28: `near` (lat,lng) or `bbox` (min_lng,min_lat,max_lng,max_lat): numbers checked for form and range. */
function coordinatesParser(name: string, schema: Record<string, unknown>): Parse {
  const form = new RegExp(schema.pattern as string);
  const isBox = schema['x-shape'] === 'bbox';
  const shape = isBox ? 'min_lng,min_lat,max_lng,max_lat (longitudes -180 to 180, latitudes -90 to 90)' : 'lat,lng (latitude -90 to 90, longitude -180 to 180)';
  const excerpt = (text: string) => JSON.stringify(redactedExcerpt(text, 60));
  return (text) => {
    if (!form.test(text)) throw badRequest(`Query parameter "${name}" must be ${shape} in decimal degrees such as ${String((schema.examples as unknown[])[0])}, got ${excerpt(text)}.`);
    const n = text.split(',').map(Number);
    const [a, b, c, d] = n as [number, number, number, number];
    const lats = isBox ? [b, d] : [a];
    const lngs = isBox ? [a, c] : [b];
    if (lats.some((lat) => lat < -90 || lat > 90) || lngs.some((lng) => lng < -180 || lng > 180)) {
      throw badRequest(`Query parameter "${name}" is out of range: it must be ${shape}, got ${excerpt(text)}.`);
    }
    if (!isBox) return { lat: a, lng: b };
    if (b > d) throw badRequest(`Query parameter "${name}" has its minimum latitude (${b}) above its maximum (${d}).`);
    return { minLng: a, minLat: b, maxLng: c, maxLat: d };
  };
}

export type QueryValidation = { value: Record<string, unknown> } | { error: ApiError };

/**
 * The validator of a querystring schema: the parsed query (`parseQueryString`) in, the typed values
 * out (defaults applied, unknown names dropped), or the 400 of the first malformed parameter.
 */
export function compileQueryValidator(schema: TObject | TSchema): (query: Readonly<Record<string, QueryValue>> | null) => QueryValidation {
  const properties = Object.entries((schema as TObject).properties ?? {}).map(([name, property]) => ({
    name,
    parse: parserFor(name, property as unknown as Record<string, unknown>),
    fallback: (property as { default?: unknown }).default,
  }));
  return (query) => {
    const value: Record<string, unknown> = {};
    const undecodable = (query as { [UNDECODABLE]?: Set<string> } | null)?.[UNDECODABLE];
    try {
      for (const { name, parse, fallback } of properties) {
        const raw = query?.[name];
        if (raw === undefined) {
          if (fallback !== undefined) value[name] = fallback;
        } else if (Array.isArray(raw)) {
          throw badRequest(`Query parameter "${name}" was given ${raw.length} times; give it once.`);
        } else if (undecodable?.has(name) === true) {
          throw badRequest(`Query parameter "${name}" is not valid percent-encoded UTF-8 (a "%" must start %XX of a UTF-8 byte; send "%25" for a "%").`);
        } else {
          value[name] = parse(raw);
        }
      }
    } catch (error) {
      return { error: error as ApiError };
    }
    return { value };
  };
}

/**
 * The most parameters (`&`-separated parts) a query string may carry (issue 40 item 2): the API
 * reads a dozen at most, so a hundred leaves room for a client's own tracking parameters, and the
 * parser's work per request stays bounded whatever the URL holds. More is refused with a 400
 * before anything else (`queryBoundProblem`); the URL's length is bounded by `MAX_TARGET_LENGTH`
 * (http/front.ts).
 */
export const MAX_QUERY_PARAMETERS = 100;

/** Set on the (empty) parse of a query that had more than its bound of parameters. */
const OVER_BOUND = Symbol('queryOverBound');
/** Set on a parse with values that are not percent-encoded UTF-8: the names they were given under. */
const UNDECODABLE = Symbol('queryUndecodable');

/**
 * Parses a query string as RFC 3986 percent-encoding, without turning `+` into a space: D7 allows
 * a leading `+`, which clients send both raw and as `%2B`. A repeated name becomes an array (D7
 * rejects it); an undecodable value is kept raw and its name marked, so that the validator answers
 * it with a 400 naming the parameter in its turn (D5) instead of failing the request before
 * authentication, and free text (`q`) is never searched for a decoding it does not have.
 *
 * Linear in the query's length: a repeated name's values are appended to one array, and the query
 * is cut by `split`, which stops after `limit` + 1 parts. A query of more than `limit` parts is
 * not parsed: its result is empty and marked, and the API answers it with a 400
 * (`queryBoundProblem`). The router calls it with the query alone.
 */
export function parseQueryString(query: string, limit = MAX_QUERY_PARAMETERS): Record<string, string | string[]> {
  const result = new (QueryObject as unknown as new () => Record<string, string | string[]>)();
  const pairs = query.split('&', limit + 1);
  if (pairs.length > limit) {
    (result as { [OVER_BOUND]?: true })[OVER_BOUND] = true;
    return result;
  }
  // Without a `%` nothing needs decoding (the common case): skip the decoder for every part.
  const encoded = query.includes('%');
  for (const pair of pairs) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const name = encoded ? (decode(rawName) ?? rawName) : rawName;
    let value = encoded ? decode(rawValue) : rawValue;
    if (value === undefined) {
      value = rawValue;
      const marked = result as { [UNDECODABLE]?: Set<string> };
      (marked[UNDECODABLE] ??= new Set()).add(name);
    }
    const previous = result[name];
    if (previous === undefined) result[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else result[name] = [previous, value];
  }
  return result;
}

/**
 * The 400 of a query that carried more than `MAX_QUERY_PARAMETERS` parameters, or undefined. Any
 * route, before the key check: the bound is on what a request may carry, like its size.
 */
export function queryBoundProblem(query: unknown): ApiError | undefined {
  return (query as { [OVER_BOUND]?: true } | null)?.[OVER_BOUND] === true ? tooManyParameters() : undefined;
}

/** The 400 of a query of more than `MAX_QUERY_PARAMETERS` parameters. */
export const tooManyParameters = (): ApiError =>
  badRequest(`The query string has more than ${MAX_QUERY_PARAMETERS} parameters; send at most ${MAX_QUERY_PARAMETERS}.`, 'malformed_request');

/**
 * The parsed query's object: nothing inherited (its prototype is an empty object without a
 * prototype), so `__proto__` or `constructor` are plain names. `Object.create(null)` gives the same
 * safety, but V8 makes such objects dictionaries, several times slower to fill and read (the way
 * fast-querystring does it).
 */
function QueryObject(): void {}
QueryObject.prototype = Object.create(null);

/** The percent-decoded text, or undefined when it is not percent-encoded UTF-8. */
function decode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
