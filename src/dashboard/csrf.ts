import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/**
 * CSRF protection for every state-changing request (all of them are POSTs), in two layers:
 *
 * 1. A synchronizer token in every form (`_csrf`). Signed in, it is an HMAC keyed by the session id:
 *    only a page that holds the session cookie (HttpOnly) can have got it from us, it is bound to
 *    that one session, and it needs no storage and no shared server secret, so it is valid on every
 *    instance. Before sign-in (the sign-in form itself, against login CSRF) it is an HMAC keyed by a
 *    random pre-session cookie (double submit).
 * 2. The browser's own word: a POST whose `Origin` is not this dashboard, or whose `Sec-Fetch-Site`
 *    says it came from another site, is refused whatever its token.
 *
 * Session cookies are also SameSite=Strict. @fastify/csrf-protection was considered: with
 * @fastify/cookie it keeps the secret in a cookie and needs a shared `hmacKey` to bind tokens to a
 * session (one more secret to distribute to every instance); its session mode expects
 * @fastify/session. Deriving the token from the database session we already have is smaller.
 */
export const CSRF_FIELD = '_csrf';

function hmac(key: string, purpose: string): string {
  return createHmac('sha256', key).update(purpose).digest('base64url');
}

/** The form token of a signed-in session. */
export function sessionToken(sessionId: string): string {
  return hmac(sessionId, 'listings-dashboard csrf v1');
}

/** A new pre-session secret for the sign-in form's cookie. */
export function newSignInSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The sign-in form's token for a pre-session secret. */
export function signInToken(secret: string): string {
  return hmac(secret, 'listings-dashboard sign-in csrf v1');
}

/** Constant-time comparison of the presented token with the expected one. */
export function tokenMatches(expected: string, presented: unknown): boolean {
  if (typeof presented !== 'string' || presented.length === 0) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * False when the browser says the request came from elsewhere: an `Origin` whose host (and port) is
 * not this dashboard's (the literal `null` included), or `Sec-Fetch-Site` of `cross-site`/`same-site`.
 * The scheme is not compared, so a TLS proxy that does not forward the protocol does not break
 * every form; the token is the main defence. Clients that send neither header rely on the token alone.
 */
export function fromThisSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false; // `null` and anything else that is not an origin
  }
  return /^https?:\/\//i.test(origin) && host.toLowerCase() === request.host.toLowerCase();
}
