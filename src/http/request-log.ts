import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactedExcerpt } from '../auth/key-format.js';
import { requestLineWriter, type Logger, type RequestLineFields } from '../core/logger.js';

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

/**
 * The fields of the one log line of a request (D19, D20). `route` is null for a request that
 * matched no route (404, or a malformed URL answered before routing).
 */
export function requestLine(request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs = reply.elapsedTime): RequestLineFields {
  return {
    // The app's loggers are not per-request children (see app.ts): the id is a field of the line.
    reqId: request.id,
    method: request.method,
    route,
    path: loggablePath(request.url),
    status: reply.statusCode,
    ms: Math.round(elapsedMs * 100) / 100,
    key_prefix: request.apiKey?.prefix ?? null,
    // Computed by the app's TRUST_PROXY rule (core/proxy-trust.ts); undefined once the peer is gone.
    client_address: request.ip ?? null,
  };
}

/** Told of every answer of the API's app once it is complete: usage counting and metrics (issue 12). Memory only. */
export type RequestCompleted = (request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs: number) => void;

/**
 * One structured line per request, written when the response is finished (issue 2, item 9):
 * request id (as `reqId`, D19), method, route, path, status, latency, the key's display prefix
 * (never the key, its hash or any header, D20) and the client address (`request.ip`, which
 * TRUST_PROXY decides; issue 29, item 3). Replaces Fastify's two lines per request.
 *
 * It is also the one place where a finished request is counted (`onCompleted`: usage per key and
 * the metrics, issue 12), which must never fail the process: a fault there is logged.
 */
export class RequestLog extends LogController {
  /** Writes a line of `requestLine`'s fields at level info: as pino would, for less (core/logger.ts). */
  readonly writeLine: (fields: RequestLineFields) => void;

  constructor(logger: FastifyBaseLogger, private readonly onCompleted?: RequestCompleted) {
    super();
    this.writeLine = requestLineWriter(logger as Logger, 'request');
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Read once: each read of routeOptions builds an object, and the clock is read once.
    const route = request.routeOptions.url ?? null;
    const elapsedMs = reply.elapsedTime;
    const line = requestLine(request, reply, route, elapsedMs);
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else this.writeLine(line);
    if (this.onCompleted !== undefined) countCompleted(this.onCompleted, request, reply, route, elapsedMs);
  }

  /** 404s are logged by requestCompleted like every other response. */
  override routeNotFound(): void {}
}

/** Calls the completion hook; a fault in it is logged, never thrown into the response's events. */
export function countCompleted(onCompleted: RequestCompleted, request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs: number): void {
  try {
    onCompleted(request, reply, route, elapsedMs);
  } catch (error) {
    reply.log.error({ reqId: request.id, err: error }, 'could not count a completed request');
  }
}
