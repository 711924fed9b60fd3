import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { authenticate, type AuthenticatedKey } from '../../auth/authenticate.js';
import type { ConnectionKeys } from '../../auth/connection-keys.js';
import { redactedExcerpt } from '../../auth/key-format.js';
import { ApiError, ERROR_STATUS, notFound, type ErrorReason } from '../../core/api-error.js';
import { countryHostTable, type Country } from '../../core/countries.js';
import { normalizeOrigin } from '../../cors/origin.js';
import { rateLimitHeaders, type RateLimitDecision, type RateLimiter } from '../../ratelimit/limiter.js';
import type { ListingReads } from '../../readmodel/index.js';
import { headerCount } from '../request-target.js';

/**
 * The guard every /v1 route passes, as named steps in the order of D5 (the route stage, 404 and
 * 405, is decided before it by the router). Each step is synchronous when what it needs is in
 * memory (a cached key, an in-process limiter, a cached origin), so a hot request costs no promise;
 * a step that has to wait returns one and the next step runs after it.
 *
 * country (D3, 404) -> key (D5, 401) -> limit (D14, D15, 429) -> origin (D17, 403)
 */
export interface GuardOptions {
  reads: ListingReads;
  limiter: RateLimiter;
  countries: readonly Country[];
  apiDomain: string;
  defaultRateLimit: number;
  /** Called for every request that passes the 401 stage (buffered last-used time). */
  onKeyUsed(key: AuthenticatedKey): void;
  /** The key each connection presented last (auth/connection-keys.ts). */
  connectionKeys: ConnectionKeys;
}

/**
 * The rate-limit state of a request. A conditional request (If-None-Match) is not counted by the
 * guard: it may end as a free 304 (D21). Its count is settled when its answer is known to be
 * anything else (answer.ts, and the error handler), and that answer becomes a 429 if the key has
 * no request left, exactly as D5 would have had it.
 */
export interface RateLimitState {
  decision: RateLimitDecision;
  /** True while the request has been looked at but not counted (a conditional request). */
  deferred: boolean;
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The host's country (D3), once the country step passed. */
    country: Country | null;
    /** Set once the key is trusted (D5 401 stage); logged by its display prefix only (D20). */
    apiKey: AuthenticatedKey | null;
    rateLimit: RateLimitState | null;
  }
}

type Step = (request: FastifyRequest, reply: FastifyReply) => void | Promise<void>;

/** Runs steps in order; synchronously as long as they are. */
function pipeline(steps: readonly Step[]): onRequestHookHandler {
  return function guard(request, reply, done) {
    let i = 0;
    const next = (): void => {
      while (i < steps.length) {
        let result: void | Promise<void>;
        try {
          result = steps[i++]!(request, reply);
        } catch (error) {
          done(error as Error);
          return;
        }
        if (result instanceof Promise) {
          result.then(next, done);
          return;
        }
      }
      done();
    };
    next();
  };
}

export const rateLimited = (d: RateLimitDecision) =>
  new ApiError(ERROR_STATUS.rate_limited, 'rate_limited', `Rate limit of ${d.limit} requests per minute exceeded; retry after ${d.retryAfter} s.`, {}, 'rate_limited');

/**
 * Counts a request whose counting was deferred (see RateLimitState): its rate-limit headers become
 * those of the count, and a refusal is thrown as the 429 it is.
 */
export function settleRateLimit(request: FastifyRequest, reply: FastifyReply, limiter: RateLimiter): void | Promise<void> {
  const state = request.rateLimit;
  if (state === null || !state.deferred) return;
  state.deferred = false;
  const apply = (decision: RateLimitDecision) => {
    state.decision = decision;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) throw rateLimited(decision);
  };
  const decision = limiter.consume(state.keyId, state.decision.limit);
  return decision instanceof Promise ? decision.then(apply) : apply(decision);
}

/** D3: the host picks the country; a host that serves no country is not an API (404). */
function countryStep(opts: Pick<GuardOptions, 'countries' | 'apiDomain'>): Step {
  const hosts = countryHostTable(opts.countries, opts.apiDomain);
  return (request) => {
    // A Host sent as the table has it (lowercase, no port: nearly every request) is found as sent,
    // without Fastify's `hostname` (which splits the port off) and a lowercasing: about 100 ns.
    const found = hosts.get(request.host) ?? hosts.get(request.hostname.toLowerCase());
    if (found === undefined) {
      throw notFound(`No API is served at host "${redactedExcerpt(request.hostname, 100)}"; use the API host of your key's country.`, 'unknown_host');
    }
    request.country = found;
  };
}

