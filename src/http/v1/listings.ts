import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type AuthenticatedKey } from '../../auth/authenticate.js';
import { redactKeys } from '../../auth/key-format.js';
import { ApiError, notFound } from '../../core/api-error.js';
import type { Clock } from '../../core/clock.js';
import { countryHostTable, type Country } from '../../core/countries.js';
import { ALLOWED_METHODS, preflightHeaders } from '../../cors/cors.js';
import { canonicalUuid } from '../../core/formats.js';
import { normalizeOrigin } from '../../cors/origin.js';
import { errorSchema, listingSchema, pageSchema } from '../../listings/listing.js';
import { rateLimitHeaders, type RateLimiter } from '../../ratelimit/limiter.js';
import type { Visibility } from '../../storage/index.js';
import { headerCount } from '../request-target.js';
import { parsePageParams, type QueryValue } from './params.js';
import type { ListingReads } from './reads.js';

export interface ListingsRoutesOptions {
  data: ListingReads;
  limiter: RateLimiter;
  clock: Clock;
  countries: readonly Country[];
  apiDomain: string;
  defaultRateLimit: number;
  /** Called for every request that passes the 401 stage (buffered last-used time). */
  onKeyUsed(key: AuthenticatedKey): void;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the key is trusted (D5 401 stage); logged by its display prefix only (D20). */
    apiKey: AuthenticatedKey | null;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';
export const LISTINGS_PATHS = ['/v1/listings', '/v1/listings/:id'] as const;

/**
 * GET /v1/listings and GET /v1/listings/{id} (spec 4.2, 4.3). The whole request path is here, in
 * the order of D5: host (D3, 404) -> key (401) -> rate limit (429) -> origin (403) -> parameters
 * (400) -> look-up (404) -> serialise (200). Route-level 404/405 are decided before, in app.ts.
 */
export async function listingsRoutes(app: FastifyInstance, opts: ListingsRoutesOptions): Promise<void> {
  const { data, limiter, clock } = opts;
  const hosts = countryHostTable(opts.countries, opts.apiDomain);

  app.addSchema(listingSchema);
  app.addSchema(pageSchema);
  app.addSchema(errorSchema);
  app.decorateRequest('apiKey', null);

  /** D3: the host picks the country; a host that serves no country is not an API. */
  function countryOf(request: FastifyRequest): Country {
    const country = hosts.get(request.hostname.toLowerCase());
    if (country === undefined) {
      throw notFound(`No API is served at host "${redactKeys(request.hostname).slice(0, 100)}"; use the API host of your key's country.`);
    }
    return country;
  }

  // D16: a preflight carries no key, so it is answered for any origin and counts against no limit.
  for (const url of LISTINGS_PATHS) {
    app.options(url, async (request, reply) => {
      countryOf(request);
      reply.header('allow', ALLOWED_METHODS);
      if (reply.hasHeader('access-control-allow-origin')) {
        reply.headers(preflightHeaders(request.headers['access-control-request-headers']));
      }
      return reply.code(204).send();
    });
  }

  async function guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const country = countryOf(request); // D3 -> 404
    const sent = headerCount(request.raw, 'authorization') > 1 ? request.raw.headersDistinct.authorization : request.headers.authorization;
    const key = await authenticate(sent, country, data.findKeyByHash); // D5 -> 401
    request.apiKey = key;
    opts.onKeyUsed(key);

    // D14/D15 -> 429. Headers go on every response from here on, errors included.
    const decision = await limiter.consume(key.id, key.rateLimitPerMinute ?? opts.defaultRateLimit);
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${decision.limit} requests per minute exceeded; retry after ${decision.retryAfter} s.`);
    }

    // D17 -> 403: only browser calls (with an Origin) are checked; the literal "null" never passes.
    const origin = request.headers.origin;
    if (origin !== undefined) {
      const normalized = origin === 'null' ? undefined : normalizeOrigin(origin);
      if (normalized === undefined || !(await data.isOriginAllowed(key.accountId, key.country, normalized))) {
        throw new ApiError(
          403,
          'origin_not_allowed',
          `The origin ${JSON.stringify(redactKeys(origin).slice(0, 200))} is not registered for this key's account in country "${key.country}". Register it in the dashboard (Settings > Developer), or call the API from your server.`,
        );
      }
    }
  }

  /** What the key sees (D1) as of now (D10); `now` is formatted only if a query needs it (a cache miss). */
  const visibility = (key: AuthenticatedKey): Visibility => {
    let now: string | undefined;
    return {
      ownerAccountId: key.accountId,
      country: key.country,
      get now() {
        return (now ??= new Date(clock()).toISOString());
      },
    };
  };

  app.get<{ Querystring: Record<string, QueryValue> }>(
    '/v1/listings',
    { onRequest: guard, schema: { response: { 200: { $ref: 'ListingPage#' } } } },
    async (request, reply) => {
      const { page, perPage } = parsePageParams(request.query); // D7 -> 400
      // Serialised by the route's response schema (fast-json-stringify), then possibly cached.
      const body = await data.listBody(visibility(request.apiKey!), page, perPage, (envelope) => reply.serialize(envelope) as string);
      return reply.type(JSON_TYPE).send(body);
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/listings/:id',
    { onRequest: guard, schema: { response: { 200: { $ref: 'Listing#' } } } },
    async (request, reply) => {
      // D11: an id that is not a UUID is just another id the key cannot see.
      const id = canonicalUuid(request.params.id);
      const body = id === undefined ? undefined : await data.detailBody(id, visibility(request.apiKey!), (listing) => reply.serialize(listing) as string);
      if (body === undefined) throw notFound('No active listing with this id is visible to this key.');
      return reply.type(JSON_TYPE).send(body);
    },
  );
}
