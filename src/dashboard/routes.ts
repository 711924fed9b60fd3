import type { FastifyInstance } from 'fastify';
import { CSRF_FIELD, fromThisSite, tokenMatches } from './csrf.js';
import * as layout from './layout.js';
import { accountParams } from './schemas.js';
import { activityRoutes } from './activity/routes.js';
import { dashboardContext, field, type Member, type RouteDeps } from './context.js';
import { failureRoutes } from './failures/routes.js';
import { keyRoutes } from './keys/routes.js';
import { originRoutes } from './origins/routes.js';
import { signInRoutes } from './sign-in/routes.js';
import { usageRoutes } from './usage/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

export type { RouteDeps } from './context.js';

/**
 * The dashboard's routes: signing in, then Settings > Developer of one account, one plugin per
 * resource (keys, origins, usage, failed requests, webhooks, activity) behind one guard.
 */
export async function dashboardRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  const ctx = dashboardContext(app, deps);
  const { resume, forbidden, notFound } = ctx;

  await signInRoutes(app, ctx);

  await app.register(async (scope) => {
    scope.decorateRequest('member', null);

    // The one guard every page below passes: signed in (else to the sign-in page); for a POST, a
    // valid CSRF token from this site (else 403, nothing changed); and the account in the URL is
    // the member's own (else 404, as for anything that does not exist). Before the route's schema
    // is checked (schemas.ts), so that nobody learns more from a malformed request than from another.
    scope.addHook('preValidation', async (request, reply) => {
      const member = await resume(request);
      if (member === undefined) return reply.redirect('/sign-in', 303);
      if (request.method === 'POST' && (!fromThisSite(request) || !tokenMatches(member.ctx.csrf, field(request.body, CSRF_FIELD)))) {
        return forbidden(reply, member.ctx);
      }
      if ((request.params as { accountId?: string }).accountId !== member.user.account_id) return notFound(reply, member.ctx);
      (request as typeof request & { member: Member }).member = member;
    });
    scope.get('', { schema: { params: accountParams() } }, async (request, reply) => reply.redirect(layout.developerPath(ctx.memberOf(request).ctx.accountId, 'keys'), 303));
    for (const routes of [keyRoutes, originRoutes, usageRoutes, failureRoutes, webhookRoutes, activityRoutes]) await routes(scope, ctx);
  }, { prefix: '/accounts/:accountId/settings/developer' });

  app.setNotFoundHandler(async (request, reply) => {
    const member = await resume(request).catch(() => undefined);
    return notFound(reply, member?.ctx);
  });
}
