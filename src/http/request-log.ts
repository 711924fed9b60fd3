import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** A key pasted into a URL by mistake must not reach the log (D20). */
const KEY_IN_TEXT = /\b([a-z]{2}_live_)[A-Za-z0-9]+/g;

/** The path of a request as it may be logged or echoed: no query string, no key. */
export function loggablePath(url: string): string {
  return url.split('?', 1)[0]!.slice(0, 300).replace(KEY_IN_TEXT, '$1[redacted]');
}

/**
 * One structured line per request, written when the response is finished (issue 2, item 9):
 * request id (as `reqId`, D19), method, route, path, status, latency and the key's display prefix
 * (never the key, its hash or any header, D20). Replaces Fastify's two lines per request.
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      path: loggablePath(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      key_prefix: request.apiKey?.prefix ?? null,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request');
    else reply.log.info(line, 'request');
  }

  /** 404s are logged by requestCompleted like every other response. */
  override routeNotFound(): void {}
}
