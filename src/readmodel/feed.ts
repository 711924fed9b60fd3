import { badRequest } from '../core/api-error.js';
import type { Clock } from '../core/clock.js';
import { yieldToEventLoop } from '../core/event-loop.js';
import { expiredAt, isActiveInTenant, type Expiry, type LastChange, type ServedListingRow, type Store } from '../storage/index.js';
import { CursorError, decodeCursor, encodeCursor, type FeedPosition } from './feed-cursor.js';

/**
 * The change feed (D22): what changed in a tenant's listings since a cursor, as events, so that a
 * site can keep a copy without re-reading every page.
 *
 * Without a cursor it starts with a snapshot: every visible listing as `listing.upserted`, in the
 * order its state took effect; then (and from any later cursor) it replays two streams merged in
 * time order:
 *  - the tenant's changes after the cursor's sequence (storage/changes.ts), each the last change
 *    of its listing, told as the listing's state now: `listing.upserted` with the listing when it
 *    is visible, `listing.removed` when it is not (another status, owner or country);
 *  - the expiries that passed after the cursor's expiry position: `listing.removed` at the expiry
 *    instant, with no write needed (D10). A listing whose last write was before its expiry is told
 *    by its expiry; one whose write set an expiry already past, by its write.
 * Replaying both from any cursor brings a copy that was exact then up to date again; the last event
 * of an id is its current state. A listing never comes twice in one answer. An answer is read in
 * batches with the event loop turning between them, so a listing can be written meanwhile (by this
 * process or another): the snapshot keeps the state it read first, and the log, in this answer or a
 * later one, tells the newer state, which replaces an earlier event of the same answer.
 *
 * Cursors (feed-cursor.ts) move only over what an answer consumed: an answer with no event is
 * byte for byte the answer to the previous poll with the same cursor, so polling with
 * If-None-Match costs nothing (D21).
 */
export const CURSOR_REFUSED =
  'This cursor cannot be used: it was not issued by this API for this key\'s account and country, or it is older than the change history kept (at least 30 days). Start again without a cursor to get every listing, then follow next_cursor.';

interface Tenant {
  ownerAccountId: string;
  country: string;
}

/** One item of a stream; `event` is undefined for an item that says nothing new. */
interface Item {
  id: string;
  event: string | undefined;
  /** What the event tells of the listing (its change when upserted): to know a repeat from news. */
  state: string;
  advance(position: FeedPosition): void;
}

/** Where in an answer a listing was told, and which state. */
interface Told {
  index: number;
  state: string;
}

const upsertedState = (row: ServedListingRow) => `upserted ${Number(row.change_seq)}`;
const REMOVED = 'removed';

/** Batches read per stream while merging. */
const BATCH = 200;

/** What a feed reads with, built once per feed: the store, and how a listing is told in an event. */
interface FeedSource {
  store: Store;
  listingText: (row: ServedListingRow) => string;
}

const upsertedEvent = (source: FeedSource, id: string, at: string, row: ServedListingRow) =>
  `{"type":"listing.upserted","id":"${id}","at":"${at}","listing":${source.listingText(row)}}`;
const removedEvent = (id: string, at: string) => `{"type":"listing.removed","id":"${id}","at":"${at}"}`;

/** A replay's starting point that the history kept cannot serve, or a cursor not this tenant's. */
export class FeedPositionError extends Error {}