export function createGuard(opts: GuardOptions): onRequestHookHandler {
  const country = countryStep(opts);

  const accept = (request: FastifyRequest, found: AuthenticatedKey) => {
    request.apiKey = found;
    opts.onKeyUsed(found);
  };

  /**
   * D5 401 stage: present, well-formed, known, not revoked, this host's country (D3, D4). The
   * same header as the connection's last request is the same key, while nothing changed since.
   */
  const key: Step = (request) => {
    const sent = headerCount(request.raw, 'authorization') > 1 ? request.raw.headersDistinct.authorization : request.headers.authorization;
    // One header, on a connection (Node sets it on every request it parsed): recalled or remembered.
    const connection: object | null = request.raw.socket ?? null;
    const header = typeof sent === 'string' && connection !== null ? sent : undefined;
    if (header !== undefined) {
      const remembered = opts.connectionKeys.recall(connection!, header, request.country!);
      if (remembered !== undefined) return accept(request, remembered);
    }
    const trusted = authenticate(sent, request.country!, opts.reads);
    if (trusted instanceof Promise) return trusted.then((found) => accept(request, found));
    if (header !== undefined) opts.connectionKeys.remember(connection!, header, trusted);
    accept(request, trusted);
  };

  /** D14, D15 (429; the headers on every answer from here on), and D21's free 304 for conditional requests. */
  const limit: Step = (request, reply) => {
    const apiKey = request.apiKey!;
    const perMinute = apiKey.rateLimitPerMinute ?? opts.defaultRateLimit;
    const conditional = request.headers['if-none-match'] !== undefined;
    const decided = conditional ? opts.limiter.peek(apiKey.id, perMinute) : opts.limiter.consume(apiKey.id, perMinute);
    const apply = (decision: RateLimitDecision) => {
      request.rateLimit = { decision, deferred: conditional, keyId: apiKey.id };
      reply.headers(rateLimitHeaders(decision, conditional));
      if (!conditional && !decision.allowed) throw rateLimited(decision);
    };
    return decided instanceof Promise ? decided.then(apply) : apply(decided);
  };

  /** D17 (403): only browser calls (with an Origin) are checked; the literal "null" never passes. */
  const origin: Step = (request) => {
    const sent = request.headers.origin;
    if (sent === undefined) return;
    const apiKey = request.apiKey!;
    const refuse = (reason: ErrorReason) => {
      throw new ApiError(
        ERROR_STATUS.origin_not_allowed,
        'origin_not_allowed',
        `The origin ${JSON.stringify(redactedExcerpt(sent, 200))} is not registered for this key's account in country "${apiKey.country}". Register it in the dashboard (Settings > Developer > Failed requests lists this request with a button to allow the origin), or call the API from your server.`,
        {},
        reason,
      );
    };
    if (sent === 'null') return refuse('null_origin');
    const normalized = normalizeOrigin(sent);
    if (normalized === undefined) return refuse('malformed_origin');
    const allowed = opts.reads.isOriginAllowed(apiKey.accountId, apiKey.country, normalized);
    if (allowed instanceof Promise) return allowed.then((ok) => (ok ? undefined : refuse('origin_not_registered')));
    if (!allowed) refuse('origin_not_registered');
  };

  return pipeline([country, key, limit, origin]);
}

/**
 * A preflight's onRequest step: the country step alone (preflights are answered per host, D3, but
 * carry no key, D16), then `answer`, in the hook itself: after the hook Fastify would look for a
 * parser of the body a preflight may carry, and the API reads no body (issue 40 item 3).
 */
export function preflightStep(opts: Pick<GuardOptions, 'countries' | 'apiDomain'>, answer: (request: FastifyRequest, reply: FastifyReply) => unknown): onRequestHookHandler {
  const country = countryStep(opts);
  return (request, reply, done) => {
    try {
      country(request, reply);
    } catch (error) {
      done(error as Error);
      return;
    }
    // Answered: `done` is not called, so Fastify goes no further with the request.
    answer(request, reply);
  };
}
