import type { IncomingMessage, RequestListener, Server } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, ERROR_STATUS, errorBody, notFound } from '../core/api-error.js';
import { answerClientError, createFrontServer, MAX_TARGET_LENGTH, requestIdFor, targetProblem } from './front.js';
import { compileProxyTrust, type TrustProxy } from '../core/proxy-trust.js';
import { applyCors } from '../cors/cors.js';
import type { Deprecation } from '../config/index.js';
import { deprecationLookup } from './deprecations.js';
import { healthRoutes } from './health.js';
import { demoImageRoutes } from './demo-images.js';
import { docsRoutes } from './docs.js';
import type { Readiness } from './readiness.js';
import { messageOf } from '../core/outage-log.js';
import { openApiPath } from './openapi.js';
import { openApiRoute } from './openapi-route.js';
import { redactKeys } from '../auth/key-format.js';
import { sentKeyPrefix } from '../auth/authenticate.js';
import { isDatabaseError } from '../storage/index.js';
import { countCompleted, pathExcerpt, RequestLog, requestLine, type CompletionObserver } from './request-log.js';
import { knownPath, methodNotAllowed, v1Routes, type V1Options } from './v1/routes.js';
import { ENDPOINTS } from './v1/endpoints/index.js';
import { parseQueryString, queryBoundProblem } from './v1/query.js';

export interface AppOptions extends V1Options {
  logger: FastifyBaseLogger;
  /** TRUST_PROXY: whose forwarded headers are believed; gives `request.ip`, the host and the request id. */
  trustProxy: TrustProxy;
  /** Another app served on the API's port for one host name (the dashboard; see front.ts). */
  virtualHost?: { name: string; handler: () => RequestListener };
  /** Readiness (/readyz), which also tells whether a failed request is part of a database outage. */
  readiness: Readiness;
  /** Told of every completed answer (usage counting, metrics; issue 12), by the request log. */
  completion?: readonly CompletionObserver[];
  /** API_DEPRECATIONS (D29): the path prefixes whose answers announce their deprecation; none by default. */
  deprecations?: readonly Deprecation[];
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const deprecations = opts.deprecations ?? [];
  // A prefix that covers no endpoint stops the start (a ConfigError: one line from the CLI), before anything listens.
  const deprecated = deprecationLookup(deprecations, ENDPOINTS.map((endpoint) => endpoint.url));
  const app = createFastify(opts, deprecated);
  const routeMiss = routeMissFor(ENDPOINTS.map((endpoint) => endpoint.url));

  // Every response: its request id (D19), for browsers the CORS headers that let their code read
  // it, errors included (D18), and under a deprecated prefix the D29 headers. The literal origin
  // "null" gets no CORS headers.
  // Synchronous (a callback, not an async function): no promise and no microtask per request.
  app.addHook('onRequest', (request, reply, done) => {
    setCommonHeaders(request, reply, deprecated);
    // A missing, repeated or contradicted Host, or an Expect it cannot meet: refused before anything else.
    // So is a URL over the bounds of what a request may carry (front.ts, v1/query.ts).
    const problem = targetProblem(request.raw) ?? queryBoundProblem(request.query);
    if (problem !== undefined) return done(problem);
    // The route stage (D5) is decided here, before Fastify reads or parses any body on its
    // not-found route: a method the API does not serve is 405 and an unknown path 404, whatever
    // the request carries (a malformed JSON body, a 2 MB body, a method with no route at all).
    done(request.is404 ? routeMiss(request, reply) : undefined);
  });

  // The code, message and reason of an error answer, for the request's log line (request-log.ts)
  // and the failed-request list of the dashboard (src/usage); for a 401 on a key that exists, that
  // key. The reason and the key are never sent (api-error.ts).
  app.decorateRequest('errorCode', null);
  app.decorateRequest('errorMessage', null);
  app.decorateRequest('errorReason', null);
  app.decorateRequest('knownKey', null);
  app.decorateRequest('sentKeyPrefix', null);
  app.setErrorHandler(errorHandler(opts.readiness));
  // The API reads no request body (issue 40 item 3): every answer is decided before one would be
  // read (405 and 404 above, preflights in their route's onRequest step), and no parser is left
  // for a route to run on one by mistake.
  app.removeAllContentTypeParsers();

  // Reached only if the onRequest hook above let a not-found request through (it never does).
  app.setNotFoundHandler(async (request, reply) => {
    throw routeMiss(request, reply);
  });

  // Polled every few seconds by load balancers: their request lines are written at debug.
  await app.register(healthRoutes, { readiness: opts.readiness, logLevel: 'debug' });
  // The OpenAPI document with this deployment's servers (openapi-route.ts), its interactive
  // reference (docs.ts) and the demo listings' photos (demo-images.ts): any host, no key.
  await app.register(openApiRoute, { apiDomain: opts.apiDomain, countries: opts.countries, deprecations });
  await app.register(docsRoutes);
  await app.register(demoImageRoutes);
  await app.register(v1Routes, opts);
  return app;
}

