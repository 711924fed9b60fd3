import type { FastifyInstance } from 'fastify';
import { redactedExcerpt } from '../../auth/key-format.js';
import { isCountry, type Country } from '../../core/countries.js';
import { validateOriginToRegister } from '../../cors/origin.js';
import { FAILED_REQUESTS_KEPT, groupKey, type ApiKeyRecord, type FailedRequest, type FailureFilter } from '../../storage/index.js';
import { keyFromQuery, type DashboardContext } from '../context.js';
import * as layout from '../layout.js';
import { accountParams, form, query, text, type Typed } from '../schemas.js';
import { FAILURE_CODES } from '../usage/views.js';
import * as views from './views.js';

const LIST = {
  params: accountParams(),
  // `done`, `country` and `origin`: the confirmation of "allow this origin".
  querystring: query({ key: text(), code: text(), page: text(), done: text(), country: text(), origin: text() }),
};
const ALLOW_ORIGIN = { params: accountParams(), body: form({ country: text(), origin: text(), back: text() }) };
const LOOK_UP = { params: accountParams(), querystring: query({ id: text() }) };
type ListQuery = Typed<typeof LIST>['Querystring'];

/** Groups of alike failed requests per page of the list. */
export const GROUPS_PER_PAGE = 50;
/** Requests listed under each group (newest first); any other is found by its request id. */
export const REQUESTS_PER_GROUP = 20;

/** The rows of failed requests, with their keys, limits and (for a 403) whether the origin is allowed now. */
async function failureRows(
  ctx: DashboardContext,
  accountId: string,
  failures: FailedRequest[],
  keys: ApiKeyRecord[],
): Promise<views.FailureRow[]> {
  const { store, config, limitOf } = ctx;
  const byId = new Map(keys.map((k) => [k.id, k]));
  const allowed = new Set((await store.origins.listForAccount(accountId)).map((o) => `${o.country}\n${o.origin}`));
  return failures.map((failure) => {
    const key = byId.get(failure.key_id);
    const origin = failure.code === 'origin_not_allowed' ? views.registrableOrigin(failure.origin) : undefined;
    return {
      failure,
      key,
      limitPerMinute: key === undefined ? config.rateLimitPerMinute : limitOf(key),
      origin: origin === undefined || key === undefined ? undefined : { origin, allowed: allowed.has(`${key.country}\n${origin}`) },
      apiBaseUrl: key === undefined ? undefined : ctx.apiBaseUrl(key.country as Country),
    };
  });
}

/** The list's error code and page number from the query (absent: every code, page 1); undefined when either is not one (a 404). */
function listQuery(query: ListQuery): { code: string | undefined; pageNumber: number } | undefined {
  const code = query.code === '' ? undefined : query.code;
  if (code !== undefined && !(FAILURE_CODES as readonly string[]).includes(code)) return undefined;
  const pageNumber = query.page === '' ? 1 : /^[1-9][0-9]{0,3}$/.test(query.page) ? Number(query.page) : undefined;
  if (pageNumber === undefined) return undefined;
  return { code, pageNumber };
}

/** One page of groups of alike failed requests: each with the row of its newest request and its newest requests. */
async function groupsPage(
  ctx: DashboardContext,
  accountId: string,
  filter: FailureFilter,
  pageNumber: number,
  keys: ApiKeyRecord[],
): Promise<{ groups: views.FailureGroupRow[]; total: number; requests: number }> {
  const { store } = ctx;
  const page = { limit: GROUPS_PER_PAGE, offset: (pageNumber - 1) * GROUPS_PER_PAGE };
  const { groups, total, requests } = await store.usage.failureGroups(accountId, filter, page);
  const members = await store.usage.failuresOfGroups(accountId, groups, REQUESTS_PER_GROUP);
  const byGroup = new Map<string, FailedRequest[]>();
  for (const row of members) byGroup.set(groupKey(row), [...(byGroup.get(groupKey(row)) ?? []), row]);
  const newest = groups.map((g) => byGroup.get(groupKey(g))?.[0]).filter((f): f is FailedRequest => f !== undefined);
  const rows = new Map((await failureRows(ctx, accountId, newest, keys)).map((row) => [groupKey(row.failure), row]));
  return {
    groups: groups.flatMap((g) => {
      const latest = rows.get(groupKey(g));
      return latest === undefined ? [] : [{
        latest,
        n: g.n,
        firstAt: g.first_at,
        lastAt: g.last_at,
        sources: { fromBrowser: g.from_browser, notBrowser: g.not_browser },
        requests: byGroup.get(groupKey(g)) ?? [],
      }];
    }),
    total,
    requests,
  };
}

