import type { FastifyReply, FastifyRequest } from 'fastify';
import { normalizeOrigin } from './origin.js';

/**
 * CORS for the API (D16-D18), in one place as Hono's cors middleware does it: `applyCors` puts the
 * headers on every answer, `answerPreflight` answers OPTIONS. The allow-list is enforced on the
 * real request (the origin step of the /v1 guard, http/v1/routes.ts), not here: a preflight carries
 * no key, so it is answered for any origin, and every response to a browser carries the headers
 * that let its code read the JSON, errors included. No credentials mode:
 * `Access-Control-Allow-Credentials` is never sent.
 */
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS';
/**
 * What browser code may read (D18, D21), with D29's IETF rate-limit fields and deprecation headers:
 * a page must be able to see that the key is running out, or that what it calls is deprecated.
 */
export const EXPOSED_HEADERS =
  'ETag, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Deprecation, Sunset, Link';
/** Preflight cache time; Chromium caps it at two hours. */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/**
 * Request headers a browser may send besides Authorization (D16: "any other requested header that
 * is safe"): standard content-negotiation and caching headers and X-Request-Id. Anything else
 * (cookies, proxy headers, custom headers the API would ignore) is not granted.
 */
const SAFE_REQUEST_HEADERS = new Set([
  'authorization', 'accept', 'accept-language', 'content-language', 'content-type',
  'cache-control', 'pragma', 'if-none-match', 'if-modified-since', 'x-request-id', 'x-requested-with',
]);

/**
 * The origin to echo in `Access-Control-Allow-Origin`, or undefined when no CORS header is due:
 * no Origin (server-to-server), the literal `null` (D18), or something that is not an origin.
 */
export function originToEcho(origin: string | undefined): string | undefined {
  if (origin === undefined || origin === 'null') return undefined;
  return normalizeOrigin(origin) === undefined ? undefined : origin;
}

/** D18: every answer to a browser (a request with an Origin other than `null`) may be read by its code. */
export function applyCors(request: FastifyRequest, reply: FastifyReply): void {
  const echo = originToEcho(request.headers.origin);
  if (echo === undefined) return;
  reply.header('access-control-allow-origin', echo);
  reply.header('access-control-expose-headers', EXPOSED_HEADERS);
}

/** D16: a preflight is answered 204 for any origin, counted against no limit; applyCors ran already. */
export function answerPreflight(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('allow', ALLOWED_METHODS);
  if (reply.hasHeader('access-control-allow-origin')) reply.headers(preflightHeaders(request.headers['access-control-request-headers']));
  return reply.code(204).send();
}

/** Headers of a preflight answer (D16), on top of applyCors's. */
export function preflightHeaders(requestedHeaders: string | undefined): Record<string, string> {
  const granted = ['Authorization'];
  for (const raw of (requestedHeaders ?? '').split(',')) {
    const name = raw.trim().toLowerCase();
    if (name !== '' && name !== 'authorization' && SAFE_REQUEST_HEADERS.has(name)) granted.push(name);
  }
  return {
    'access-control-allow-methods': ALLOWED_METHODS,
    'access-control-allow-headers': granted.join(', '),
    'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
  };
}
