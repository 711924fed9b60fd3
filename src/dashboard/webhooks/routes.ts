import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isCountry } from '../../core/countries.js';
import { canonicalUuid } from '../../core/formats.js';
import type { WebhookEndpoint } from '../../storage/index.js';
import { sendTestEvent } from '../../webhooks/deliverer.js';
import { delivered, failureText } from '../../webhooks/send.js';
import { addWebhook, replayWebhook, rotateWebhookSecret, setWebhookFilters, WebhookError } from '../../webhooks/endpoints.js';
import * as layout from '../layout.js';
import { accountParams, form, query, text, texts, type Typed } from '../schemas.js';
import type { DashboardContext, Member } from '../context.js';
import * as views from './views.js';

const LIST = { params: accountParams(), querystring: query({ done: text(), id: text() }) };
const ADD = { params: accountParams(), body: form({ country: text(), url: text() }) };
/** A page about one endpoint (its secret, a confirmation), named by `?id=`. */
const ONE = { params: accountParams(), querystring: query({ id: text() }) };
/** A form about one endpoint (test, enable, rotate, remove), named by its `id` field. */
const ACT = { params: accountParams(), body: form({ id: text() }) };

const REPLAY = { params: accountParams(), body: form({ id: text(), since: text() }) };
const FILTERS = { params: accountParams(), body: form({ id: text(), changes: text(), usage_types: texts() }) };
const ATTEMPTS = { params: accountParams(), querystring: query({ id: text(), before: text() }) };

/** Attempts shown per endpoint. */
const RECENT_ATTEMPTS = 10;
/** Attempts per page of an endpoint's attempt log. */
const ATTEMPTS_PAGE = 25;
/** A date and time as a `datetime-local` field or a person writes it, without an offset: read as UTC (the form says so). */
const WITHOUT_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/** The webhooks page: the account's endpoints, each with its recent delivery attempts. */
async function listPage(
  ctx: DashboardContext,
  member: Member,
  extra: { notice?: string; error?: string; form?: views.WebhookForm } = {},
): Promise<string> {
  const { store } = ctx;
  const endpoints = await store.webhooks.listForAccount(member.ctx.accountId);
  const attemptsOf = (endpoint: WebhookEndpoint) => store.webhooks.attempts(endpoint.id, RECENT_ATTEMPTS);
  const withAttempts = await Promise.all(endpoints.map(async (endpoint) => ({ endpoint, attempts: await attemptsOf(endpoint) })));
  return views.webhooksPage(member.ctx, { endpoints: withAttempts, countries: ctx.config.countries, ...extra });
}

/** The member's own endpoint named by `id` (query or form), or undefined (a 404: as for anything that does not exist). */
async function ownEndpoint(ctx: DashboardContext, member: Member, id: string): Promise<WebhookEndpoint | undefined> {
  const uuid = canonicalUuid(id);
  const endpoint = uuid === undefined ? undefined : await ctx.store.webhooks.get(uuid);
  return endpoint?.account_id === member.ctx.accountId ? endpoint : undefined;
}

/** The add form sent: a new endpoint, whose secret is shown on the answer; else the list again with what was wrong. */
async function addEndpoint(ctx: DashboardContext, request: FastifyRequest<Typed<typeof ADD>>, reply: FastifyReply) {
  const { store, clock, served, send, audit, memberOf } = ctx;
  const member = memberOf(request);
  const country = request.body.country.trim().toLowerCase();
  const url = request.body.url.trim();
  const fail = async (error: string) => send(reply, 400, await listPage(ctx, member, { form: { url, country, error } }));
  if (!isCountry(country) || !served.has(country)) return fail('Choose one of the countries in the list.');
  let endpoint: WebhookEndpoint;
  try {
    endpoint = await addWebhook(store, clock, { accountId: member.ctx.accountId, country, url });
  } catch (error) {
    if (error instanceof WebhookError) return fail(error.message);
    throw error;
  }
  await audit(member, { action: 'webhook.added', country, webhook_url: endpoint.url });
  return send(reply, 201, views.webhookSecretPage(member.ctx, endpoint, 'added'));
}

