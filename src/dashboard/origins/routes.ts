import type { FastifyInstance } from 'fastify';
import { isCountry } from '../../core/countries.js';
import { validateOriginToRegister } from '../../cors/origin.js';
import type { DashboardContext, Member } from '../context.js';
import * as layout from '../layout.js';
import { accountParams, form, query, text, type Typed } from '../schemas.js';
import * as views from './views.js';

const LIST = { params: accountParams(), querystring: query({ done: text(), country: text(), origin: text() }) };
const ADD = { params: accountParams(), body: form({ country: text(), origin: text() }) };
const CONFIRM_REMOVE = { params: accountParams(), querystring: query({ country: text(), origin: text() }) };
const REMOVE = { params: accountParams(), body: form({ country: text(), origin: text() }) };

/** Settings > Developer > Allowed origins: list, add, remove (confirmed first). */
export async function originRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, config, nowIso, served, send, notFound, audit, settled, memberOf } = ctx;

  async function originsPage(member: Member, extra: Partial<Parameters<typeof views.originsPage>[1]> = {}): Promise<string> {
    const [origins, keys] = await Promise.all([store.origins.listForAccount(member.ctx.accountId), store.keys.listForAccount(member.ctx.accountId)]);
    const keyCountries = new Set(keys.filter((k) => k.revoked_at === null).map((k) => k.country));
    return views.originsPage(member.ctx, { origins, keyCountries, countries: config.countries, ...extra });
  }

  scope.get<Typed<typeof LIST>>('/origins', { schema: LIST }, async (request, reply) => {
    const member = memberOf(request);
    let notice: string | undefined;
    const { done, country, origin } = request.query;
    if (isCountry(country)) {
      const checked = validateOriginToRegister(origin);
      const name = layout.COUNTRY_NAMES[country];
      if ('origin' in checked && checked.origin === origin) {
        const listed = (await store.origins.isAllowed(member.ctx.accountId, country, origin));
        if (done === 'added' && listed) notice = `Allowed ${origin} for ${name}. Browsers on that origin can now call the API with ${country} keys.`;
        if (done === 'exists' && listed) notice = `${origin} was already allowed for ${name}.`;
        if (done === 'removed' && !listed) notice = `Removed ${origin} for ${name}. Browser calls from it now get 403 origin_not_allowed.`;
      }
    }
    return send(reply, 200, await originsPage(member, { notice }));
  });

  scope.post<Typed<typeof ADD>>('/origins', { schema: ADD }, async (request, reply) => {
    const member = memberOf(request);
    const country = request.body.country.trim().toLowerCase();
    const input = request.body.origin;
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
    return reply.redirect(`${layout.developerPath(member.ctx.accountId, 'origins')}?${query}#country-${country}`, 303);
  });

  /**
   * Removing an origin breaks every page on it at its next API call, so it is confirmed first, as
   * revoking a key is: this page, then its form's POST. Only an origin of the member's own account.
   */
  scope.get<Typed<typeof CONFIRM_REMOVE>>('/origins/remove', { schema: CONFIRM_REMOVE }, async (request, reply) => {
    const member = memberOf(request);
    const { country } = request.query;
    const checked = validateOriginToRegister(request.query.origin);
    if (!isCountry(country) || 'error' in checked) return notFound(reply, member.ctx);
    const origin = (await store.origins.listForAccount(member.ctx.accountId)).find((o) => o.country === country && o.origin === checked.origin);
    if (origin === undefined) return notFound(reply, member.ctx);
    const keys = await store.keys.listForAccount(member.ctx.accountId);
    const activeKeys = keys.filter((k) => k.revoked_at === null && k.country === country).length;
    return send(reply, 200, views.removeOriginPage(member.ctx, origin, activeKeys));
  });

  scope.post<Typed<typeof REMOVE>>('/origins/remove', { schema: REMOVE }, async (request, reply) => {
    const member = memberOf(request);
    const country = request.body.country.trim().toLowerCase();
    const checked = validateOriginToRegister(request.body.origin);
    if (!isCountry(country) || 'error' in checked) return notFound(reply, member.ctx);
    if (!(await store.origins.remove(member.ctx.accountId, country, checked.origin))) return notFound(reply, member.ctx);
    await audit(member, { action: 'origin.removed', country, origin: checked.origin });
    // D4: once this response is sent, every API instance refuses the origin.
    await settled();
    const query = new URLSearchParams({ done: 'removed', country, origin: checked.origin });
    return reply.redirect(`${layout.developerPath(member.ctx.accountId, 'origins')}?${query}`, 303);
  });
}
