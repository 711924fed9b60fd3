import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CSRF_FIELD, fromThisSite, newSignInSecret, signInToken, tokenMatches } from '../csrf.js';
import { MAX_PASSWORD_LENGTH, normalizeEmail, verifyAgainstNothing, verifyPassword } from '../passwords.js';
import type { Refusal } from '../throttle.js';
import { cookies, type DashboardContext } from '../context.js';
import * as layout from '../layout.js';
import { form, query, text, type Typed } from '../schemas.js';
import * as views from './views.js';

const SIGN_IN_PAGE = { querystring: query({ signed_out: text() }) };
/** The password is not trimmed or bounded here: any attempt counts against the throttle (throttle.ts). */
const SIGN_IN = { body: form({ email: text(), password: text() }) };
const SIGN_OUT = { body: form({}) };

/** What a refused sign-in attempt is told (throttle.ts): its client's failures, or too many attempts waiting at once. */
function refusalText(refusal: Refusal): string {
  if (refusal.reason === 'busy') {
    const seconds = Math.ceil(refusal.retryAfterMs / 1000);
    return `Too many sign-in attempts at once. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`;
  }
  const minutes = Math.ceil(refusal.retryAfterMs / 60_000);
  return `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/** Signing in and out: the pages before a session, and the redirect of the dashboard's root. */
export async function signInRoutes(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, sessions, throttle, nowIso, send, resume, forbidden } = ctx;

  app.get('/', async (request, reply) => {
    const member = await resume(request);
    return reply.redirect(member === undefined ? '/sign-in' : layout.developerPath(member.ctx.accountId, 'keys'), 303);
  });

  /** The sign-in form, with a pre-session cookie its CSRF token is derived from. */
  function signInForm(request: FastifyRequest, reply: FastifyReply, status: number, opts: { email?: string; error?: string; notice?: string } = {}) {
    const names = cookies(request);
    let secret = request.cookies[names.signIn];
    if (secret === undefined || !/^[A-Za-z0-9_-]{43}$/.test(secret)) {
      secret = newSignInSecret();
      reply.setCookie(names.signIn, secret, names.options);
    }
    return send(reply, status, views.signInPage({ csrf: signInToken(secret), ...opts }));
  }

  app.get<Typed<typeof SIGN_IN_PAGE>>('/sign-in', { schema: SIGN_IN_PAGE }, async (request, reply) => {
    const member = await resume(request);
    if (member !== undefined) return reply.redirect(layout.developerPath(member.ctx.accountId, 'keys'), 303);
    return signInForm(request, reply, 200, { notice: request.query.signed_out === '1' ? 'You are signed out.' : undefined });
  });

  app.post<Typed<typeof SIGN_IN>>('/sign-in', { schema: SIGN_IN }, async (request, reply) => {
    const names = cookies(request);
    const secret = request.cookies[names.signIn];
    if (!fromThisSite(request) || secret === undefined || !tokenMatches(signInToken(secret), request.body[CSRF_FIELD])) {
      return forbidden(reply);
    }
    const email = normalizeEmail(request.body.email).slice(0, 254);
    const { password } = request.body;
    // Resolves after the account's delay, when other clients have been failing at this email (throttle.ts).
    const attempt = await throttle.reserve(email, request.ip);
    if ('retryAfterMs' in attempt) {
      ctx.onSignIn?.('throttled');
      reply.header('retry-after', String(Math.ceil(attempt.retryAfterMs / 1000)));
      return signInForm(request, reply, 429, { email, error: refusalText(attempt) });
    }
    const user = email === '' ? undefined : await store.users.findByEmail(email);
    const ok = password.length > 0 && password.length <= MAX_PASSWORD_LENGTH
      && (user === undefined ? await verifyAgainstNothing(password) : await verifyPassword(password, user.password_hash));
    if (!ok || user === undefined) {
      ctx.onSignIn?.('failed');
      await throttle.failed();
      return signInForm(request, reply, 401, { email, error: 'That email and password do not match a member. Check them and try again.' });
    }
    ctx.onSignIn?.('succeeded');
    await throttle.succeeded(email, request.ip, attempt.attemptId);
    // A new session id at every sign-in (no fixation); any earlier session of this browser ends.
    const previous = request.cookies[names.session];
    if (previous !== undefined) await sessions.end(previous).catch(() => undefined);
    const sessionId = await sessions.start(user.id);
    await store.users.recordSignIn(user.id, nowIso());
    reply.setCookie(names.session, sessionId, names.options);
    reply.clearCookie(names.signIn, names.options);
    return reply.redirect(layout.developerPath(user.account_id, 'keys'), 303);
  });

  app.post<Typed<typeof SIGN_OUT>>('/sign-out', { schema: SIGN_OUT }, async (request, reply) => {
    const names = cookies(request);
    const member = await resume(request);
    if (member !== undefined) {
      if (!fromThisSite(request) || !tokenMatches(member.ctx.csrf, request.body[CSRF_FIELD])) return forbidden(reply, member.ctx);
      await sessions.end(member.sessionId);
    }
    reply.clearCookie(names.session, names.options);
    return reply.redirect('/sign-in?signed_out=1', 303);
  });
}