/** Settings > Developer > Webhooks (D24): list, add, test, enable, show and rotate the secret, remove (confirmed first). */
export async function webhookRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, config, clock, send, notFound, audit, memberOf } = ctx;
  const path = (member: Member) => layout.developerPath(member.ctx.accountId, 'webhooks');

  scope.get<Typed<typeof LIST>>('/webhooks', { schema: LIST }, async (request, reply) => {
    const member = memberOf(request);
    const { done } = request.query;
    const endpoint = await ownEndpoint(ctx, member, request.query.id);
    let notice: string | undefined;
    if (endpoint !== undefined && done === 'enabled') notice = `Enabled ${endpoint.url}: delivery resumes from where it stopped.`;
    if (done === 'removed') notice = 'Removed the endpoint. It gets no more messages.';
    if (endpoint !== undefined && done === 'replayed') notice = `Replay of ${endpoint.url} asked for: its messages go again, in order, after the one it is sending.`;
    if (endpoint !== undefined && done === 'filtered') notice = `${endpoint.url} is told of what you chose from its next message on.`;
    return send(reply, 200, await listPage(ctx, member, { notice }));
  });

  scope.post<Typed<typeof ADD>>('/webhooks', { schema: ADD }, (request, reply) => addEndpoint(ctx, request, reply));

  scope.post<Typed<typeof ACT>>('/webhooks/test', { schema: ACT }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    if (endpoint === undefined) return notFound(reply, member.ctx);
    const outcome = await sendTestEvent(store, endpoint, clock(), { allowPrivate: config.webhookAllowPrivate, resolve: ctx.webhookResolve });
    if (delivered(outcome)) {
      return send(reply, 200, await listPage(ctx, member, { notice: `Test event delivered to ${endpoint.url}: HTTP ${outcome.status} in ${outcome.durationMs} ms.` }));
    }
    // D24: a failure is told as its category only, without its timing: the error's name and how
    // long it took would tell which ports of a host are open. The detail is for the operator.
    request.log.info({ webhookId: endpoint.id, error: outcome.error, detail: outcome.detail }, 'webhook test event not delivered');
    return send(reply, 200, await listPage(ctx, member, { error: `Test event not delivered to ${endpoint.url}: ${failureText(outcome)}.` }));
  });

  scope.post<Typed<typeof ACT>>('/webhooks/enable', { schema: ACT }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    if (endpoint === undefined || !(await store.webhooks.enable(endpoint.id))) return notFound(reply, member.ctx);
    await audit(member, { action: 'webhook.enabled', country: endpoint.country, webhook_url: endpoint.url });
    return reply.redirect(`${path(member)}?done=enabled&id=${endpoint.id}#webhook-${endpoint.id}`, 303);
  });

  scope.get<Typed<typeof ONE>>('/webhooks/secret', { schema: ONE }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.query.id);
    if (endpoint === undefined) return notFound(reply, member.ctx);
    return send(reply, 200, views.webhookSecretPage(member.ctx, endpoint, undefined));
  });

  webhookHistoryRoutes(scope, ctx);

  for (const action of ['rotate', 'remove'] as const) {
    scope.get<Typed<typeof ONE>>(`/webhooks/${action}`, { schema: ONE }, async (request, reply) => {
      const member = memberOf(request);
      const endpoint = await ownEndpoint(ctx, member, request.query.id);
      if (endpoint === undefined) return notFound(reply, member.ctx);
      return send(reply, 200, views.confirmWebhookPage(member.ctx, endpoint, action));
    });
  }

  scope.post<Typed<typeof ACT>>('/webhooks/rotate', { schema: ACT }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    const secret = endpoint === undefined ? undefined : await rotateWebhookSecret(store, clock, endpoint.id);
    if (endpoint === undefined || secret === undefined) return notFound(reply, member.ctx);
    await audit(member, { action: 'webhook.secret_rotated', country: endpoint.country, webhook_url: endpoint.url });
    return send(reply, 200, views.webhookSecretPage(member.ctx, { ...endpoint, secret }, 'rotated'));
  });

  scope.post<Typed<typeof ACT>>('/webhooks/remove', { schema: ACT }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    if (endpoint === undefined || !(await store.webhooks.remove(endpoint.id))) return notFound(reply, member.ctx);
    await audit(member, { action: 'webhook.removed', country: endpoint.country, webhook_url: endpoint.url });
    return reply.redirect(`${path(member)}?done=removed`, 303);
  });
}

