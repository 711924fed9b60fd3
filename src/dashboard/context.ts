import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { auditedKey } from '../auth/keys.js';
import { canonicalUuid } from '../core/formats.js';
import type { Config } from '../config/index.js';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import type { ApiKeyRecord, AuditEntry, DashboardUser, Store } from '../storage/index.js';
import type { SendOptions } from '../webhooks/send.js';
import { sessionToken } from './csrf.js';
import type { SignInResult } from './metrics.js';
import type { Sessions } from './sessions.js';
import type { SignInThrottle } from './throttle.js';
import * as layout from './layout.js';

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
  /** This process's last use of a key that is not stored yet (`LastUsedTracker`, usage/index.ts), in ms. */
  lastUsedOf?: (keyId: string) => number | undefined;
  /** Tests: how webhook host names are resolved by "Send test event" (webhooks/send.ts). */
  webhookResolve?: SendOptions['resolve'];
}

/** A signed-in member on a request of their own account's pages. */
export interface Member {
  user: DashboardUser;
  sessionId: string;
  ctx: layout.PageContext;
}

export const HTML = 'text/html; charset=utf-8';
const LABEL_MAX = 200;

/**
 * Cookies: HttpOnly, SameSite=Strict, path /; behind https (directly or, with TRUST_PROXY, per
 * X-Forwarded-Proto) also Secure and `__Host-` prefixed, so no other host can set or read them.
 * The session cookie holds the only copy of the session id; the database keeps its hash.
 */
export function cookies(request: FastifyRequest) {
  const secure = request.protocol === 'https';
  const prefix = secure ? '__Host-' : '';
  return {
    session: `${prefix}dashboard_session`,
    signIn: `${prefix}dashboard_signin`,
    options: { path: '/', httpOnly: true, sameSite: 'strict' as const, secure },
  };
}

/** A form field as a string; absent, repeated or non-text fields read as ''. */
export function field(body: unknown, name: string): string {
  if (typeof body !== 'object' || body === null) return '';
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

export function labelProblem(label: string): string | undefined {
  if (label === '') return 'enter a label, for example "Website (production)".';
  if (label.length > LABEL_MAX) return `keep the label to ${LABEL_MAX} characters or fewer.`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(label)) return 'the label cannot contain control characters such as line breaks.';
  return undefined;
}

/** What every page of the dashboard shares: the stores, the session of a request, error pages, the audit log. */
export type DashboardContext = ReturnType<typeof dashboardContext>;

export function dashboardContext(app: FastifyInstance, deps: RouteDeps) {
  const { store, sessions, clock } = deps;
  const nowIso = () => new Date(clock()).toISOString();
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

  const forbidden = (reply: FastifyReply, ctx?: layout.PageContext) =>
    send(reply, 403, layout.errorPage(403, 'This form has expired',
      'The form was not sent from a page of this dashboard, or it is from an earlier session. Nothing was changed. Go back, reload the page and try again.', ctx));

  const notFound = (reply: FastifyReply, ctx?: layout.PageContext) =>
    send(reply, 404, layout.errorPage(404, 'Not found', 'There is nothing here, or it belongs to another account. Nothing was changed.', ctx));

  async function audit(member: Member, entry: Partial<AuditEntry> & Pick<AuditEntry, 'action'>, key?: ApiKeyRecord): Promise<void> {
    await store.audit.record({
      account_id: member.user.account_id,
      at: nowIso(),
      actor_user_id: member.user.id,
      actor_email: member.user.email,
      ...auditedKey(key),
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

  return {
    ...deps,
    nowIso,
    /** How often usage is written (the usage and failures pages say how fresh they are), in whole seconds. */
    flushSeconds: Math.max(1, Math.round(deps.config.usageFlushIntervalMs / 1000)),
    /** A key's requests per minute: its own limit, else the deployment's default. */
    limitOf: (key: ApiKeyRecord) => key.rate_limit_per_minute ?? deps.config.rateLimitPerMinute,
    /**
     * Keys with their exact last use: the stored time is written in batches (every 10 s, by each
     * instance), so this process's own newer use, not written yet, is added to it.
     */
    withLastUse: <K extends ApiKeyRecord>(key: K): K => {
      const pending = deps.lastUsedOf?.(key.id);
      if (pending === undefined) return key;
      const at = new Date(pending).toISOString();
      return key.last_used_at !== null && key.last_used_at >= at ? key : { ...key, last_used_at: at };
    },
    /** The countries this deployment serves. */
    served: new Set<string>(deps.config.countries),
    send,
    resume,
    forbidden,
    notFound,
    audit,
    settled,
    /** The member the scope's guard found for this request (routes/index.ts). */
    memberOf: (request: FastifyRequest) => (request as FastifyRequest & { member: Member }).member,
  };
}

/** A key of the member's account named by a query parameter: undefined when absent, null when it is not theirs (404). */
export function keyFromQuery(raw: string, keys: readonly ApiKeyRecord[]): ApiKeyRecord | undefined | null {
  if (raw === '') return undefined;
  const id = canonicalUuid(raw);
  return keys.find((k) => k.id === id) ?? null;
}

