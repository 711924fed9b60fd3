import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimiter } from '../../ratelimit/limiter.js';
import type { Body } from '../../readmodel/index.js';
import { END_OF_TURN, sendAtEndOfTurn } from './end-of-turn.js';
import { settleRateLimit } from './guard.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** D21: a browser may keep an answer but must revalidate it every time. */
const CACHE_CONTROL = 'private, no-cache';

/**
 * `If-None-Match` (D21): a comma-separated list of entity tags, weak (`W/"..."`) or strong, or `*`.
 * Matches when the list holds this body's tag (compared weakly, as RFC 9110 says for this header)
 * or is `*`.
 */
export function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
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
 * turn with the turn's other such answers (end-of-turn.ts); the handler then returns nothing, and
 * Fastify waits for the send.
 */
export function answer(
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
