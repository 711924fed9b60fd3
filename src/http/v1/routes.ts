import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, RouteHandlerMethod } from 'fastify';
import type { TObject } from '#typebox';
import { authenticate, type AuthenticatedKey } from '../../auth/authenticate.js';
import type { ConnectionKeys } from '../../auth/connection-keys.js';
import { redactedExcerpt } from '../../auth/key-format.js';
import { ApiError, ERROR_STATUS, notFound, type ErrorReason } from '../../core/api-error.js';
import { countryHostTable, type Country } from '../../core/countries.js';
import { ALLOWED_METHODS, answerPreflight } from '../../cors/cors.js';
import { normalizeOrigin } from '../../cors/origin.js';
import { rateLimitHeaders, type RateLimitDecision, type RateLimiter } from '../../ratelimit/limiter.js';
import type { Body, ListingReads } from '../../readmodel/index.js';
import { sentAuthorization } from '../front.js';
import { ENDPOINTS } from './endpoints/index.js';
import { compileQueryValidator } from './query.js';

/**
 * /v1 (spec 4, D22, D23), the request path in one file, in the order a request takes it: the
 * endpoints (endpoints/, one declaration each) registered with the one guard every route passes,
 * then the guard's steps, then the answer. Route (404 unknown path, 405 other method, decided
 * from the endpoints' URLs by the app's hook) -> guard: country (D3, 404), key (401), limit (429),
 * origin (403) -> the endpoint's query parameters (400, its schema's validator) -> its read (404)
 * -> 200 with an ETag, or a free 304 (D21). Preflights answer with the country step only (D16).
 *
 * Each guard step is synchronous when what it needs is in memory (a cached key, an in-process
 * limiter, a cached origin), so a hot request costs no promise; a step that has to wait returns one
 * and the next step runs after it.
 */
export interface V1Options {
  reads: ListingReads;
  limiter: RateLimiter;
  countries: readonly Country[];
  apiDomain: string;
  defaultRateLimit: number;
  /** Told of every request that passes the 401 stage (`LastUsedTracker` of usage/index.ts: buffered last-used times). */
  lastUsed: { touch(keyId: string): void };
  /** The key each connection presented last (auth/connection-keys.ts). */
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

/* The guard: country (D3, 404) -> key (D5, 401) -> limit (D14, D15, 429) -> origin (D17, 403). */

/**
 * The rate-limit state of a request. A conditional request (If-None-Match) is not counted by the
 * guard: it may end as a free 304 (D21). Its count is settled when its answer is known to be
 * anything else (`answer`, and the error handler), and that answer becomes a 429 if the key has
 * no request left, exactly as D5 would have had it.
 */
interface RateLimitState {
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

const rateLimited = (d: RateLimitDecision) =>
  new ApiError(ERROR_STATUS.rate_limited, 'rate_limited', `Rate limit of ${d.limit} requests per minute exceeded; retry after ${d.retryAfter} s.`, {}, 'rate_limited');

/**
 * Counts a request whose counting was deferred (see RateLimitState): its rate-limit headers become
 * those of the count, and a refusal is thrown as the 429 it is.
 */
function settleRateLimit(request: FastifyRequest, reply: FastifyReply, limiter: RateLimiter): void | Promise<void> {
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
function countryStep(opts: Pick<V1Options, 'countries' | 'apiDomain'>): Step {
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

function createGuard(opts: V1Options): onRequestHookHandler {
  const country = countryStep(opts);

  const accept = (request: FastifyRequest, found: AuthenticatedKey) => {
    request.apiKey = found;
    opts.lastUsed.touch(found.id);
  };

  /**
   * D5 401 stage: present, well-formed, known, not revoked, this host's country (D3, D4). The
   * same header as the connection's last request is the same key, while nothing changed since.
   */
  const key: Step = (request) => {
    const sent = sentAuthorization(request.raw);
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
function preflightStep(opts: Pick<V1Options, 'countries' | 'apiDomain'>, answer: (request: FastifyRequest, reply: FastifyReply) => unknown): onRequestHookHandler {
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

/* The answer. */

const JSON_TYPE = 'application/json; charset=utf-8';
/** D21: a browser may keep an answer but must revalidate it every time. */
export const CACHE_CONTROL = 'private, no-cache';

/**
 * `If-None-Match` (D21): a comma-separated list of entity tags, weak (`W/"..."`) or strong, or `*`.
 * Matches when the list holds this body's tag (compared weakly, as RFC 9110 says for this header)
 * or is `*`.
 */
function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const wanted = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const raw of header.split(',')) {
    const tag = raw.trim();
    if (tag === '*') return true;
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === wanted) return true;
  }
  return false;
}

/**
 * A 200 answer, or D21's 304: a conditional request whose tag matches gets no body, its tag,
 * `Cache-Control` and the rate-limit headers of a look (it is free, even with no request left);
 * any other answer is counted first (it may become a 429, as D5 says) and sent with its tag.
 * A 200 whose body was `readyAtOnce` (cached: no I/O in this request) goes out at the end of the
 * turn with the turn's other such answers (`sendAtEndOfTurn`, below); the handler then returns nothing, and
 * Fastify waits for the send.
 */
function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  body: Body,
  limiter: RateLimiter,
  readyAtOnce = false,
): FastifyReply | Promise<FastifyReply> | undefined {
  const send = (status: 200 | 304) => {
    // The tag belongs to this body: set only on the answers that carry it or stand for it.
    reply.header('etag', body.etag);
    reply.header('cache-control', CACHE_CONTROL);
    return status === 304 ? reply.code(304).send() : reply.type(JSON_TYPE).send(body.bytes);
  };
  if (request.rateLimit?.deferred) {
    if (ifNoneMatchHolds(request.headers['if-none-match'], body.etag)) return send(304);
    const settled = settleRateLimit(request, reply, limiter);
    if (settled instanceof Promise) return settled.then(() => send(200));
  }
  if (!readyAtOnce || !END_OF_TURN) return send(200);
  sendAtEndOfTurn(reply, () => send(200));
  return undefined;
}

/**
 * Answers that are ready in the same turn of the event loop are sent together at its end, through
 * Fastify's public `reply.send`, from one `setImmediate` per turn: the turn's answers reach the
 * kernel back to back, so the clients' side is woken once for the batch rather than once per
 * answer as each is made (issue 41; docs/design/end-of-turn-answers.md has the invariant and the
 * A/B). Only answers ready at once are deferred; one that waited for I/O is sent when it is ready.
 *
 * `LISTINGS_END_OF_TURN=off` (read once, at start) sends each answer at once: the switch of the
 * design record's A/B, not an operator setting.
 */
export const END_OF_TURN = process.env.LISTINGS_END_OF_TURN !== 'off';

const ready: Array<{ reply: FastifyReply; send: () => void }> = [];
let scheduled = false;

function sendAll(): void {
  scheduled = false;
  const batch = ready.splice(0);
  for (const { reply, send } of batch) {
    try {
      send();
    } catch (error) {
      // One answer that cannot be sent must not hold back the rest of the turn's: it becomes the
      // error answer of its own request (the app's error handler).
      reply.send(error as Error);
    }
  }
}

/** Sends `reply` (by `send`, which calls `reply.send`) at the end of this turn. */
export function sendAtEndOfTurn(reply: FastifyReply, send: () => void): void {
  ready.push({ reply, send });
  if (!scheduled) {
    scheduled = true;
    setImmediate(sendAll);
  }
}
