import type { FastifyInstance } from 'fastify';
import * as views from '../views.js';
import type { DashboardContext } from './context.js';

const ACTIVITY_LIMIT = 200;

/** Settings > Developer > Activity: the account's audit log, newest first. */
export async function activityRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, send, memberOf } = ctx;

  scope.get('/activity', async (request, reply) => {
    const member = memberOf(request);
    const entries = await store.audit.listForAccount(member.ctx.accountId, ACTIVITY_LIMIT);
    return send(reply, 200, views.activityPage(member.ctx, entries, ACTIVITY_LIMIT));
  });
}
