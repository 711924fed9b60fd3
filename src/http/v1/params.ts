import { redactKeys } from '../../auth/key-format.js';
import { badRequest } from '../../core/api-error.js';
import { MAX_INT32 } from '../../core/formats.js';

export const DEFAULT_PER_PAGE = 20;
export const MAX_PER_PAGE = 100;
/** D7: base-10 digits with an optional leading `+`; no other sign, no decimals, exponent or whitespace. */
const INTEGER = /^\+?[0-9]+$/;

export type QueryValue = string | string[] | undefined;

/**
 * Parses a query string as RFC 3986 percent-encoding, without turning `+` into a space: D7 allows
 * a leading `+`, which clients send both raw and as `%2B`. A repeated name becomes an array (D7
 * rejects it); an undecodable value is kept raw so that it fails validation with a 400 in its turn
 * (D5) instead of failing the request before authentication.
 */
export function parseQueryString(query: string): Record<string, string | string[]> {
  const result: Record<string, string | string[]> = Object.create(null);
  // Without a `%` nothing needs decoding (the common case): skip the decoder for every part.
  const encoded = query.includes('%');
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const name = encoded ? decode(rawName) : rawName;
    const value = encoded ? decode(rawValue) : rawValue;
    const previous = result[name];
    result[name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
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

/** A D7 integer parameter: undefined when absent, else an integer in 0..2^31-1, else 400. */
export function parseIntegerParam(name: string, value: QueryValue): number | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw badRequest(`Query parameter "${name}" was given ${value.length} times; give it once.`);
  if (!INTEGER.test(value)) {
    throw badRequest(`Query parameter "${name}" must be a whole number written in digits, got ${JSON.stringify(redactKeys(value).slice(0, 40))}.`);
  }
  const n = Number(value);
  if (n > MAX_INT32) throw badRequest(`Query parameter "${name}" is too large (at most ${MAX_INT32}).`);
  return n;
}

export interface PageParams {
  page: number;
  perPage: number;
}

/** Spec 4.2 and D7: page >= 1 (default 1); per_page >= 1 (default 20), clamped to 100. */
export function parsePageParams(query: Readonly<Record<string, QueryValue>>): PageParams {
  const page = parseIntegerParam('page', query.page) ?? 1;
  const perPage = parseIntegerParam('per_page', query.per_page) ?? DEFAULT_PER_PAGE;
  if (page < 1) throw badRequest('Query parameter "page" must be 1 or more.');
  if (perPage < 1) throw badRequest('Query parameter "per_page" must be 1 or more.');
  return { page, perPage: Math.min(perPage, MAX_PER_PAGE) };
}
