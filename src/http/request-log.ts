import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactedExcerpt } from '../auth/key-format.js';
import type { ErrorCode, ErrorReason, KnownKey } from '../core/api-error.js';
import { requestLineWriter, type Logger, type RequestLineFields, type RequestLineWriter } from '../core/logger.js';

/** The path of a request as it may be logged: no query string, no key (D20), at most 300 characters. */
export function loggablePath(url: string): string {
  const query = url.indexOf('?');
  return redactedExcerpt(query === -1 ? url : url.slice(0, query), 300);
}

/** The path as it may be echoed in an error message: redacted, and short (issue 8, item 9). */
export function pathExcerpt(url: string, max = 80): string {
  const path = redactedExcerpt(url.split('?', 1)[0]!, max + 1);
  return path.length <= max ? path : `${path.slice(0, max)}…`;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code of an error answer (the `error` of its body), set by the app's error handler. */
    errorCode: ErrorCode | null;
    /** For a 401 on a key that exists (revoked, another country's): that key, as it may be logged (D20). */
    knownKey: KnownKey | null;
    /** For a 500 before the key was trusted: the display prefix of the well-formed key it sent (D20). */
    sentKeyPrefix: string | null;
  }
}

/** Longest host logged: a DNS name is at most 253 characters, and a port follows. */
const MAX_HOST = 260;
/** Longest origin logged (as the failed requests keep it, src/usage). */
const MAX_ORIGIN = 200;

/**
 * The fields of the one log line of a request (D19, D20). `route` is null for a request that
 * matched no route (404, or a malformed URL answered before routing). What the client chose (the
 * path, the host, the origin) is redacted (D20); the key is named by its stored id, its account
 * and its display prefix: past the 401 stage, or for a 401 on a key that exists.
 */
export function requestLine(request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs = reply.elapsedTime): RequestLineFields {
  // Undefined outside /v1, which decorates these (routes.ts).
  const key = request.apiKey ?? request.knownKey ?? null;
  const host = request.host;
  const origin = request.headers.origin;
  return {
    // The app's loggers are not per-request children (see app.ts): the id is a field of the line.
    reqId: request.id,
    method: request.method,
    route,
    path: loggablePath(request.url),
    status: reply.statusCode,
    ms: Math.round(elapsedMs * 100) / 100,
    key_prefix: key?.prefix ?? request.sentKeyPrefix ?? null,
    // Computed by the app's TRUST_PROXY rule (core/proxy-trust.ts); undefined once the peer is gone.
    client_address: request.ip ?? null,
    // X-Forwarded-Host under TRUST_PROXY, as the guard's country step reads it.
    host: host ? redactedExcerpt(host, MAX_HOST) : null,
    country: request.country ?? null,
    origin: typeof origin === 'string' ? redactedExcerpt(origin, MAX_ORIGIN) : null,
    key_id: key?.id ?? null,
    account_id: key?.accountId ?? null,
    error: request.errorCode ?? null,
    reason: request.errorReason ?? null,
  };
}

/**
 * The line of a request answered outside the apps (front.ts: CONNECT, a request Node could not
 * parse), with the keys of every request line in their order: no route, key or country.
 */
export function unroutedRequestLine(fields: {
  reqId: string;
  method: string | null;
  status: number;
  client_address: string | null;
  host: string | undefined;
  error: ErrorCode;
  reason: ErrorReason;
}) {
  return {
    reqId: fields.reqId,
    method: fields.method,
    route: null,
    path: null,
    status: fields.status,
    ms: 0,
    key_prefix: null,
    client_address: fields.client_address,
    host: fields.host ? redactedExcerpt(fields.host, MAX_HOST) : null,
    country: null,
    origin: null,
    key_id: null,
    account_id: null,
    error: fields.error,
    reason: fields.reason,
  };
}

/** Told of every answer of the API's app once it is complete: usage counting and metrics (issue 12). Memory only. */
export interface CompletionObserver {
  requestCompleted(request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs: number): void;
}

/**
 * One structured line per request, written when the response is finished (issue 2, item 9;
 * issue 30, item 5): request id (as `reqId`, D19), method, route, path, status, latency, host and
 * country, client address (`request.ip`, which TRUST_PROXY decides), Origin, the key's id, account
 * and display prefix (never the key, its hash or any header, D20), and an error answer's code and
 * reason. Replaces Fastify's two lines per request. At info, or at the route's `logLevel` when
 * that is debug (the health checks, app.ts).
 *
 * It is also the one place where a finished request is counted (`observers`: usage per key and
 * the metrics, issue 12), which must never fail the process: a fault there is logged.
 */
export class RequestLog extends LogController {
  /** Writes a line of `requestLine`'s fields: as pino would, for less (core/logger.ts). */
  readonly writeLine: RequestLineWriter;

  constructor(logger: FastifyBaseLogger, private readonly observers: readonly CompletionObserver[] = []) {
    super();
    this.writeLine = requestLineWriter(logger as Logger, 'request');
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Read once: each read of routeOptions builds an object, and the clock is read once.
    const options = request.routeOptions;
    const route = options.url ?? null;
    const elapsedMs = reply.elapsedTime;
    const line = requestLine(request, reply, route, elapsedMs);
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else this.writeLine(line, options.logLevel === 'debug' ? 'debug' : 'info');
    countCompleted(this.observers, request, reply, route, elapsedMs);
  }

  /** 404s are logged by requestCompleted like every other response. */
  override routeNotFound(): void {}
}

/** Tells each observer; a fault in one is logged, never thrown into the response's events. */
export function countCompleted(
  observers: readonly CompletionObserver[],
  request: FastifyRequest,
  reply: FastifyReply,
  route: string | null,
  elapsedMs: number,
): void {
  for (const observer of observers) {
    try {
      observer.requestCompleted(request, reply, route, elapsedMs);
    } catch (error) {
      reply.log.error({ reqId: request.id, err: error }, 'could not count a completed request');
    }
  }
}
