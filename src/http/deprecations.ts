import type { FastifyRequest } from 'fastify';
import { ConfigError, type Deprecation } from '../config/index.js';
import { VARIABLE } from '../config/deprecations.js';

/**
 * D29: what API_DEPRECATIONS (config/deprecations.ts) does to answers and to the OpenAPI document,
 * computed once at start-up. A prefix covers a path equal to it or continuing with `/` (whole
 * segments), so `/v1/listings` covers the detail and the change feed too; where prefixes nest, the
 * longest one that covers a path is its deprecation.
 *
 * Every answer of a covered path carries the headers, whatever its status (200, 304, and errors:
 * 400, 401, 404, 405, 429...), since a client must learn that it calls something deprecated even
 * while its key is wrong. A request that found a route is matched by the route (`/v1/listings/:id`:
 * decided once per route, whatever the spelling of the request's path); one that found none (404,
 * 405) by its path. Only the answers refused before the service reads a request (oversized
 * headers, 431, and an overlong request line, 414) go without them.
 */

/** The response headers of one deprecation: `Deprecation` (RFC 9745), `Sunset` (RFC 8594) when set, `Link`. */
export function deprecationHeaders(d: Deprecation): Record<string, string> {
  return {
    'deprecation': `@${d.since}`,
    ...(d.sunset === undefined ? {} : { 'sunset': new Date(d.sunset).toUTCString() }),
    'link': `<${d.link}>; rel="deprecation"`,
  };
}

const covers = (prefix: string, path: string): boolean =>
  path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47 /* / */ || path.charCodeAt(prefix.length) === 63 /* ? */);

/** The deprecation of a path (a route's URL, or a request's, query included), the longest prefix that covers it. */
export function deprecationOf(deprecations: readonly Deprecation[], path: string): Deprecation | undefined {
  let found: Deprecation | undefined;
  for (const d of deprecations) if (covers(d.prefix, path) && (found === undefined || d.prefix.length > found.prefix.length)) found = d;
  return found;
}

/**
 * Checks that each prefix covers at least one endpoint (a typo would otherwise deprecate nothing,
 * silently): a ConfigError naming API_DEPRECATIONS, reported by the CLI as one line like any
 * configuration error.
 */
export function checkDeprecations(deprecations: readonly Deprecation[], routeUrls: readonly string[]): void {
  for (const d of deprecations) {
    if (!routeUrls.some((url) => covers(d.prefix, url))) {
      throw new ConfigError(VARIABLE, `prefix "${d.prefix}" covers no endpoint; the API serves ${routeUrls.join(', ')}`);
    }
  }
}

/**
 * The headers to add to a request's answer, or undefined: the per-request step of D29, a Map
 * look-up by route (or, without a route, a few `startsWith` on the path). Undefined as a whole when
 * nothing is deprecated (the default), so that the hot path tests one variable.
 */
export function deprecationLookup(
  deprecations: readonly Deprecation[],
  routeUrls: readonly string[],
): ((request: FastifyRequest) => Record<string, string> | undefined) | undefined {
  if (deprecations.length === 0) return undefined;
  checkDeprecations(deprecations, routeUrls);
  const headersOf = new Map(deprecations.map((d) => [d, deprecationHeaders(d)]));
  const byRoute = new Map<string, Record<string, string> | undefined>();
  for (const url of routeUrls) {
    const d = deprecationOf(deprecations, url);
    byRoute.set(url, d === undefined ? undefined : headersOf.get(d));
  }
  return (request) => {
    const route = request.routeOptions.url;
    if (route !== undefined && byRoute.has(route)) return byRoute.get(route);
    const d = deprecationOf(deprecations, request.url);
    return d === undefined ? undefined : headersOf.get(d);
  };
}
