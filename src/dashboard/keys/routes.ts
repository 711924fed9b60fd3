import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '#typebox';
import { issueKey, KeyLimitError } from '../../auth/keys.js';
import { keyDisplay } from '../../auth/key-format.js';
import { canonicalUuid } from '../../core/formats.js';
import { isCountry, type Country } from '../../core/countries.js';
import type { ApiKeyRecord } from '../../storage/index.js';
import { FORM_CLAIM_RETAIN_MS, FORM_FIELD, newFormToken, readFormToken } from '../forms.js';
import { labelProblem, type DashboardContext, type Member } from '../context.js';
import * as layout from '../layout.js';
import { accountParams, form, query, text, type Typed } from '../schemas.js';
import * as views from './views.js';

const LIST = { params: accountParams(), querystring: query({ revoked: text(), relabelled: text() }) };
const CREATE = { params: accountParams(), body: form({ label: text(), country: text(), [FORM_FIELD]: text() }) };
const KEY = { params: accountParams({ keyId: Type.String() }) };
const RELABEL = { ...KEY, body: form({ label: text() }) };
const REVOKE = { ...KEY, body: form({}) };

/** The keys page: the account's keys with their exact last use, the recent audit entries and a new create form. */
async function keysPage(ctx: DashboardContext, member: Member, extra: Partial<Parameters<typeof views.keysPage>[1]> = {}): Promise<string> {
  const { store, config, clock } = ctx;
  const [keys, recent] = await Promise.all([store.keys.listForAccount(member.ctx.accountId), store.audit.listForAccount(member.ctx.accountId, 5)]);
  // Every rendering of the create form is a new single-use form (forms.ts).
  const formToken = newFormToken(member.sessionId, clock());
  return views.keysPage(member.ctx, {
    keys: keys.map(ctx.withLastUse), recent, countries: config.countries, formToken, defaultLimit: config.rateLimitPerMinute,
    maxKeysPerCountry: config.maxKeysPerAccountCountry, ...extra,
  });
}

/**
 * The answer to a create form sent again (a reload of the new key's page, a second click): names
 * the key the form made, which cannot be shown again (D20), and mints nothing.
 */
async function formUsed(ctx: DashboardContext, reply: FastifyReply, member: Member, nonce: string) {
  const use = await ctx.store.forms.get(nonce);
  const key = use?.key_id == null ? undefined : await ctx.store.keys.get(use.key_id);
  return ctx.send(reply, 409, views.formUsedPage(member.ctx, key?.account_id === member.ctx.accountId ? key : undefined));
}

/** The confirmation of a revoke or a rename (`?revoked=` or `?relabelled=`), of a key of the member's account only. */
async function changeNotice(ctx: DashboardContext, member: Member, query: Typed<typeof LIST>['Querystring']): Promise<string | undefined> {
  let notice: string | undefined;
  for (const [name, verb] of [['revoked', 'Revoked'], ['relabelled', 'Renamed']] as const) {
    const id = canonicalUuid(query[name]);
    if (id === undefined) continue;
    const key = await ctx.store.keys.get(id);
    if (key?.account_id === member.ctx.accountId) {
      notice = name === 'revoked'
        ? `${verb} key "${key.label}" (${keyDisplay(key)}). Requests with it now get 401 unauthorized.`
        : `${verb} key ${keyDisplay(key)} to "${key.label}".`;
    }
  }
  return notice;
}

/** The create form's label and country, with what is wrong with each (no errors: a key can be made). */
function readCreateForm(body: Typed<typeof CREATE>['Body'], served: ReadonlySet<string>): views.CreateKeyForm {
  const label = body.label.trim();
  const country = body.country.trim().toLowerCase();
  const errors: views.CreateKeyForm['errors'] = {};
  const labelError = labelProblem(label);
  if (labelError !== undefined) errors.label = labelError;
  if (!isCountry(country) || !served.has(country)) errors.country = 'choose one of the countries in the list.';
  return { label, country, errors };
}

