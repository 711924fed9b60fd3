import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type AuthenticatedKey } from '../../auth/authenticate.js';
import { ApiError, notFound } from '../../core/api-error.js';
import type { Clock } from '../../core/clock.js';
import { countryHostTable, type Country } from '../../core/countries.js';
import { preflightHeaders } from '../../cors/cors.js';
import { normalizeOrigin } from '../../cors/origin.js';
import { errorSchema, listingSchema, pageSchema, toListing } from '../../listings/listing.js';
import { rateLimitHeaders, type RateLimiter } from '../../ratelimit/limiter.js';
import type { ApiKeyRecord, ListingRow, Visibility } from '../../storage/index.js';
import { pageCount, parsePageParams, type QueryValue } from './params.js';

/** What the request path reads; the composition root backs it with the store (and caches). */
export interface ListingsData {
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  isOriginAllowed(accountId: string, country: Country, origin: string): Promise<boolean>;
  page(v: Visibility, limit: number, offset: number): Promise<ListingRow[]>;
  count(v: Visibility): Promise<number>;
  findVisible(id: string, v: Visibility): Promise<ListingRow | undefined>;
}

export interface ListingsRoutesOptions {
  data: ListingsData;
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const ALLOW = 'GET, HEAD, OPTIONS';
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
      throw notFound(`No API is served at host "${request.hostname.slice(0, 100)}"; use the API host of your key's country.`);
    }
    return country;
  }

  // D16: a preflight carries no key, so it is answered for any origin and counts against no limit.
  for (const url of LISTINGS_PATHS) {
    app.options(url, async (request, reply) => {
      countryOf(request);
      reply.header('allow', ALLOW);
      if (reply.hasHeader('access-control-allow-origin')) {
        reply.headers(preflightHeaders(request.headers['access-control-request-headers']));
      }
      return reply.code(204).send();
    });
  }

  async function guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const country = countryOf(request); // D3 -> 404
    const key = await authenticate(request.headers.authorization, country, data.findKeyByHash); // D5 -> 401
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
          `The origin ${JSON.stringify(origin.slice(0, 200))} is not registered for this key's account in country "${key.country}". Register it in the dashboard (Settings > Developer), or call the API from your server.`,
        );
      }
    }
  }

  const visibility = (key: AuthenticatedKey): Visibility => ({
    ownerAccountId: key.accountId,
    country: key.country,
    now: new Date(clock()).toISOString(),
  });

  app.get<{ Querystring: Record<string, QueryValue> }>(
    '/v1/listings',
    { onRequest: guard, schema: { response: { 200: { $ref: 'ListingPage#' } } } },
    async (request) => {
      const { page, perPage } = parsePageParams(request.query); // D7 -> 400
      const v = visibility(request.apiKey!);
      const offset = (page - 1) * perPage;
      const [total, rows] = await Promise.all([data.count(v), data.page(v, perPage, offset)]);
      // D7: a page beyond the last is an empty page with the true total and pages.
      return { items: rows.map(toListing), page, per_page: perPage, total, pages: pageCount(total, perPage) };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/listings/:id',
    { onRequest: guard, schema: { response: { 200: { $ref: 'Listing#' } } } },
    async (request) => {
      const id = request.params.id;
      // D11: an id that is not a UUID is just another id the key cannot see.
      const row = UUID.test(id) ? await data.findVisible(id.toLowerCase(), visibility(request.apiKey!)) : undefined;
      if (row === undefined) throw notFound('No active listing with this id is visible to this key.');
      return toListing(row);
    },
  );
}
