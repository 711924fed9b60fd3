import type { FastifyInstance } from 'fastify';
import { canonicalUuid } from '../../core/formats.js';
import type { DashboardContext } from '../context.js';
import { accountParams, query, text, type Typed } from '../schemas.js';
import * as views from './views.js';

const LIST = { params: accountParams(), querystring: query({ before: text() }) };

/** Entries per page of the activity log. */
export const ACTIVITY_PAGE = 50;

/**
 * Settings > Developer > Activity: the account's audit log, newest first, ACTIVITY_PAGE entries a
 * page; "Older entries" pages back by keyset (`?before=<id of the page's last entry>`) to the first.
 */
export async function activityRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, send, notFound, memberOf } = ctx;

  scope.get<Typed<typeof LIST>>('/activity', { schema: LIST }, async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const raw = request.query.before;
    let before: Awaited<ReturnType<typeof store.audit.get>>;
    if (raw !== '') {
      const id = canonicalUuid(raw);
      before = id === undefined ? undefined : await store.audit.get(accountId, id);
      // Another account's entry, or none: as for anything that does not exist.
      if (before === undefined) return notFound(reply, member.ctx);
    }
    // One more than a page: whether there are older entries.
    const entries = await store.audit.listForAccount(accountId, ACTIVITY_PAGE + 1, before);
    const older = entries.length > ACTIVITY_PAGE ? entries[ACTIVITY_PAGE - 1]!.id : undefined;
    return send(reply, 200, views.activityPage(member.ctx, entries.slice(0, ACTIVITY_PAGE), { older, paged: before !== undefined }));
  });
}
