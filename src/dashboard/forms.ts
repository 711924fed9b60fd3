import { createHmac, randomBytes } from 'node:crypto';
import { tokenMatches } from './csrf.js';
import { ABSOLUTE_MS } from './sessions.js';

/**
 * Single-use forms: the create-key form carries a one-time token, and the first submission claims
 * it in the database (store.forms), so a reload of the page that shows the new key, or a second
 * click, mints no second key. The full key itself is never kept anywhere to show again (D20): the
 * answer to a used form only names the key it made.
 *
 * The token is `<issued, ms base 36>.<nonce>.<mac>`: the nonce is random and names the form; the
 * MAC, keyed by the session id like the CSRF token, binds the issue time and nonce to the session,
 * so that a token is good only for the session that got it and only until it expires. That bound
 * is what lets old claims be pruned: a form older than FORM_TTL_MS is refused whether or not its
 * claim is still stored.
 */
export const FORM_FIELD = '_form';

/** A form is good for as long as a session can last (sessions.ts), which ends it first anyway. */
export const FORM_TTL_MS = ABSOLUTE_MS;
/** Claims are kept this long: past the TTL, plus an hour for clocks of instances that disagree. */
export const FORM_CLAIM_RETAIN_MS = FORM_TTL_MS + 60 * 60 * 1000;

const TOKEN = /^([0-9a-z]{1,11})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

function mac(sessionId: string, issued: string, nonce: string): string {
  return createHmac('sha256', sessionId).update(`listings-dashboard single-use form v1.${issued}.${nonce}`).digest('base64url');
}

/** A new form token for this session, issued now. */
export function newFormToken(sessionId: string, nowMs: number): string {
  const issued = nowMs.toString(36);
  const nonce = randomBytes(16).toString('base64url');
  return `${issued}.${nonce}.${mac(sessionId, issued, nonce)}`;
}

/**
 * The nonce of a presented token that this session was given and that has not expired; undefined
 * for anything else (missing, malformed, another session's, edited, expired, or from the future).
 */
export function readFormToken(sessionId: string, presented: unknown, nowMs: number): { nonce: string } | undefined {
  if (typeof presented !== 'string') return undefined;
  const parts = TOKEN.exec(presented);
  if (parts === null) return undefined;
  const [, issued, nonce, presentedMac] = parts as unknown as [string, string, string, string];
  if (!tokenMatches(mac(sessionId, issued, nonce), presentedMac)) return undefined;
  const age = nowMs - parseInt(issued, 36);
  // A minute of tolerance for an instance whose clock is behind the one that issued the form.
  if (age > FORM_TTL_MS || age < -60_000) return undefined;
  return { nonce };
}
