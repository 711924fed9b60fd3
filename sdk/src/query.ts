import { ListingsApiError } from './errors.js';
import type { QueryRule } from './openapi.js';

/**
 * A query string as the API parses it: RFC 3986 percent-encoding, where `+` stays a plus sign (the
 * API's integers and decimals take a leading `+`, and `Shared+Office` is not a usage type), unlike
 * URLSearchParams and HTML forms, which read it as a space. A name given more than once keeps
 * every value; a part that is not valid percent-encoding is kept raw, so that it fails its rule.
 */
export function parseQuery(query: string): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode(eq === -1 ? pair : pair.slice(0, eq));
    const value = decode(eq === -1 ? '' : pair.slice(eq + 1));
    const values = result.get(name);
    if (values === undefined) result.set(name, [value]);
    else values.push(value);
  }
  return result;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const refuse = (message: string) => new ListingsApiError({ status: 400, code: 'bad_request', message });
/** A value as a message repeats it: its first 40 characters, quoted. */
const shown = (value: string) => JSON.stringify(value.slice(0, 40));

/**
 * The query to send upstream for the known parameters `rules` (in their order; any other is
 * ignored, as the API does), or the 400 the API would answer, with a message that names the
 * parameter. Integers are sent in one canonical form (`+01` as `1`) so that equal requests share
 * one copy; every other value is sent as it was given, decoded (the client encodes it again so
 * that the API reads the same text).
 */
export function checkQuery(
  given: ReadonlyMap<string, readonly string[]>,
  rules: Readonly<Record<string, QueryRule>>,
  ranges: ReadonlyArray<readonly [string, string]>,
): Record<string, string> | ListingsApiError {
  const query: Record<string, string> = {};
  for (const [name, rule] of Object.entries(rules)) {
    const values = given.get(name);
    if (values === undefined) continue;
    if (values.length > 1) return refuse(`Query parameter "${name}" was given ${values.length} times; give it once.`);
    const checked = checkValue(name, rule, values[0]!);
    if (checked instanceof ListingsApiError) return checked;
    query[name] = checked;
  }
  for (const [min, max] of ranges) {
    if (query[min] === undefined || query[max] === undefined) continue;
    const low = Number(query[min]);
    const high = Number(query[max]);
    if (low > high) return refuse(`Query parameter "${min}" (${low}) is above "${max}" (${high}).`);
  }
  return query;
}

/** Base-10 digits, an optional leading `+` (and `-` where the minimum is below 0): how the API reads integers. */
const UNSIGNED = /^\+?[0-9]+$/;
const SIGNED = /^[+-]?[0-9]+$/;
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

function checkValue(name: string, rule: QueryRule, value: string): string | ListingsApiError {
  switch (rule.type) {
    case 'integer': {
      const negative = rule.minimum !== undefined && rule.minimum < 0;
      if (!(negative ? SIGNED : UNSIGNED).test(value)) return refuse(`Query parameter "${name}" must be a whole number written in digits, got ${shown(value)}.`);
      const n = Number(value);
      const bounded = checkBounds(name, rule, n);
      if (bounded !== undefined) return bounded;
      return Number.isSafeInteger(n) ? String(n) : value;
    }
    case 'number': {
      if (!DECIMAL.test(value)) return refuse(`Query parameter "${name}" must be a number, got ${shown(value)}.`);
      return checkBounds(name, rule, Number(value)) ?? value;
    }
    case 'boolean':
      return value === 'true' || value === 'false' ? value : refuse(`Query parameter "${name}" must be true or false, got ${shown(value)}.`);
    case 'string':
      return checkString(name, rule, value) ?? value;
    case 'array': {
      const items = value.split(rule.separator ?? ',');
      if (rule.minItems !== undefined && items.length < rule.minItems) return refuse(`Query parameter "${name}" must hold at least ${rule.minItems} values.`);
      if (rule.maxItems !== undefined && items.length > rule.maxItems) return refuse(`Query parameter "${name}" may hold at most ${rule.maxItems} values.`);
      for (const item of items) {
        const problem = rule.items === undefined ? undefined : checkValue(name, rule.items, item);
        if (problem instanceof ListingsApiError) {
          // The item's own message, except for a name outside a list: say which list.
          if (rule.items!.enum !== undefined && !rule.items!.enum.includes(item)) {
            return refuse(`Query parameter "${name}" holds ${shown(item)}, which is not one of ${rule.items!.enum.join(', ')} (exactly spelt; several separated by "${rule.separator ?? ','}").`);
          }
          return problem;
        }
      }
      return value;
    }
  }
}

function checkBounds(name: string, rule: QueryRule, n: number): ListingsApiError | undefined {
  if (rule.minimum !== undefined && n < rule.minimum) return refuse(`Query parameter "${name}" must be ${rule.minimum} or more.`);
  if (rule.exclusiveMinimum !== undefined && n <= rule.exclusiveMinimum) return refuse(`Query parameter "${name}" must be more than ${rule.exclusiveMinimum}.`);
  if (rule.maximum !== undefined && n > rule.maximum) return refuse(`Query parameter "${name}" is too large (at most ${rule.maximum}).`);
  if (rule.exclusiveMaximum !== undefined && n >= rule.exclusiveMaximum) return refuse(`Query parameter "${name}" must be less than ${rule.exclusiveMaximum}.`);
  return undefined;
}

function checkString(name: string, rule: QueryRule, value: string): ListingsApiError | undefined {
  if (rule.enum !== undefined && !rule.enum.includes(value)) return refuse(`Query parameter "${name}" must be one of ${rule.enum.join(', ')}, got ${shown(value)}.`);
  // Lengths in code points, as JSON Schema counts them.
  const length = [...value].length;
  if (rule.minLength !== undefined && length < rule.minLength) return refuse(`Query parameter "${name}" must be at least ${rule.minLength} characters long.`);
  if (rule.maxLength !== undefined && length > rule.maxLength) return refuse(`Query parameter "${name}" may be at most ${rule.maxLength} characters long.`);
  if (rule.pattern !== undefined && !patternOf(rule.pattern).test(value)) {
    return refuse(`Query parameter "${name}" must match ${rule.pattern}${rule.example === undefined ? '' : ` (e.g. ${rule.example})`}, got ${shown(value)}.`);
  }
  return undefined;
}

/** The rules' patterns, compiled once each (JSON Schema patterns are ECMA-262 regular expressions, `u` mode). */
const PATTERNS = new Map<string, RegExp>();
function patternOf(source: string): RegExp {
  let pattern = PATTERNS.get(source);
  if (pattern === undefined) {
    pattern = new RegExp(source, 'u');
    PATTERNS.set(source, pattern);
  }
  return pattern;
}