/** The Fastify instance, on the front server (front.ts), with the request log as its log controller. */
function createFastify(opts: AppOptions, deprecated: DeprecationLookup): FastifyInstance {
  const requestLog = new RequestLog(opts.logger, opts.completion);
  const trust = compileProxyTrust(opts.trustProxy);
  let front: Server | undefined;
  return Fastify({
    loggerInstance: opts.logger,
    logController: requestLog,
    // One rule for request.ip (the log's client_address, usage records), host and protocol.
    trustProxy: trust,
    genReqId: (req: IncomingMessage) => requestIdFor(req, trust),
    // No child logger per request (pino's child() was a measurable share of a cached answer's
    // cost): the request id is written as a field of each line instead (request-log.ts).
    childLoggerFactory: (logger) => logger,
    serverFactory: (handler) => (front = createFrontServer(handler, { trust, logger: opts.logger, virtualHost: opts.virtualHost })),
    // Shutdown drains connections itself, with a time limit (front.ts drainServer).
    forceCloseConnections: false,
    // Any id that fits in a URL fits here: a long id is one more id the key cannot see (D11).
    routerOptions: { maxParamLength: MAX_TARGET_LENGTH, querystringParser: parseQueryString },
    // In-flight and keep-alive requests are answered normally while the server drains.
    return503OnClosing: false,
    // The server is made (serverFactory) before any connection can fail.
    clientErrorHandler: (error: Error & { code?: string }, socket) => answerClientError(error, socket, front!, opts.logger),
    // Malformed URLs and the like, found before routing: JSON like everything else (D6), never
    // echoing a key (D20), and logged with their request id like every response (D19): Fastify
    // does not run the request log for these.
    frameworkErrors: (error, request, reply: FastifyReply) => {
      setCommonHeaders(request, reply, deprecated);
      request.errorCode = 'bad_request';
      request.errorReason = 'malformed_request';
      reply.raw.once('finish', () => {
        const elapsedMs = reply.elapsedTime;
        requestLog.writeLine(requestLine(request, reply, null, elapsedMs));
        countCompleted(opts.completion ?? [], request, reply, null, elapsedMs);
      });
      // The framework's message would echo the whole URL: say what is wrong without it.
      void reply.code(400).type('application/json; charset=utf-8').send(errorBody('bad_request', 'Malformed request URL.'));
    },
  });
}

/** D5 route stage: a path of the route table asked with another method is 405; any other path 404. */
function routeMissFor(urls: readonly string[]): (request: FastifyRequest, reply: FastifyReply) => ApiError {
  const isKnownPath = knownPath(urls);
  const served = urls.map((url) => `GET ${openApiPath(url)}`);
  return (request, reply) =>
    isKnownPath(request.url)
      ? methodNotAllowed(request, reply)
      : notFound(`No route ${request.method} ${pathExcerpt(request.url)}. The API serves ${served.slice(0, -1).join(', ')} and ${served.at(-1)!}.`, 'unknown_route');
}

/** Every error answer: JSON (D6) with the code, message and reason recorded on the request (see buildApp). */
function errorHandler(readiness: Readiness) {
  return (error: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (error instanceof ApiError) {
      request.errorCode = error.code;
      request.errorMessage = error.message;
      request.errorReason = error.reason;
      request.knownKey = error.knownKey;
      return reply.code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8').send(errorBody(error.code, error.message));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (oversized or malformed requests): JSON like the rest (D6).
      request.errorCode = 'bad_request';
      request.errorMessage = redactKeys(error.message);
      request.errorReason = 'malformed_request';
      return reply.code(status).type('application/json; charset=utf-8').send(errorBody('bad_request', request.errorMessage));
    }
    request.errorCode = 'internal_error';
    noteWhatWasKnown(request);
    // During a database outage every request that needs it fails the same way: the outage is
    // logged once (readiness.ts), and each failure is a debug line with the error's message, not
    // an error line with its stack (issue 30 item 5). Anything else is an error line as before.
    readiness.explainsFailure().then(
      (outage) =>
        outage
          ? request.log.debug({ reqId: request.id, error: messageOf(error) }, 'request failed: the database is unavailable')
          : request.log.error({ reqId: request.id, err: error }, 'request failed'),
      () => request.log.error({ reqId: request.id, err: error }, 'request failed'),
    );
    request.errorMessage = `Something went wrong on our side; retry with exponential backoff. Request id: ${request.id}.`;
    // Which dependency failed, when one did (issue 40 item 10).
    request.errorReason = isDatabaseError(error) ? 'database_unavailable' : 'internal_error';
    return reply.code(ERROR_STATUS.internal_error).type('application/json; charset=utf-8').send(errorBody('internal_error', request.errorMessage));
  };
}

/**
 * A request that failed before its key was trusted (the database away while the key was looked
 * up): its log line still names the key it presented, by the display prefix of a well-formed key
 * (D20), as much as was known before the failure (issue 40 item 10).
 */
function noteWhatWasKnown(request: FastifyRequest): void {
  if (request.apiKey == null && request.knownKey == null) request.sentKeyPrefix = sentKeyPrefix(request.headers.authorization) ?? null;
}

type DeprecationLookup = ReturnType<typeof deprecationLookup>;

function setCommonHeaders(request: FastifyRequest, reply: FastifyReply, deprecated: DeprecationLookup): void {
  reply.header('x-request-id', request.id);
  reply.header('vary', 'Origin');
  reply.header('x-content-type-options', 'nosniff');
  applyCors(request, reply);
  if (deprecated !== undefined) {
    const headers = deprecated(request);
    if (headers !== undefined) reply.headers(headers);
  }
}
