import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { AuthenticatedKey } from '../../auth/authenticate.js';
import type { ConnectionKeys } from '../../auth/connection-keys.js';
import { ApiError, ERROR_STATUS, notFound } from '../../core/api-error.js';
import type { Country } from '../../core/countries.js';
import { canonicalUuid } from '../../core/formats.js';
import { ALLOWED_METHODS, answerPreflight } from '../../cors/cors.js';
import type { RateLimiter } from '../../ratelimit/limiter.js';
import type { Body, ListingReads, Tenant } from '../../readmodel/index.js';
import { answer } from './answer.js';
import { countryOnly, createGuard, settleRateLimit } from './guard.js';
import { parseFeedParams, parseListParams, type QueryValue } from './params.js';

/**
 * /v1 (spec 4, D22, D23): the route table, the one guard every route passes (guard.ts), and the answer
 * (answer.ts). Read top to bottom, a request goes: route (404 unknown path, 405 other method,
 * decided by the router from this table) -> guard: country (D3, 404), key (401), limit (429),
 * origin (403) -> the route's parameters (400) -> its look-up (404) -> 200 with an ETag, or a free
 * 304 (D21). Preflights answer with the country step only (D16).
 */
export interface V1Options {
  reads: ListingReads;
  limiter: RateLimiter;
  countries: readonly Country[];
  apiDomain: string;
  defaultRateLimit: number;
  onKeyUsed(key: AuthenticatedKey): void;
  connectionKeys: ConnectionKeys;
}

interface Route {
  url: string;
  /** The answer of a request that passed the guard: a body, or an ApiError thrown. */
  read(request: FastifyRequest, tenant: Tenant): Body | undefined | Promise<Body | undefined>;
  /** Said when `read` has nothing (a 404). */
  notFound?: string;
}

export function routeTable(reads: ListingReads): Route[] {
  return [
    {
      url: '/v1/listings',
      read: (request, tenant) => {
        // D7, D23 -> 400
        const { page, perPage, filter, sort, view } = parseListParams(request.query as Record<string, QueryValue>);
        return reads.listPage(tenant, page, perPage, view === '' ? undefined : { filter, sort, key: view });
      },
    },
    {
      // D22. A static segment: the router prefers it to `/v1/listings/:id` below.
      url: '/v1/listings/changes',
      read: (request, tenant) => {
        const { cursor, limit } = parseFeedParams(request.query as Record<string, QueryValue>); // 400
        return reads.changes(tenant, cursor, limit);
      },
    },
    {
      url: '/v1/listings/:id',
      read: (request, tenant) => {
        // D11: an id that is not a UUID is just another id the key cannot see.
        const id = canonicalUuid((request.params as { id: string }).id);
        return id === undefined ? undefined : reads.detail(tenant, id);
      },
      notFound: 'No active listing with this id is visible to this key.',
    },
  ];
}

/**
 * The URLs of the table (and of any other scope's table) as one matcher: the router's 405 rule (D5,
 * D6). A parameter may be empty, as the router has it (`/v1/listings/` is the detail route with an
 * empty id), so that every path GET answers is a path other methods get 405 on.
 */
export function knownPath(urls: readonly string[]): (url: string) => boolean {
  const patterns = urls.map((url) => new RegExp(`^${url.replace(/:[A-Za-z]+/g, '[^/?]*')}(\\?|$)`));
  return (url) => patterns.some((p) => p.test(url));
}

/** A known path asked with a method the API does not serve (D5, D6): 405 with Allow, before any other check. */
export function methodNotAllowed(request: FastifyRequest, reply: FastifyReply): ApiError {
  reply.header('allow', ALLOWED_METHODS);
  return new ApiError(ERROR_STATUS.method_not_allowed, 'method_not_allowed', `Method ${request.method} is not allowed here; use GET, HEAD or OPTIONS.`, {}, 'method_not_allowed');
}

export async function v1Routes(app: FastifyInstance, opts: V1Options): Promise<void> {
  app.decorateRequest('country', null);
  app.decorateRequest('apiKey', null);
  app.decorateRequest('rateLimit', null);
  const guard = createGuard(opts);
  const preflightGuard = countryOnly(opts);

  for (const route of routeTable(opts.reads)) {
    const handler: RouteHandlerMethod = (request, reply) => {
      const read = route.read(request, request.apiKey!.tenant);
      const respond = (body: Body | undefined): FastifyReply | Promise<FastifyReply> => {
        if (body === undefined) throw notFound(route.notFound ?? 'Not found.', 'listing_not_found');
        return answer(request, reply, body, opts.limiter);
      };
      return read instanceof Promise ? read.then(respond) : respond(read);
    };
    // HEAD is the same with no body (Fastify derives it from GET).
    app.get(route.url, { onRequest: guard }, handler);
    app.options(route.url, { onRequest: preflightGuard }, answerPreflight);
  }

  // An error after the limit step of a conditional request is counted now, and becomes a 429 if
  // the key had no request left (D21: If-None-Match on a request that ends in an error changes
  // nothing). Rethrown, the error goes on to the app's error handler, which formats every error.
  app.setErrorHandler(async (error, request, reply) => {
    if (request.rateLimit?.deferred) await settleRateLimit(request, reply, opts.limiter);
    throw error;
  });
}