/** A create form sent: one new key per single-use form, shown in full in this one answer. */
async function createKey(ctx: DashboardContext, request: FastifyRequest<Typed<typeof CREATE>>, reply: FastifyReply) {
  const { store, clock, nowIso, served, send, forbidden, audit, settled, memberOf } = ctx;
  const member = memberOf(request);
  // A page from before single-use forms, an edited token or an expired one: like an expired CSRF token.
  const form = readFormToken(member.sessionId, request.body[FORM_FIELD], clock());
  if (form === undefined) return forbidden(reply, member.ctx);
  const create = readCreateForm(request.body, served);
  const { label, country, errors } = create;
  if (errors.label !== undefined || errors.country !== undefined) {
    return send(reply, 400, await keysPage(ctx, member, { create }));
  }
  // One key per form, on every instance: the first submission claims the form in the database.
  await store.forms.deleteUsedBefore(new Date(clock() - FORM_CLAIM_RETAIN_MS).toISOString());
  if (!(await store.forms.claim({ nonce: form.nonce, account_id: member.ctx.accountId, user_id: member.user.id, used_at: nowIso() }))) {
    return formUsed(ctx, reply, member, form.nonce);
  }
  let created: Awaited<ReturnType<typeof issueKey>>;
  try {
    created = await issueKey(store, {
      accountId: member.ctx.accountId, country: country as Country, label, now: new Date(clock()), maxActive: ctx.config.maxKeysPerAccountCountry,
    });
  } catch (error) {
    // Nothing was created: the member may send the same form again.
    await store.forms.release(form.nonce).catch(() => undefined);
    if (!(error instanceof KeyLimitError)) throw error;
    // Issue 40 item 9: at the cap, the form says so, with what to do.
    const limit = `${layout.countryName(country)} has ${error.max} active keys already, the most an account may have in one country. Revoke a key you no longer use, then create this one.`;
    return send(reply, 409, await keysPage(ctx, member, { create: { ...create, errors: { country: limit } } }));
  }
  await store.forms.recordKey(form.nonce, created.id);
  const key = (await store.keys.get(created.id))!;
  await audit(member, { action: 'key.created' }, key);
  await settled();
  // The full key is in this one response and nowhere else: not in a redirect, the session, or a log (D20).
  return send(reply, 201, views.keyCreatedPage(member.ctx, {
    key,
    fullKey: created.key,
    curl: `curl -H "Authorization: Bearer ${created.key}" ${ctx.apiBaseUrl(key.country as Country)}/v1/listings`,
  }));
}

/** Settings > Developer > API keys: list, create (a single-use form), rename, revoke. */
export async function keyRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, clock, nowIso, send, notFound, audit, settled, memberOf } = ctx;

  /** One of the member's account's keys, by the id in the URL; undefined for anything else. */
  async function ownKey(request: FastifyRequest<Typed<typeof KEY>>): Promise<ApiKeyRecord | undefined> {
    const keyId = canonicalUuid(request.params.keyId);
    if (keyId === undefined) return undefined;
    const key = await store.keys.get(keyId);
    return key !== undefined && key.account_id === memberOf(request).user.account_id ? key : undefined;
  }

  scope.get<Typed<typeof LIST>>('/keys', { schema: LIST }, async (request, reply) => {
    const member = memberOf(request);
    const notice = await changeNotice(ctx, member, request.query);
    return send(reply, 200, await keysPage(ctx, member, { notice }));
  });

  scope.post<Typed<typeof CREATE>>('/keys', { schema: CREATE }, (request, reply) => createKey(ctx, request, reply));

  scope.post<Typed<typeof RELABEL>>('/keys/:keyId/label', { schema: RELABEL }, async (request, reply) => {
    const member = memberOf(request);
    const key = await ownKey(request);
    if (key === undefined) return notFound(reply, member.ctx);
    if (key.revoked_at !== null) {
      return send(reply, 409, layout.errorPage(409, 'This key is revoked', 'A revoked key keeps its label. Nothing was changed.', member.ctx));
    }
    const label = request.body.label.trim();
    const problem = labelProblem(label);
    if (problem !== undefined) return send(reply, 400, await keysPage(ctx, member, { relabel: { keyId: key.id, label, error: problem } }));
    if (label !== key.label) {
      if (!(await store.keys.relabel(key.id, member.ctx.accountId, label))) return notFound(reply, member.ctx);
      await audit(member, { action: 'key.relabelled', key_label: label, previous_label: key.label }, key);
      await settled();
    }
    return reply.redirect(`${layout.developerPath(member.ctx.accountId, 'keys')}?relabelled=${key.id}#key-${key.id}`, 303);
  });

  scope.get<Typed<typeof KEY>>('/keys/:keyId/revoke', { schema: KEY }, async (request, reply) => {
    const member = memberOf(request);
    const key = await ownKey(request);
    if (key === undefined) return notFound(reply, member.ctx);
    return send(reply, 200, views.revokePage(member.ctx, ctx.withLastUse(key), { now: clock(), limitPerMinute: ctx.limitOf(key) }));
  });

  scope.post<Typed<typeof REVOKE>>('/keys/:keyId/revoke', { schema: REVOKE }, async (request, reply) => {
    const member = memberOf(request);
    const key = await ownKey(request);
    if (key === undefined) return notFound(reply, member.ctx);
    if (key.revoked_at === null) {
      await store.keys.revoke(key.id, nowIso());
      await audit(member, { action: 'key.revoked' }, key);
      // D4: once this response is sent, every API instance refuses the key.
      await settled();
    }
    return reply.redirect(`${layout.developerPath(member.ctx.accountId, 'keys')}?revoked=${key.id}`, 303);
  });
}
