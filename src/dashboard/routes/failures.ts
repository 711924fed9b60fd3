import type { FastifyInstance } from 'fastify';
import { redactedExcerpt } from '../../auth/key-format.js';
import { isCountry, type Country } from '../../core/countries.js';
import { validateOriginToRegister } from '../../cors/origin.js';
import { FAILED_REQUESTS_KEPT, type ApiKeyRecord } from '../../storage/index.js';
import * as usageViews from '../usage-views.js';
import * as views from '../views.js';
import { field, type DashboardContext } from './context.js';
import { keyFromQuery } from './key-query.js';

/** Settings > Developer > Failed requests: the list, "allow this origin", and a look-up by request id. */
export async function failureRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, config, nowIso, served, send, notFound, audit, settled, memberOf, flushSeconds, limitOf } = ctx;

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
        apiBaseUrl: key === undefined ? undefined : ctx.apiBaseUrl(key.country as Country),
      };
    });
  }

  scope.get<{ Querystring: Record<string, unknown> }>('/failures', async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const query = request.query;
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

  scope.get<{ Querystring: { id?: unknown } }>('/requests', async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const raw = request.query.id;
    const requestId = typeof raw === 'string' ? raw.trim() : '';
    if (requestId === '') return send(reply, 200, usageViews.requestPage(member.ctx, { requestId: '' }));
    const failure = requestId.length > 140 ? undefined : await store.usage.failureByRequestId(accountId, requestId);
    // The id as typed is shown again: a key pasted into the box by mistake is not (D20).
    if (failure === undefined) return send(reply, 404, usageViews.requestNotHeldPage(member.ctx, redactedExcerpt(requestId, 140)));
    const [row] = await failureRows(accountId, [failure], await store.keys.listForAccount(accountId));
    return send(reply, 200, usageViews.requestPage(member.ctx, { requestId, row }));
  });
}