/** Replay, the events an endpoint is told of, and its attempt log, page by page (issue 43). */
function webhookHistoryRoutes(scope: FastifyInstance, ctx: DashboardContext): void {
  const { store, clock, send, notFound, audit, memberOf } = ctx;
  const back = (member: Member, endpoint: WebhookEndpoint, done: string) =>
    `${layout.developerPath(member.ctx.accountId, 'webhooks')}?done=${done}&id=${endpoint.id}#webhook-${endpoint.id}`;

  scope.get<Typed<typeof ONE>>('/webhooks/replay', { schema: ONE }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.query.id);
    return endpoint === undefined ? notFound(reply, member.ctx) : send(reply, 200, views.replayPage(member.ctx, endpoint));
  });
  scope.post<Typed<typeof REPLAY>>('/webhooks/replay', { schema: REPLAY }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    if (endpoint === undefined) return notFound(reply, member.ctx);
    const since = request.body.since.trim();
    try {
      await replayWebhook(store, clock, endpoint, WITHOUT_OFFSET.test(since) ? `${since}Z` : since);
    } catch (error) {
      if (error instanceof WebhookError) return send(reply, 400, views.replayPage(member.ctx, endpoint, { since, error: error.message }));
      throw error;
    }
    await audit(member, { action: 'webhook.replayed', country: endpoint.country, webhook_url: endpoint.url });
    return reply.redirect(back(member, endpoint, 'replayed'), 303);
  });

  scope.get<Typed<typeof ONE>>('/webhooks/filters', { schema: ONE }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.query.id);
    return endpoint === undefined ? notFound(reply, member.ctx) : send(reply, 200, views.filtersPage(member.ctx, endpoint));
  });
  scope.post<Typed<typeof FILTERS>>('/webhooks/filters', { schema: FILTERS }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.body.id);
    if (endpoint === undefined) return notFound(reply, member.ctx);
    try {
      await setWebhookFilters(store, endpoint, { changes: request.body.changes || 'all', usageTypes: request.body.usage_types });
    } catch (error) {
      if (error instanceof WebhookError) return send(reply, 400, views.filtersPage(member.ctx, endpoint, error.message));
      throw error;
    }
    await audit(member, { action: 'webhook.filters_changed', country: endpoint.country, webhook_url: endpoint.url });
    return reply.redirect(back(member, endpoint, 'filtered'), 303);
  });

  scope.get<Typed<typeof ATTEMPTS>>('/webhooks/attempts', { schema: ATTEMPTS }, async (request, reply) => {
    const member = memberOf(request);
    const endpoint = await ownEndpoint(ctx, member, request.query.id);
    if (endpoint === undefined) return notFound(reply, member.ctx);
    const raw = request.query.before;
    const before = raw === '' ? undefined : canonicalUuid(raw);
    if (raw !== '' && before === undefined) return notFound(reply, member.ctx);
    const attempts = await store.webhooks.attempts(endpoint.id, ATTEMPTS_PAGE + 1, before);
    const older = attempts.length > ATTEMPTS_PAGE ? attempts[ATTEMPTS_PAGE - 1]!.id : undefined;
    return send(reply, 200, views.attemptsPage(member.ctx, endpoint, attempts.slice(0, ATTEMPTS_PAGE), { older, paged: before !== undefined }));
  });
}