export function createFeed(store: Store, clock: Clock, listingText: (row: ServedListingRow) => string) {
  const source: FeedSource = { store, listingText };
  let secret: Promise<string> | undefined;
  const cursorSecret = () => (secret ??= store.feed.cursorSecret().catch((error: unknown) => {
    secret = undefined;
    throw error;
  }));

  return {
    /**
     * The cursor of a reader caught up now, at the tenant's `version`: where a new webhook endpoint
     * starts (D24: it is told of changes committed after it was added), and where one resumes after
     * the history it needed was pruned.
     */
    async endCursor(tenant: Tenant, version: number): Promise<string> {
      const position: FeedPosition = { phase: 'log', seq: version, expiry: new Date(clock()).toISOString(), expiryId: '', updatedAt: '', afterId: '' };
      return encodeCursor(await cursorSecret(), tenant, position);
    },

    /**
     * Where a replay of the tenant's changes since `since` starts (issue 43): the position of a
     * reader exact at that instant (after every change made before it, before every expiry after
     * it), or a cursor this API issued for the tenant. Throws a FeedPositionError (its message says
     * why, for the operator or the admin) when the history kept does not reach back that far.
     */
    async replayFrom(tenant: Tenant, since: { at: string } | { cursor: string }): Promise<string> {
      const key = await cursorSecret();
      const pruned = await store.feed.prunedSeq(tenant.ownerAccountId, tenant.country);
      if ('cursor' in since) {
        let position: FeedPosition;
        try {
          position = decodeCursor(key, tenant, since.cursor);
        } catch {
          throw new FeedPositionError('that cursor was not issued by this API for this account and country');
        }
        if (position.seq < pruned) throw new FeedPositionError('that cursor is older than the change history kept');
        return since.cursor;
      }
      const seq = await store.feed.lastSeqBefore(tenant.ownerAccountId, tenant.country, since.at);
      // No change kept from before that instant: the history reaches back to it only if none was ever pruned.
      if (seq === undefined && pruned > 0) throw new FeedPositionError(`the change history kept does not reach back to ${since.at}`);
      return encodeCursor(key, tenant, { phase: 'log', seq: seq ?? 0, expiry: since.at, expiryId: '', updatedAt: '', afterId: '' });
    },

    /** The JSON of one answer; `version` is the tenant's current version (where a snapshot hands over to the log). */
    async answer(tenant: Tenant, cursor: string | undefined, limit: number, version: number): Promise<string> {
      const key = await cursorSecret();
      const nowIso = new Date(clock()).toISOString();
      let position: FeedPosition;
      if (cursor === undefined) {
        position = { phase: 'snapshot', seq: version, expiry: nowIso, expiryId: '', updatedAt: '', afterId: '' };
      } else {
        position = decodedCursor(key, tenant, cursor);
        // The history after the cursor must still be whole.
        if (position.seq < (await store.feed.prunedSeq(tenant.ownerAccountId, tenant.country))) throw badRequest(CURSOR_REFUSED, 'bad_cursor');
      }
      const events: string[] = [];
      // What this answer told of each listing, and where: a listing comes once per answer.
      const told = new Map<string, Told>();
      let hasMore = false;
      if (position.phase === 'snapshot') {
        hasMore = tellSnapshot(source, await snapshotRows(store, tenant, position, nowIso, limit + 1), limit, position, events, told);
      }
      if (position.phase === 'log' && !hasMore) {
        hasMore = await replay(source, tenant, position, nowIso, limit - events.length, events, told);
      }
      // Nothing new: the same answer as the previous poll with this cursor (D22, D21).
      const next = cursor !== undefined && events.length === 0 ? cursor : encodeCursor(key, tenant, position);
      return `{"items":[${events.filter((event) => event !== '').join(',')}],"next_cursor":"${next}","has_more":${hasMore}}`;
    },
  };
}

/** The position a cursor names; a cursor this API did not issue for this tenant is refused. */
function decodedCursor(key: string, tenant: Tenant, cursor: string): FeedPosition {
  try {
    return decodeCursor(key, tenant, cursor);
  } catch (error) {
    if (error instanceof CursorError) throw badRequest(CURSOR_REFUSED, 'bad_cursor');
    throw error;
  }
}

/**
 * Tells up to `limit` of the snapshot's `rows` (read one past the limit) as `listing.upserted`,
 * and moves `position` after the last one told, or over to the log when the snapshot is done.
 * True when more of the snapshot is pending.
 */
function tellSnapshot(source: FeedSource, rows: ServedListingRow[], limit: number, position: FeedPosition, events: string[], told: Map<string, Told>): boolean {
  for (const row of rows.slice(0, limit)) {
    told.set(row.id, { index: events.length, state: upsertedState(row) });
    events.push(upsertedEvent(source, row.id, row.updated_at, row));
  }
  if (rows.length > limit) {
    const last = rows[limit - 1]!;
    position.updatedAt = last.updated_at;
    position.afterId = last.id;
    return true;
  }
  position.phase = 'log';
  position.updatedAt = '';
  position.afterId = '';
  return false;
}

/**
 * Up to `count` listings of the snapshot after `position`, on SQLite read BATCH at a time with a
 * turn of the event loop between reads (its driver is synchronous: 1,001 listings' JSON read at
 * once held the loop about 15 ms; PostgreSQL's is not, and reads them at once). A listing
 * written meanwhile can come again, later in the order (its update time moved): it is kept
 * once, at its first place, and its new state comes from the log, which the snapshot hands over
 * to at the version it started from.
 */
async function snapshotRows(store: Store, tenant: Tenant, position: FeedPosition, nowIso: string, count: number): Promise<ServedListingRow[]> {
  const batchSize = store.dialect === 'sqlite' ? BATCH : count;
  const rows: ServedListingRow[] = [];
  const ids = new Set<string>();
  let after = position.afterId === '' ? undefined : { updatedAt: position.updatedAt, id: position.afterId };
  for (let reads = 0; rows.length < count; reads++) {
    if (reads > 0) await yieldToEventLoop();
    const want = Math.min(batchSize, count - rows.length);
    const batch = await store.feed.snapshot(tenant.ownerAccountId, tenant.country, nowIso, after, want);
    for (const row of batch) {
      if (ids.has(row.id)) continue;
      ids.add(row.id);
      rows.push(row);
    }
    if (batch.length < want) break;
    const last = batch.at(-1)!;
    after = { updatedAt: last.updated_at, id: last.id };
  }
  return rows;
}

/**
 * Merges the two streams from `position` into `events`, up to `room` events, moving `position`
 * over what it consumed. True when more events are pending.
 */
