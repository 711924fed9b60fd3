import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { TObject } from 'typebox';
import type { AuthenticatedKey } from '../../auth/authenticate.js';
import type { ConnectionKeys } from '../../auth/connection-keys.js';
import { ApiError, ERROR_STATUS, notFound } from '../../core/api-error.js';
import type { Country } from '../../core/countries.js';
import { ALLOWED_METHODS, answerPreflight } from '../../cors/cors.js';
import type { RateLimiter } from '../../ratelimit/limiter.js';
import type { Body, ListingReads } from '../../readmodel/index.js';
import { answer } from './answer.js';
import { ENDPOINTS } from './endpoints/index.js';
import { createGuard, preflightStep, settleRateLimit } from './guard.js';
import { compileQueryValidator } from './query.js';

/**
 * /v1 (spec 4, D22, D23): the endpoints (endpoints/, one declaration each), the one guard every
 * route passes (guard.ts), and the answer (answer.ts). Read top to bottom, a request goes: route
 * (404 unknown path, 405 other method, decided from the endpoints' URLs) -> guard: country (D3,
 * 404), key (401), limit (429), origin (403) -> the endpoint's query parameters (400, its schema's
 * validator) -> its read (404) -> 200 with an ETag, or a free 304 (D21). Preflights answer with the
 * country step only (D16).
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
  const preflight = preflightStep(opts, answerPreflight);

  // The querystring schema of an endpoint is its validator (D7's rules, query.ts): Fastify runs it
  // after the guard's onRequest step, so a malformed parameter is a 400 only for a request that
  // passed the country, key, limit and origin checks (D5). Path parameters are not validated: an id
  // that matches nothing is the read's 404 (D11).
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'querystring' ? compileQueryValidator(schema as TObject) : () => true));
  for (const endpoint of ENDPOINTS) {
    const handler: RouteHandlerMethod = (request, reply) => {
      const read = endpoint.read(opts.reads, request.apiKey!.tenant, request.query as never, request.params as never);
      const respond = (body: Body | undefined, readyAtOnce: boolean): FastifyReply | Promise<FastifyReply> | undefined => {
        if (body === undefined) throw notFound(endpoint.notFound?.message ?? 'Not found.', 'listing_not_found');
        return answer(request, reply, body, opts.limiter, readyAtOnce);
      };
      return read instanceof Promise ? read.then((body) => respond(body, false)) : respond(read, true);
    };
    const schema = { ...(endpoint.querystring && { querystring: endpoint.querystring }), ...(endpoint.params && { params: endpoint.params }) };
    // HEAD is the same with no body (Fastify derives it from GET).
    app.get(endpoint.url, { onRequest: guard, schema }, handler);
    // The onRequest step answers; the handler is Fastify's required one, never reached.
    app.options(endpoint.url, { onRequest: preflight }, answerPreflight);
  }

  // An error after the limit step of a conditional request is counted now, and becomes a 429 if
  // the key had no request left (D21: If-None-Match on a request that ends in an error changes
  // nothing). Rethrown, the error goes on to the app's error handler, which formats every error.
  app.setErrorHandler(async (error, request, reply) => {
    if (request.rateLimit?.deferred) await settleRateLimit(request, reply, opts.limiter);
    throw error;
  });
}