/** The confirmation of "allow this origin" (`?done=`), said only while the origin is allowed. */
async function allowedOriginNotice(ctx: DashboardContext, accountId: string, query: ListQuery): Promise<string | undefined> {
  const { done, country, origin } = query;
  if (!isCountry(country) || origin === '' || (done !== 'added' && done !== 'exists')) return undefined;
  if (!(await ctx.store.origins.isAllowed(accountId, country, origin))) return undefined;
  return done === 'added'
    ? `Allowed ${origin} for ${layout.COUNTRY_NAMES[country]}. Pages on it can call the API with ${country} keys from their next request.`
    : `${origin} was already allowed for ${layout.COUNTRY_NAMES[country]}.`;
}

/**
 * Settings > Developer > Failed requests: the list (alike requests grouped, by an SQL GROUP BY, a
 * page at a time), "allow this origin", and a look-up by request id.
 */
export async function failureRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, nowIso, served, send, notFound, audit, settled, memberOf, flushSeconds } = ctx;

  scope.get<Typed<typeof LIST>>('/failures', { schema: LIST }, async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const keys = await store.keys.listForAccount(accountId);
    const key = keyFromQuery(request.query.key, keys);
    if (key === null) return notFound(reply, member.ctx);
    const list = listQuery(request.query);
    if (list === undefined) return notFound(reply, member.ctx);
    const filter = { keyId: key?.id, code: list.code };
    const { groups, total, requests } = await groupsPage(ctx, accountId, filter, list.pageNumber, keys);
    const notice = await allowedOriginNotice(ctx, accountId, request.query);
    return send(reply, 200, views.failuresPage(member.ctx, {
      groups,
      keys,
      filter,
      page: { number: list.pageNumber, size: GROUPS_PER_PAGE, groups: total, requests },
      shownPerGroup: REQUESTS_PER_GROUP,
      kept: FAILED_REQUESTS_KEPT,
      notice,
      flushSeconds,
    }));
  });

  /**
   * "Allow this origin" on a refused request: the origins page's add, from the failed request's
   * own country and origin. CSRF-checked by the scope's guard, audit-logged, and in force on every
   * instance once the answer is sent (D4).
   */
  scope.post<Typed<typeof ALLOW_ORIGIN>>('/failures/allow-origin', { schema: ALLOW_ORIGIN }, async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const country = request.body.country.trim().toLowerCase();
    const checked = validateOriginToRegister(request.body.origin);
    if (!isCountry(country) || !served.has(country) || 'error' in checked) {
      return send(reply, 400, layout.errorPage(400, 'That origin cannot be allowed', 'The form named no country of this deployment or no origin that can be registered. Nothing was changed.', member.ctx));
    }
    const added = await store.origins.add({ account_id: accountId, country, origin: checked.origin, created_at: nowIso() });
    if (added) {
      await audit(member, { action: 'origin.added', country, origin: checked.origin });
      await settled();
    }
    // Back to the list as it was filtered (only a URL of this page is followed).
    const failuresPath = layout.developerPath(accountId, 'failures');
    const { back } = request.body;
    const target = new URL(back.startsWith(`${failuresPath}?`) ? back : failuresPath, 'http://dashboard.invalid');
    target.searchParams.set('done', added ? 'added' : 'exists');
    target.searchParams.set('country', country);
    target.searchParams.set('origin', checked.origin);
    // To the confirmation, wherever the page is scrolled to (a phone's screen is short).
    return reply.redirect(`${target.pathname}${target.search}#notice`, 303);
  });

  scope.get<Typed<typeof LOOK_UP>>('/requests', { schema: LOOK_UP }, async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const requestId = request.query.id.trim();
    if (requestId === '') return send(reply, 200, views.requestPage(member.ctx, { requestId: '' }));
    const failure = requestId.length > 140 ? undefined : await store.usage.failureByRequestId(accountId, requestId);
    // The id as typed is shown again: a key pasted into the box by mistake is not (D20).
    if (failure === undefined) return send(reply, 404, views.requestNotHeldPage(member.ctx, redactedExcerpt(requestId, 140)));
    const [row] = await failureRows(ctx, accountId, [failure], await store.keys.listForAccount(accountId));
    return send(reply, 200, views.requestPage(member.ctx, { requestId, row }));
  });
}