async function replay(
  source: FeedSource,
  tenant: Tenant,
  position: FeedPosition,
  nowIso: string,
  room: number,
  events: string[],
  told: Map<string, Told>,
): Promise<boolean> {
  const { store } = source;
  const writes = stream<LastChange, number>(
    (afterSeq) => store.feed.lastChanges(tenant.ownerAccountId, tenant.country, afterSeq, BATCH),
    (c) => c.seq,
    position.seq,
  );
  const expiries = stream<Expiry, { expiry: string; id: string }>(
    (after) => store.feed.expiries(tenant.ownerAccountId, tenant.country, after, nowIso, BATCH),
    (x) => ({ expiry: x.expiry_date, id: x.id }),
    { expiry: position.expiry, id: position.expiryId },
  );
  const rows = new Map<string, ServedListingRow | undefined>();
  const consumed: Item[] = [];
  let emitted = 0;
  let more = false;
  for (;;) {
    const [w, x] = [await writes.peek(), await expiries.peek()];
    if (w === undefined && x === undefined) break;
    // In the order the changes took effect; a write before an expiry of the same instant.
    const item = w !== undefined && (x === undefined || w.at <= x.expiry_date) ? await writeItem(writes.take()!) : expiryItem(expiries.take()!);
    // Told already in this answer (by the snapshot, or read twice across batches): the same
    // state once is enough, and the position still moves over it. A state read since (another
    // process wrote the listing after the snapshot read it) replaces the earlier event: the
    // listing comes once, at the place of its latest change, with that state (D22: the last
    // event of an id is its current state).
    const earlier = item.event === undefined ? undefined : told.get(item.id);
    if (earlier !== undefined && earlier.state === item.state) item.event = undefined;
    if (item.event !== undefined && earlier === undefined && emitted === room) {
      more = true;
      break;
    }
    consumed.push(item);
    if (item.event !== undefined) {
      if (earlier !== undefined) events[earlier.index] = '';
      else emitted++;
      told.set(item.id, { index: events.length, state: item.state });
      events.push(item.event);
    }
  }
  // An answer with no event leaves the cursor where it was (its answer is then the previous one);
  // one with events (the snapshot's included) moves it over everything consumed.
  if (events.length > 0) for (const item of consumed) item.advance(position);
  return more;

  async function writeItem(change: LastChange): Promise<Item> {
    // A row read for an earlier batch is older than this change when the listing was written
    // again meanwhile (between batches the event loop turns, and other processes write): read
    // it again, or the newer state would pass for the one already told.
    const cached = rows.get(change.listing_id);
    if (cached !== undefined && Number(cached.change_seq) < change.seq) rows.delete(change.listing_id);
    if (!rows.has(change.listing_id)) {
      // Read the rows of the batch around it in one query.
      const ids = [change.listing_id, ...writes.buffered().map((c) => c.listing_id)].filter((id) => !rows.has(id));
      const found = new Map((await store.listings.rows(ids)).map((r) => [r.id, r]));
      for (const id of ids) rows.set(id, found.get(id));
    }
    const row = rows.get(change.listing_id);
    let event: string | undefined;
    let state = REMOVED;
    const here = row !== undefined && isActiveInTenant(row, tenant);
    if (here && !expiredAt(row.expiry_date, nowIso)) {
      event = upsertedEvent(source, change.listing_id, change.at, row);
      state = upsertedState(row);
    }
    // Written before it expired: its expiry tells its removal, at the expiry instant.
    else if (here && row.updated_at < row.expiry_date!) event = undefined;
    else event = removedEvent(change.listing_id, change.at);
    return { id: change.listing_id, event, state, advance: (p) => void (p.seq = change.seq) };
  }
}

/** An expiry as an item of the merge: a removal at the expiry instant, unless a write told it. */
function expiryItem(x: Expiry): Item {
  // A write that set an expiry already past told the removal itself (at the write).
  const event = x.updated_at < x.expiry_date ? removedEvent(x.id, x.expiry_date) : undefined;
  return { id: x.id, event, state: REMOVED, advance: (p) => {
    p.expiry = x.expiry_date;
    p.expiryId = x.id;
  } };
}

/**
 * A stream read in batches after a position; `peek` refills when the batch is used up, after a
 * turn of the event loop from the second batch on (an answer of 1,000 events reads several).
 */
function stream<T, P>(read: (after: P) => Promise<T[]>, positionOf: (item: T) => P, start: P) {
  let buffer: T[] = [];
  let after = start;
  let done = false;
  let reads = 0;
  return {
    async peek(): Promise<T | undefined> {
      if (buffer.length === 0 && !done) {
        if (reads++ > 0) await yieldToEventLoop();
        buffer = await read(after);
        if (buffer.length < BATCH) done = true;
        if (buffer.length > 0) after = positionOf(buffer.at(-1)!);
      }
      return buffer[0];
    },
    take(): T | undefined {
      return buffer.shift();
    },
    buffered(): readonly T[] {
      return buffer;
    },
  };
}
