import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { issueKey } from '../auth/keys.js';
import { keyDisplay, redactedExcerpt } from '../auth/key-format.js';
import type { Config } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import { canonicalUuid } from '../core/formats.js';
import { isCountry, type Country } from '../core/countries.js';
import { validateOriginToRegister } from '../cors/origin.js';
import { FAILED_REQUESTS_KEPT, type ApiKeyRecord, type AuditEntry, type DashboardUser, type Store } from '../storage/index.js';
import { CSRF_FIELD, fromThisSite, newSignInSecret, sessionToken, signInToken, tokenMatches } from './csrf.js';
import { FORM_CLAIM_RETAIN_MS, FORM_FIELD, newFormToken, readFormToken } from './forms.js';
import { MAX_PASSWORD_LENGTH, normalizeEmail, verifyAgainstNothing, verifyPassword } from './passwords.js';
import type { SignInResult } from './metrics.js';
import type { Sessions } from './sessions.js';
import type { SignInThrottle } from './throttle.js';
import * as views from './views.js';
import * as usageViews from './usage-views.js';
import { isOutcome, type Outcome } from '../usage/outcomes.js';

export interface RouteDeps {
  store: Store;
  config: Config;
  clock: Clock;
  sessions: Sessions;
  throttle: SignInThrottle;
  /** Each sign-in attempt's result, for the metrics (src/dashboard/metrics.ts). */
  onSignIn?: (result: SignInResult) => void;
  /** The API's base URL for a country, for the curl line shown with a new key. */
  apiBaseUrl(country: Country): string;
}

/** A signed-in member on a request of their own account's pages. */
interface Member {
  user: DashboardUser;
  sessionId: string;
  ctx: views.PageContext;
}

const HTML = 'text/html; charset=utf-8';
const LABEL_MAX = 200;
const ACTIVITY_LIMIT = 200;

/**
 * Cookies: HttpOnly, SameSite=Strict, path /; behind https (directly or, with TRUST_PROXY, per
 * X-Forwarded-Proto) also Secure and `__Host-` prefixed, so no other host can set or read them.
 * The session cookie holds the only copy of the session id; the database keeps its hash.
 */
function cookies(request: FastifyRequest) {
  const secure = request.protocol === 'https';
  const prefix = secure ? '__Host-' : '';
  return {
    session: `${prefix}dashboard_session`,
    signIn: `${prefix}dashboard_signin`,
    options: { path: '/', httpOnly: true, sameSite: 'strict' as const, secure },
  };
}

/** A form field as a string; absent, repeated or non-text fields read as ''. */
function field(body: unknown, name: string): string {
  if (typeof body !== 'object' || body === null) return '';
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

function labelProblem(label: string): string | undefined {
  if (label === '') return 'enter a label, for example "Website (production)".';
  if (label.length > LABEL_MAX) return `keep the label to ${LABEL_MAX} characters or fewer.`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(label)) return 'the label cannot contain control characters such as line breaks.';
  return undefined;
}

