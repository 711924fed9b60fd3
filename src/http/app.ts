import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError } from '../core/api-error.js';
import { ALLOWED_METHODS, corsResponseHeaders, originToEcho } from '../cors/cors.js';
import { healthRoutes } from './health.js';
import { buildOpenApiDocument } from './openapi.js';
import { redactKeys } from '../auth/key-format.js';
import { loggablePath, RequestLog, requestLine } from './request-log.js';
import { listingsRoutes, type ListingsRoutesOptions } from './v1/listings.js';
import { parseQueryString } from './v1/params.js';

export interface AppOptions extends ListingsRoutesOptions {
  logger: FastifyBaseLogger;
  trustProxy: boolean;
  /** Readiness: resolves when the service can answer (the database is reachable). */
  checkReady(): Promise<void>;
}

/**
 * Request ids: `req_` + 16 random hex characters fixed per process + a counter. Unique across
 * instances without the cost of a random UUID per request (D19).
 */
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;
function nextRequestId(): string {
  requestCounter = (requestCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${REQUEST_ID_PREFIX}${requestCounter.toString(36).padStart(6, '0')}`;
}

/** A proxy's request id is reused (D19) only when TRUST_PROXY is set and it looks like an id. */
const FORWARDED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Paths that exist, whatever the method: anything but GET/HEAD/OPTIONS on them is a 405 (D5, D6). */
const KNOWN_PATH = /^\/v1\/listings(\/[^/?]*)?(\?|$)/;

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger,
    logController: new RequestLog(),
    trustProxy: opts.trustProxy,
    genReqId: (req: IncomingMessage) => {
      const forwarded = req.headers['x-request-id'];
      if (opts.trustProxy && typeof forwarded === 'string' && FORWARDED_REQUEST_ID.test(forwarded)) return forwarded;
      return nextRequestId();
    },
    routerOptions: { maxParamLength: 1024, querystringParser: parseQueryString },
    // In-flight and keep-alive requests are answered normally while the server drains.
    return503OnClosing: false,
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => answerClientError(error, socket, opts.logger),
    // Malformed URLs and the like, found before routing: JSON like everything else (D6), never
    // echoing a key (D20), and logged with their request id like every response (D19): Fastify
    // does not run the request log for these.
    frameworkErrors: (error, request, reply: FastifyReply) => {
      setCommonHeaders(request, reply);
      reply.raw.once('finish', () => request.log.info(requestLine(request, reply, null), 'request'));
      void reply.code(400).type('application/json; charset=utf-8').send(JSON.stringify({ error: 'bad_request', message: redactKeys(error.message) }));
    },
  });

  // Every response: its request id (D19) and, for browsers, the CORS headers that let their code
  // read it, errors included (D18). The literal origin "null" gets none.
  app.addHook('onRequest', async (request, reply) => {
    setCommonHeaders(request, reply);
    // D5 route stage: a known path with another method is 405, before any other check.
    if (request.is404 && KNOWN_PATH.test(request.url)) {
      reply.header('allow', ALLOWED_METHODS);
      throw new ApiError(405, 'method_not_allowed', `Method ${request.method} is not allowed here; use GET, HEAD or OPTIONS.`);
    }
  });

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) {
      return reply.code(error.statusCode).headers(error.headers).send({ error: error.code, message: error.message });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own client errors (oversized or malformed requests): JSON like the rest (D6).
      return reply.code(status).send({ error: 'bad_request', message: redactKeys(error.message) });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({
      error: 'internal_error',
      message: `Something went wrong on our side; retry with exponential backoff. Request id: ${request.id}.`,
    });
  });

  app.setNotFoundHandler(async (request, reply) => {
    return reply.code(404).send({
      error: 'not_found',
      message: `No route ${request.method} ${loggablePath(request.url)}. The API serves GET /v1/listings and GET /v1/listings/{id}.`,
    });
  });

  await app.register(healthRoutes, { checkReady: opts.checkReady });
  // The OpenAPI document, outside /v1 and on any host like the health routes, with this
  // deployment's domain and countries in its servers.
  const openApiBody = JSON.stringify(buildOpenApiDocument({ apiDomain: opts.apiDomain, countries: opts.countries }));
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(openApiBody));
  await app.register(listingsRoutes, opts);
  return app;
}

function setCommonHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  reply.header('vary', 'Origin');
  const echo = originToEcho(request.headers.origin);
  if (echo !== undefined) reply.headers(corsResponseHeaders(echo));
}

/**
 * Requests Node cannot parse (bad request line, headers too large) never reach a route; they still
 * get a JSON error (D6) before the connection closes, and a log line with their request id (D19).
 * A connection the client reset gets nothing: there is no one to answer.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket, logger: FastifyBaseLogger): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return;
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const reqId = nextRequestId();
  const body = JSON.stringify({ error: 'bad_request', message: status === 431 ? 'Request headers are too large.' : 'Malformed HTTP request.' });
  socket.end(
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nX-Request-Id: ${reqId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  logger.info({ reqId, method: null, route: null, path: null, status, ms: 0, key_prefix: null, parse_error: error.code ?? null }, 'request');
}
