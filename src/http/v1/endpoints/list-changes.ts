import { Type } from '#typebox';
import { badRequest } from '../../../core/api-error.js';
import { defineEndpoint } from '../endpoint.js';
import { ERROR_EXAMPLES as x, FEATURED_ID, SPARSE_ID, featuredListing } from '../examples.js';
import { Query } from '../query.js';
import { CHECKS } from './checks.js';

export const DEFAULT_FEED_LIMIT = 100;
export const MAX_FEED_LIMIT = 1000;

/** D22: `cursor` (opaque, once) and `limit` (1-1000, default 100; larger up to 2^31-1 clamped; else 400). */
const feedQuery = Type.Object({
  cursor: Type.Optional(Query.text({
    description: 'The `next_cursor` of an earlier answer, as it was (opaque). Without it, the feed starts from the beginning: every visible listing. A cursor that cannot be used is 400: start again without one.',
    example: '<next_cursor of the previous answer>',
  })),
  limit: Query.wholeNumber({
    minimum: 1,
    default: DEFAULT_FEED_LIMIT,
    clampTo: MAX_FEED_LIMIT,
    description: `Events per answer, written like \`page\`: from 1 to ${MAX_FEED_LIMIT}, default ${DEFAULT_FEED_LIMIT}. A value above ${MAX_FEED_LIMIT} (up to 2147483647) is clamped to ${MAX_FEED_LIMIT}; below 1, above 2147483647, or given twice is 400.`,
    example: 500,
  }),
});

const FIRST_CURSOR = 'WzEsImMyZTQiLCJzZyIsImwiLDQyLCIiLCIiLCIiLCIiXQ.9dY3xN0pQm2Lr7Vs8Kc1Za';

export const listChanges = defineEndpoint({
  // A static segment: the router prefers it to `/v1/listings/:id`.
  url: '/v1/listings/changes',
  operationId: 'listChanges',
  summary: 'Changes since a cursor (keep a copy in sync)',
  description: [
    'What changed in the key\'s listings since a cursor, as events, so that a copy of them can be kept up to date without reading every page again.',
    '',
    '**Replay.** Start without a cursor: the first answers give every visible listing as `listing.upserted`. Apply each event in order: `listing.upserted` is put (store the listing, replacing any copy), `listing.removed` is delete (a removal of an id you do not hold is nothing to do). While `has_more` is true, ask again at once with `next_cursor`; when it is false you are caught up: keep `next_cursor` and poll with it later. Replaying from any cursor brings a copy that was exact then up to date again, and a caught-up copy holds exactly the listings (and objects) that reading every page of the list would give.',
    '',
    '**Events.** A listing that becomes visible, or changes while visible, gives `listing.upserted` with the whole listing object, exactly as in the list. One that stops being visible (another status, another owner or country) gives `listing.removed`. An expiry passing is a removal at the expiry instant, with no write needed. Events come in the order they took effect (`at`); a listing may appear in several answers, and its last event is its current state.',
    '',
    '**Polling.** An answer with no new events is byte for byte the previous answer with the same cursor (its `next_cursor` is that cursor): send its `ETag` in `If-None-Match` and such polls are free 304s.',
    '',
    '**Cursors** are opaque and tamper-evident: only the cursors this API issued for this key\'s account and country are accepted, on any instance, for as long as the change history after them is kept (at least 30 days); anything else is 400, and you start again without a cursor.',
    '',
    `${CHECKS}, the query parameters and the cursor (400). The list's filters do not apply here.`,
  ],
  querystring: feedQuery,
  ok: {
    description: 'Events since the cursor.',
    schema: 'ChangePage',
    links: {
      next: {
        operationId: 'listChanges',
        parameters: { cursor: '$response.body#/next_cursor' },
        description: 'The next call: at once while `has_more` is true, else the next poll.',
      },
    },
    examples: {
      first: {
        summary: 'The first answer, without a cursor: every visible listing',
        value: { items: [{ type: 'listing.upserted', id: FEATURED_ID, at: '2026-11-20T03:14:07.512Z', listing: featuredListing }], next_cursor: FIRST_CURSOR, has_more: false },
      },
      changes: {
        summary: 'A later poll: a listing changed, another was leased, a third expired',
        value: {
          items: [
            { type: 'listing.upserted', id: FEATURED_ID, at: '2026-11-21T08:00:00.000Z', listing: { ...featuredListing, price: 9.25 } },
            { type: 'listing.removed', id: SPARSE_ID, at: '2026-11-21T09:30:00.000Z' },
            { type: 'listing.removed', id: '5b8e2c1d-7a4f-4e3b-9d6c-0f1a2b3c4d5e', at: '2026-11-21T15:59:59.000Z' },
          ],
          next_cursor: 'WzEsImMyZTQiLCJzZyIsImwiLDQ1LCIyMDI2LTExLTIxVDE1OjU5OjU5LjAwMFoiLCI1YjhlIiwiIiwiIl0.q7Rm2Xc9Lk3Vb1Nz5Pd8Ws',
          has_more: false,
        },
      },
      caughtUp: { summary: 'Nothing new: the same cursor back', value: { items: [], next_cursor: FIRST_CURSOR, has_more: false } },
    },
  },
  badRequest: {
    description:
      '`limit` is not a base-10 whole number (as `page`), is below 1 or above 2147483647, or is given more than once; or `cursor` is given more than once or cannot be used: it was edited or forged, was issued for another account or country, or is older than the change history kept (at least 30 days). Start again without a cursor.',
    examples: { limitZero: x.limitZero, cursorRefused: x.cursorRefused },
  },
  read(reads, tenant, { cursor, limit }) {
    // An empty cursor is not "no cursor": it is a cursor this API never issued (D22).
    if (cursor === '') throw badRequest('Query parameter "cursor" is empty, which is not a cursor this API issued. Start again without a cursor to get every listing, then follow next_cursor.', 'bad_cursor');
    return reads.changes(tenant, cursor, limit);
  },
});