export async function dashboardRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const { store, config, clock, sessions, throttle } = deps;
  const nowIso = () => new Date(clock()).toISOString();
  const served = new Set<string>(config.countries);

  const send = (reply: FastifyReply, status: number, body: string) => reply.code(status).type(HTML).send(body);

  /** The member behind the request's session cookie, with their account, or undefined. */
  async function resume(request: FastifyRequest): Promise<Member | undefined> {
    const signedIn = await sessions.resume(request.cookies[cookies(request).session]);
    if (signedIn === undefined) return undefined;
    const account = await store.accounts.get(signedIn.user.account_id);
    if (account === undefined) return undefined;
    return {
      ...signedIn,
      ctx: { accountId: account.id, accountName: account.name, email: signedIn.user.email, csrf: sessionToken(signedIn.sessionId) },
    };
  }

  const forbidden = (reply: FastifyReply, ctx?: views.PageContext) =>
    send(reply, 403, views.errorPage(403, 'This form has expired',
      'The form was not sent from a page of this dashboard, or it is from an earlier session. Nothing was changed. Go back, reload the page and try again.', ctx));

  const notFound = (reply: FastifyReply, ctx?: views.PageContext) =>
    send(reply, 404, views.errorPage(404, 'Not found', 'There is nothing here, or it belongs to another account. Nothing was changed.', ctx));

  async function audit(member: Member, entry: Partial<AuditEntry> & Pick<AuditEntry, 'action'>, key?: ApiKeyRecord): Promise<void> {
    await store.audit.record({
      account_id: member.user.account_id,
      at: nowIso(),
      actor_user_id: member.user.id,
      actor_email: member.user.email,
      key_id: key?.id ?? null,
      key_display: key === undefined ? null : keyDisplay(key),
      key_label: key?.label ?? null,
      previous_label: null,
      country: key?.country ?? null,
      origin: null,
      ...entry,
    });
  }

  /**
   * After a key or origin change: on PostgreSQL, returns once every API instance has been told
   * (LISTEN/NOTIFY), so the change holds on the very next request anywhere (D4). Immediate on SQLite.
   */
  const settled = async () => {
    const { settled, unconfirmed } = await store.broadcastSettled();
    if (!settled) app.log.warn({ unconfirmed }, 'a change was not confirmed by every instance in time; those instances apply it when they read their notifications');
  };

  // ------------------------------------------------------------ signed out

  app.get('/', async (request, reply) => {
    const member = await resume(request);
    return reply.redirect(member === undefined ? '/sign-in' : views.developerPath(member.ctx.accountId, 'keys'), 303);
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

  app.get('/sign-in', async (request, reply) => {
    const member = await resume(request);
    if (member !== undefined) return reply.redirect(views.developerPath(member.ctx.accountId, 'keys'), 303);
    const query = request.query as Record<string, unknown>;
    return signInForm(request, reply, 200, { notice: query.signed_out === '1' ? 'You are signed out.' : undefined });
  });

  app.post('/sign-in', async (request, reply) => {
    const names = cookies(request);
    const secret = request.cookies[names.signIn];
    if (!fromThisSite(request) || secret === undefined || !tokenMatches(signInToken(secret), field(request.body, CSRF_FIELD))) {
      return forbidden(reply);
    }
    const email = normalizeEmail(field(request.body, 'email')).slice(0, 254);
    const password = field(request.body, 'password');
    const attempt = await throttle.reserve(email, request.ip);
    if ('retryAfterMs' in attempt) {
      deps.onSignIn?.('throttled');
      const minutes = Math.ceil(attempt.retryAfterMs / 60_000);
      reply.header('retry-after', String(Math.ceil(attempt.retryAfterMs / 1000)));
      return signInForm(request, reply, 429, {
        email,
        error: `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      });
    }
    const user = email === '' ? undefined : await store.users.findByEmail(email);
    const ok = password.length > 0 && password.length <= MAX_PASSWORD_LENGTH
      && (user === undefined ? await verifyAgainstNothing(password) : await verifyPassword(password, user.password_hash));
    if (!ok || user === undefined) {
      deps.onSignIn?.('failed');
      await throttle.failed();
      return signInForm(request, reply, 401, { email, error: 'That email and password do not match a member. Check them and try again.' });
    }
    deps.onSignIn?.('succeeded');
    await throttle.succeeded(email, attempt.attemptId);
    // A new session id at every sign-in (no fixation); any earlier session of this browser ends.
    const previous = request.cookies[names.session];
    if (previous !== undefined) await sessions.end(previous).catch(() => undefined);
    const sessionId = await sessions.start(user.id);
    await store.users.recordSignIn(user.id, nowIso());
    reply.setCookie(names.session, sessionId, names.options);
    reply.clearCookie(names.signIn, names.options);
    return reply.redirect(views.developerPath(user.account_id, 'keys'), 303);
  });

  app.post('/sign-out', async (request, reply) => {
    const names = cookies(request);
    const member = await resume(request);
    if (member !== undefined) {
      if (!fromThisSite(request) || !tokenMatches(member.ctx.csrf, field(request.body, CSRF_FIELD))) return forbidden(reply, member.ctx);
      await sessions.end(member.sessionId);
    }
    reply.clearCookie(names.session, names.options);
    return reply.redirect('/sign-in?signed_out=1', 303);
  });

  // ------------------------------------------------------------ Settings > Developer of one account

  await app.register(async (scope) => {
    scope.decorateRequest('member', null);

    // The one guard every page below passes: signed in (else to the sign-in page); for a POST, a
    // valid CSRF token from this site (else 403, nothing changed); and the account in the URL is
    // the member's own (else 404, as for anything that does not exist).
    scope.addHook('preHandler', async (request, reply) => {
      const member = await resume(request);
      if (member === undefined) return reply.redirect('/sign-in', 303);
      if (request.method === 'POST' && (!fromThisSite(request) || !tokenMatches(member.ctx.csrf, field(request.body, CSRF_FIELD)))) {
        return forbidden(reply, member.ctx);
      }
      if ((request.params as { accountId?: string }).accountId !== member.user.account_id) return notFound(reply, member.ctx);
      (request as FastifyRequest & { member: Member }).member = member;
    });
    const memberOf = (request: FastifyRequest) => (request as FastifyRequest & { member: Member }).member;

    /** One of the member's account's keys, by the id in the URL; undefined for anything else. */
    async function ownKey(request: FastifyRequest): Promise<ApiKeyRecord | undefined> {
      const keyId = canonicalUuid((request.params as { keyId: string }).keyId);
      if (keyId === undefined) return undefined;
      const key = await store.keys.get(keyId);
      return key !== undefined && key.account_id === memberOf(request).user.account_id ? key : undefined;
    }

    async function keysPage(member: Member, extra: Partial<Parameters<typeof views.keysPage>[1]> = {}): Promise<string> {
      const [keys, recent] = await Promise.all([store.keys.listForAccount(member.ctx.accountId), store.audit.listForAccount(member.ctx.accountId, 5)]);
      // Every rendering of the create form is a new single-use form (forms.ts).
      const formToken = newFormToken(member.sessionId, clock());
      return views.keysPage(member.ctx, { keys, recent, countries: config.countries, formToken, ...extra });
    }

    /**
     * The answer to a create form sent again (a reload of the new key's page, a second click): names
     * the key the form made, which cannot be shown again (D20), and mints nothing.
     */
    async function formUsed(reply: FastifyReply, member: Member, nonce: string) {
      const use = await store.forms.get(nonce);
      const key = use?.key_id == null ? undefined : await store.keys.get(use.key_id);
      return send(reply, 409, views.formUsedPage(member.ctx, key?.account_id === member.ctx.accountId ? key : undefined));
    }

    scope.get('', async (request, reply) => reply.redirect(views.developerPath(memberOf(request).ctx.accountId, 'keys'), 303));

    scope.get('/keys', async (request, reply) => {
      const member = memberOf(request);
      const query = request.query as Record<string, unknown>;
      let notice: string | undefined;
      for (const [name, verb] of [['revoked', 'Revoked'], ['relabelled', 'Renamed']] as const) {
        const id = canonicalUuid(query[name]);
        if (id === undefined) continue;
        const key = await store.keys.get(id);
        if (key?.account_id === member.ctx.accountId) {
          notice = name === 'revoked'
            ? `${verb} key "${key.label}" (${keyDisplay(key)}). Requests with it now get 401 unauthorized.`
            : `${verb} key ${keyDisplay(key)} to "${key.label}".`;
        }
      }
      return send(reply, 200, await keysPage(member, { notice }));
    });

    scope.post('/keys', async (request, reply) => {
      const member = memberOf(request);
      // A page from before single-use forms, an edited token or an expired one: like an expired CSRF token.
      const form = readFormToken(member.sessionId, field(request.body, FORM_FIELD), clock());
      if (form === undefined) return forbidden(reply, member.ctx);
      const label = field(request.body, 'label').trim();
      const country = field(request.body, 'country').trim().toLowerCase();
      const errors: views.CreateKeyForm['errors'] = {};
      const labelError = labelProblem(label);
      if (labelError !== undefined) errors.label = labelError;
      if (!isCountry(country) || !served.has(country)) errors.country = 'choose one of the countries in the list.';
      if (errors.label !== undefined || errors.country !== undefined) {
        return send(reply, 400, await keysPage(member, { create: { label, country, errors } }));
      }
      // One key per form, on every instance: the first submission claims the form in the database.
      await store.forms.deleteUsedBefore(new Date(clock() - FORM_CLAIM_RETAIN_MS).toISOString());
      if (!(await store.forms.claim({ nonce: form.nonce, account_id: member.ctx.accountId, user_id: member.user.id, used_at: nowIso() }))) {
        return formUsed(reply, member, form.nonce);
      }
      let created: Awaited<ReturnType<typeof issueKey>>;
      try {
        created = await issueKey(store, { accountId: member.ctx.accountId, country: country as Country, label, now: new Date(clock()) });
      } catch (error) {
        // Nothing was created: the member may send the same form again.
        await store.forms.release(form.nonce).catch(() => undefined);
        throw error;
      }
      await store.forms.recordKey(form.nonce, created.id);
      const key = (await store.keys.get(created.id))!;
      await audit(member, { action: 'key.created' }, key);
      await settled();
      // The full key is in this one response and nowhere else: not in a redirect, the session, or a log (D20).
      return send(reply, 201, views.keyCreatedPage(member.ctx, {
        key,
        fullKey: created.key,
        curl: `curl -H "Authorization: Bearer ${created.key}" ${deps.apiBaseUrl(key.country as Country)}/v1/listings`,
      }));
    });

    scope.post('/keys/:keyId/label', async (request, reply) => {
      const member = memberOf(request);
      const key = await ownKey(request);
      if (key === undefined) return notFound(reply, member.ctx);
      if (key.revoked_at !== null) {
        return send(reply, 409, views.errorPage(409, 'This key is revoked', 'A revoked key keeps its label. Nothing was changed.', member.ctx));
      }
      const label = field(request.body, 'label').trim();
      const problem = labelProblem(label);
      if (problem !== undefined) return send(reply, 400, await keysPage(member, { relabel: { keyId: key.id, label, error: problem } }));
      if (label !== key.label) {
        if (!(await store.keys.relabel(key.id, member.ctx.accountId, label))) return notFound(reply, member.ctx);
        await audit(member, { action: 'key.relabelled', key_label: label, previous_label: key.label }, key);
        await settled();
      }
      return reply.redirect(`${views.developerPath(member.ctx.accountId, 'keys')}?relabelled=${key.id}#key-${key.id}`, 303);
    });

    scope.get('/keys/:keyId/revoke', async (request, reply) => {
      const member = memberOf(request);
      const key = await ownKey(request);
      if (key === undefined) return notFound(reply, member.ctx);
      return send(reply, 200, views.revokePage(member.ctx, key));
    });

    scope.post('/keys/:keyId/revoke', async (request, reply) => {
      const member = memberOf(request);
      const key = await ownKey(request);
      if (key === undefined) return notFound(reply, member.ctx);
      if (key.revoked_at === null) {
        await store.keys.revoke(key.id, nowIso());
        await audit(member, { action: 'key.revoked' }, key);
        // D4: once this response is sent, every API instance refuses the key.
        await settled();
      }
      return reply.redirect(`${views.developerPath(member.ctx.accountId, 'keys')}?revoked=${key.id}`, 303);
    });

    async function originsPage(member: Member, extra: Partial<Parameters<typeof views.originsPage>[1]> = {}): Promise<string> {
      const [origins, keys] = await Promise.all([store.origins.listForAccount(member.ctx.accountId), store.keys.listForAccount(member.ctx.accountId)]);
      const keyCountries = new Set(keys.filter((k) => k.revoked_at === null).map((k) => k.country));
      return views.originsPage(member.ctx, { origins, keyCountries, countries: config.countries, ...extra });
    }

    scope.get('/origins', async (request, reply) => {
      const member = memberOf(request);
      const query = request.query as Record<string, unknown>;
      let notice: string | undefined;
      const { done, country, origin } = query;
      if (typeof country === 'string' && isCountry(country) && typeof origin === 'string') {
        const checked = validateOriginToRegister(origin);
        const name = views.COUNTRY_NAMES[country];
        if ('origin' in checked && checked.origin === origin) {
          const listed = (await store.origins.isAllowed(member.ctx.accountId, country, origin));
          if (done === 'added' && listed) notice = `Allowed ${origin} for ${name}. Browsers on that origin can now call the API with ${country} keys.`;
          if (done === 'exists' && listed) notice = `${origin} was already allowed for ${name}.`;
          if (done === 'removed' && !listed) notice = `Removed ${origin} for ${name}. Browser calls from it now get 403 origin_not_allowed.`;
        }
      }
      return send(reply, 200, await originsPage(member, { notice }));
    });

    scope.post('/origins', async (request, reply) => {
      const member = memberOf(request);
      const country = field(request.body, 'country').trim().toLowerCase();
      const input = field(request.body, 'origin');
      const [origins, keys] = await Promise.all([store.origins.listForAccount(member.ctx.accountId), store.keys.listForAccount(member.ctx.accountId)]);
      const inSection = origins.some((o) => o.country === country) || keys.some((k) => k.revoked_at === null && k.country === country);
      const section = inSection ? country : 'other';
      const fail = async (error: string) => send(reply, 400, await originsPage(member, { form: { section, country, origin: input, error } }));
      if (!isCountry(country) || !served.has(country)) return fail('choose one of the countries in the list.');
      if (input.length > 300) return fail('that is too long for an origin (scheme://host[:port]).');
      const checked = validateOriginToRegister(input);
      if ('error' in checked) return fail(`${checked.error}.`);
      const added = await store.origins.add({ account_id: member.ctx.accountId, country, origin: checked.origin, created_at: nowIso() });
      if (added) {
        await audit(member, { action: 'origin.added', country, origin: checked.origin });
        await settled();
      }
      const query = new URLSearchParams({ done: added ? 'added' : 'exists', country, origin: checked.origin });
      return reply.redirect(`${views.developerPath(member.ctx.accountId, 'origins')}?${query}#country-${country}`, 303);
    });

    /**
     * Removing an origin breaks every page on it at its next API call, so it is confirmed first, as
     * revoking a key is: this page, then its form's POST. Only an origin of the member's own account.
     */
    scope.get('/origins/remove', async (request, reply) => {
      const member = memberOf(request);
      const query = request.query as Record<string, unknown>;
      const country = typeof query.country === 'string' ? query.country : '';
      const checked = validateOriginToRegister(typeof query.origin === 'string' ? query.origin : '');
      if (!isCountry(country) || 'error' in checked) return notFound(reply, member.ctx);
      const origin = (await store.origins.listForAccount(member.ctx.accountId)).find((o) => o.country === country && o.origin === checked.origin);
      if (origin === undefined) return notFound(reply, member.ctx);
      const keys = await store.keys.listForAccount(member.ctx.accountId);
      const activeKeys = keys.filter((k) => k.revoked_at === null && k.country === country).length;
      return send(reply, 200, views.removeOriginPage(member.ctx, origin, activeKeys));
    });

    scope.post('/origins/remove', async (request, reply) => {
      const member = memberOf(request);
      const country = field(request.body, 'country').trim().toLowerCase();
      const checked = validateOriginToRegister(field(request.body, 'origin'));
      if (!isCountry(country) || 'error' in checked) return notFound(reply, member.ctx);
      if (!(await store.origins.remove(member.ctx.accountId, country, checked.origin))) return notFound(reply, member.ctx);
      await audit(member, { action: 'origin.removed', country, origin: checked.origin });
      // D4: once this response is sent, every API instance refuses the origin.
      await settled();
      const query = new URLSearchParams({ done: 'removed', country, origin: checked.origin });
      return reply.redirect(`${views.developerPath(member.ctx.accountId, 'origins')}?${query}`, 303);
    });

    // ---------------------------------------------------------- usage and failed requests (issue 12)

    const FIVE_MINUTES_MS = 300_000;
    const DAY_MS = 86_400_000;
    const flushSeconds = Math.max(1, Math.round(config.usageFlushIntervalMs / 1000));
    const limitOf = (key: ApiKeyRecord) => key.rate_limit_per_minute ?? config.rateLimitPerMinute;
    const iso = (ms: number) => new Date(ms).toISOString();

    /** A key of the member's account named by a query parameter: undefined when absent, null when it is not theirs (404). */
    async function keyFromQuery(request: FastifyRequest, keys: ApiKeyRecord[]): Promise<ApiKeyRecord | undefined | null> {
      const raw = (request.query as Record<string, unknown>).key;
      if (raw === undefined || raw === '') return undefined;
      const id = canonicalUuid(raw);
      return keys.find((k) => k.id === id) ?? null;
    }

    scope.get('/usage', async (request, reply) => {
      const member = memberOf(request);
      const accountId = member.ctx.accountId;
      const keys = await store.keys.listForAccount(accountId);
      const chosen = await keyFromQuery(request, keys);
      if (chosen === null) return notFound(reply, member.ctx);
      const now = clock();
      // The last 24 hours: 288 five-minute buckets, the current one last; the last 30 days: 30 UTC days, today last.
      const fiveMinuteStarts = Array.from({ length: 288 }, (_, i) => now - (now % FIVE_MINUTES_MS) - (287 - i) * FIVE_MINUTES_MS);
      const dayStarts = Array.from({ length: 30 }, (_, i) => now - (now % DAY_MS) - (29 - i) * DAY_MS);
      const since24h = iso(fiveMinuteStarts[0]!);
      const since30d = iso(dayStarts[0]!);
      const [totals24h, totals30d] = await Promise.all([
        store.usage.totalsOfAccount(accountId, 300, since24h),
        store.usage.totalsOfAccount(accountId, 3600, since30d),
      ]);
      const countsOf = (rows: Array<{ key_id: string; outcome: string; n: number }>, keyId: string) => {
        const counts: usageViews.Counts = {};
        for (const r of rows) if (r.key_id === keyId && isOutcome(r.outcome)) counts[r.outcome] = (counts[r.outcome] ?? 0) + r.n;
        return counts;
      };
      const sum = (c: usageViews.Counts) => Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
      const keyUsage = keys
        .map((key) => ({ key, last24h: countsOf(totals24h, key.id), last30d: countsOf(totals30d, key.id) }))
        .sort((a, b) =>
          sum(b.last30d) - sum(a.last30d)
          || (a.key.revoked_at === null ? 0 : 1) - (b.key.revoked_at === null ? 0 : 1)
          || b.key.created_at.localeCompare(a.key.created_at));
      // The key asked for, else the busiest one of the last 30 days.
      const selectedKey = chosen ?? (keyUsage[0] !== undefined && sum(keyUsage[0].last30d) + sum(keyUsage[0].last24h) > 0 ? keyUsage[0].key : undefined);
      let selected: Parameters<typeof usageViews.usagePage>[1]['selected'];
      if (selectedKey !== undefined) {
        const [fine, hourly] = await Promise.all([
          store.usage.bucketsOfKey(selectedKey.id, 300, since24h),
          store.usage.bucketsOfKey(selectedKey.id, 3600, since30d),
        ]);
        const series = (starts: number[], rows: typeof fine, width: number): usageViews.Series => {
          const counts = starts.map((): usageViews.Counts => ({}));
          for (const r of rows) {
            const i = Math.floor((Date.parse(r.bucket_start) - starts[0]!) / width);
            const outcome = r.outcome as Outcome;
            if (i >= 0 && i < starts.length && isOutcome(outcome)) counts[i]![outcome] = (counts[i]![outcome] ?? 0) + Number(r.n);
          }
          return { starts: starts.map(iso), counts };
        };
        selected = {
          key: selectedKey,
          limitPerMinute: limitOf(selectedKey),
          day: series(fiveMinuteStarts, fine, FIVE_MINUTES_MS),
          month: series(dayStarts, hourly, DAY_MS),
        };
      }
      return send(reply, 200, usageViews.usagePage(member.ctx, { keys: keyUsage, selected, flushSeconds }));
    });

    /** The rows of failed requests, with their keys, limits and (for a 403) whether the origin is allowed now. */
    async function failureRows(
      accountId: string,
      failures: Awaited<ReturnType<typeof store.usage.failures>>,
      keys: ApiKeyRecord[],
    ): Promise<usageViews.FailureRow[]> {
      const byId = new Map(keys.map((k) => [k.id, k]));
      const allowed = new Set((await store.origins.listForAccount(accountId)).map((o) => `${o.country}\n${o.origin}`));
      return failures.map((failure) => {
        const key = byId.get(failure.key_id);
        const origin = failure.code === 'origin_not_allowed' ? usageViews.registrableOrigin(failure.origin) : undefined;
        return {
          failure,
          key,
          limitPerMinute: key === undefined ? config.rateLimitPerMinute : limitOf(key),
          origin: origin === undefined || key === undefined ? undefined : { origin, allowed: allowed.has(`${key.country}\n${origin}`) },
          apiBaseUrl: key === undefined ? undefined : deps.apiBaseUrl(key.country as Country),
        };
      });
    }

    scope.get('/failures', async (request, reply) => {
      const member = memberOf(request);
      const accountId = member.ctx.accountId;
      const query = request.query as Record<string, unknown>;
      const keys = await store.keys.listForAccount(accountId);
      const key = await keyFromQuery(request, keys);
      if (key === null) return notFound(reply, member.ctx);
      const code = query.code === undefined || query.code === '' ? undefined : query.code;
      if (code !== undefined && (typeof code !== 'string' || !(usageViews.FAILURE_CODES as readonly string[]).includes(code))) return notFound(reply, member.ctx);
      const failures = await store.usage.failures(accountId, { keyId: key?.id, code });
      let notice: string | undefined;
      const { done, country, origin } = query;
      if (typeof country === 'string' && isCountry(country) && typeof origin === 'string' && (done === 'added' || done === 'exists')) {
        if (await store.origins.isAllowed(accountId, country, origin)) {
          notice = done === 'added'
            ? `Allowed ${origin} for ${views.COUNTRY_NAMES[country]}. Pages on it can call the API with ${country} keys from their next request.`
            : `${origin} was already allowed for ${views.COUNTRY_NAMES[country]}.`;
        }
      }
      return send(reply, 200, usageViews.failuresPage(member.ctx, {
        rows: await failureRows(accountId, failures, keys), keys, filter: { keyId: key?.id, code }, kept: FAILED_REQUESTS_KEPT, notice, flushSeconds,
      }));
    });

    /**
     * "Allow this origin" on a refused request: the origins page's add, from the failed request's
     * own country and origin. CSRF-checked by the scope's guard, audit-logged, and in force on every
     * instance once the answer is sent (D4).
     */
    scope.post('/failures/allow-origin', async (request, reply) => {
      const member = memberOf(request);
      const accountId = member.ctx.accountId;
      const country = field(request.body, 'country').trim().toLowerCase();
      const checked = validateOriginToRegister(field(request.body, 'origin'));
      if (!isCountry(country) || !served.has(country) || 'error' in checked) {
        return send(reply, 400, views.errorPage(400, 'That origin cannot be allowed', 'The form named no country of this deployment or no origin that can be registered. Nothing was changed.', member.ctx));
      }
      const added = await store.origins.add({ account_id: accountId, country, origin: checked.origin, created_at: nowIso() });
      if (added) {
        await audit(member, { action: 'origin.added', country, origin: checked.origin });
        await settled();
      }
      // Back to the list as it was filtered (only a URL of this page is followed).
      const failuresPath = views.developerPath(accountId, 'failures');
      const back = field(request.body, 'back');
      const target = new URL(back.startsWith(`${failuresPath}?`) ? back : failuresPath, 'http://dashboard.invalid');
      target.searchParams.set('done', added ? 'added' : 'exists');
      target.searchParams.set('country', country);
      target.searchParams.set('origin', checked.origin);
      return reply.redirect(`${target.pathname}${target.search}`, 303);
    });

    scope.get('/requests', async (request, reply) => {
      const member = memberOf(request);
      const accountId = member.ctx.accountId;
      const raw = (request.query as Record<string, unknown>).id;
      const requestId = typeof raw === 'string' ? raw.trim() : '';
      if (requestId === '') return send(reply, 200, usageViews.requestPage(member.ctx, { requestId: '' }));
      const failure = requestId.length > 140 ? undefined : await store.usage.failureByRequestId(accountId, requestId);
      // The id as typed is shown again: a key pasted into the box by mistake is not (D20).
      if (failure === undefined) return send(reply, 404, usageViews.requestNotHeldPage(member.ctx, redactedExcerpt(requestId, 140)));
      const [row] = await failureRows(accountId, [failure], await store.keys.listForAccount(accountId));
      return send(reply, 200, usageViews.requestPage(member.ctx, { requestId, row }));
    });

    scope.get('/activity', async (request, reply) => {
      const member = memberOf(request);
      const entries = await store.audit.listForAccount(member.ctx.accountId, ACTIVITY_LIMIT);
      return send(reply, 200, views.activityPage(member.ctx, entries, ACTIVITY_LIMIT));
    });
  }, { prefix: '/accounts/:accountId/settings/developer' });

  app.setNotFoundHandler(async (request, reply) => {
    const member = await resume(request).catch(() => undefined);
    return notFound(reply, member?.ctx);
  });
}
