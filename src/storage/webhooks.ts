import type { Kysely } from '#kysely';
import { timeOrderedId } from './audit.js';
import type { Database, WebhookAttemptsTable, WebhookChangeKind, WebhookEndpointsTable } from './schema.js';
import { serialiseOn, type Write } from './write.js';

export type WebhookEndpoint = WebhookEndpointsTable;
export type WebhookAttempt = WebhookAttemptsTable;

/** D24: at most this many endpoints per account and country. */
export const MAX_WEBHOOKS_PER_TENANT = 10;

/** A message kept whole before its first attempt, so that every retry sends the same id and body. */
export interface PendingMessage {
  id: string;
  /** When it was made: its body's timestamp. */
  at: string;
  type: string;
  body: string;
  ids: number;
  /** The endpoint's position once it is delivered. */
  end: string;
  /** A replayed message (issue 43): its attempts say so in a header. */
  replay: boolean;
}

export const pendingMessageOf = (e: WebhookEndpoint): PendingMessage | undefined =>
  e.message_id === null
    ? undefined
    : { id: e.message_id, at: e.message_at!, type: e.message_type!, body: e.message_body!, ids: e.message_ids ?? 0, end: e.message_end!,
      replay: e.message_replay === 1 };

/** What an endpoint is told (issue 43): one kind of change or both, listings of some usage types or all. */
export interface WebhookFilters {
  only_change: WebhookChangeKind | null;
  only_usage_types: string | null;
}

/**
 * Webhook endpoints and their attempts (D24). An instance sends to an endpoint only while it holds
 * its lease: a conditional UPDATE that succeeds for one instance at a time, on SQLite and
 * PostgreSQL alike (the same effect as `FOR UPDATE SKIP LOCKED`, without holding a transaction open
 * across the HTTP attempt). Every step of a delivery is written under the lease, so an instance
 * whose lease ran out (it stalled, or died) changes nothing after another one took over.
 */
export function createWebhooksRepository(db: Kysely<Database>, write: Write) {
  return { ...endpointManagement(db, write), ...deliveryUnderLease(write), ...attemptLog(db, write) };
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>;

/** The endpoints as their account manages them (the dashboard), and the list the deliverer scans. */
function endpointManagement(db: Kysely<Database>, write: Write) {
  return {
    /**
     * Adds an endpoint; false when the account has MAX_WEBHOOKS_PER_TENANT in that country already.
     * Adds for one account and country never run beside each other (serialiseOn), so concurrent
     * ones on any number of instances never pass the cap together.
     */
    async add(endpoint: WebhookEndpoint): Promise<boolean> {
      return write(async (tx) => {
        await serialiseOn(tx, `webhook endpoints ${endpoint.account_id} ${endpoint.country}`);
        const { n } = await tx
          .selectFrom('webhook_endpoints')
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .where('account_id', '=', endpoint.account_id)
          .where('country', '=', endpoint.country)
          .executeTakeFirstOrThrow();
        if (Number(n) >= MAX_WEBHOOKS_PER_TENANT) return false;
        await tx.insertInto('webhook_endpoints').values(endpoint).execute();
        return true;
      });
    },
    async get(id: string): Promise<WebhookEndpoint | undefined> {
      return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async listForAccount(accountId: string): Promise<WebhookEndpoint[]> {
      return db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).orderBy('country').orderBy('created_at').orderBy('id').execute();
    },
    /** Enabled endpoints (what the deliverer looks at): a handful of columns, never the secrets. */
    async enabled(): Promise<Array<Pick<WebhookEndpoint, 'id' | 'account_id' | 'country' | 'next_attempt_at' | 'message_id' | 'message_at' | 'lease_until' | 'replay_from'>>> {
      return db
        .selectFrom('webhook_endpoints')
        .select(['id', 'account_id', 'country', 'next_attempt_at', 'message_id', 'message_at', 'lease_until', 'replay_from'])
        .where('enabled', '=', 1)
        .execute();
    },
    /**
     * Asks for the endpoint's messages again from `from` (a change-feed cursor): the sender goes
     * back there at its next message boundary. False when there is no such endpoint.
     */
    async requestReplay(id: string, from: string): Promise<boolean> {
      const result = await write((tx) => tx.updateTable('webhook_endpoints').set({ replay_from: from }).where('id', '=', id).executeTakeFirst());
      return result.numUpdatedRows > 0n;
    },
    /** What the endpoint is told from its next message on; false when there is no such endpoint. */
    async setFilters(id: string, filters: WebhookFilters): Promise<boolean> {
      const result = await write((tx) => tx.updateTable('webhook_endpoints').set(filters).where('id', '=', id).executeTakeFirst());
      return result.numUpdatedRows > 0n;
    },
    /** Removes an endpoint and its attempts; false when there was none. */
    async remove(id: string): Promise<boolean> {
      return write(async (tx) => {
        const result = await tx.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
        await tx.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
        return result.numDeletedRows > 0n;
      });
    },
    /** Enabled again: delivery resumes from its position, the message it was sending first, at once. */
    async enable(id: string): Promise<boolean> {
      const result = await write((tx) =>
        tx.updateTable('webhook_endpoints').set({ enabled: 1, failing_since: null, next_attempt_at: null, attempt: 0 }).where('id', '=', id).executeTakeFirst());
      return result.numUpdatedRows > 0n;
    },
    /** The new secret signs from now on; the old one too, until `previousUntil`. */
    async rotateSecret(id: string, secret: string, previousUntil: string): Promise<boolean> {
      return write(async (tx) => {
        const row = await tx.selectFrom('webhook_endpoints').select('secret').where('id', '=', id).executeTakeFirst();
        if (row === undefined) return false;
        await tx.updateTable('webhook_endpoints').set({ secret, previous_secret: row.secret, previous_secret_until: previousUntil }).where('id', '=', id).execute();
        return true;
      });
    },
  };
}

/** An attempt as the log keeps it. */
export type AttemptRecord = Omit<WebhookAttempt, 'id'>;

const insertAttempt = (tx: Kysely<Database>, attempt: AttemptRecord) =>
  tx.insertInto('webhook_attempts').values({ id: timeOrderedId(Date.parse(attempt.at)), ...attempt }).execute();

/** The lease given back: written with a delivery's last step, so that a message costs three writes, not five. */
const noLease = { lease_owner: null, lease_until: null };

/**
 * A delivery's steps: each written only while its instance holds the endpoint's lease. A message
 * costs three writes: the lease taken, the message kept, and its attempt recorded with the
 * endpoint's outcome (delivered or failed), which gives the lease back.
 */
function deliveryUnderLease(write: Write) {
  const leased = (id: string, owner: string) => (tx: Kysely<Database>) => tx.updateTable('webhook_endpoints').where('id', '=', id).where('lease_owner', '=', owner);
  return {
    /** Takes the endpoint's lease until `until` if nobody holds it (or it ran out at `now`); the endpoint, or undefined. */
    async takeLease(id: string, owner: string, now: string, until: string): Promise<WebhookEndpoint | undefined> {
      return write(async (tx) => {
        const result = await tx
          .updateTable('webhook_endpoints')
          .set({ lease_owner: owner, lease_until: until })
          .where('id', '=', id)
          .where('enabled', '=', 1)
          .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return undefined;
        return tx.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
      });
    },
    async releaseLease(id: string, owner: string): Promise<void> {
      await write((tx) => leased(id, owner)(tx).set({ lease_owner: null, lease_until: null }).execute());
    },
    /** Keeps the message about to be sent (before its first attempt); false when the lease was lost. */
    async keepMessage(id: string, owner: string, message: PendingMessage): Promise<boolean> {
      const result = await write((tx) =>
        leased(id, owner)(tx)
          .set({ message_id: message.id, message_at: message.at, message_type: message.type, message_body: message.body })
          .set({ message_ids: message.ids, message_end: message.end, message_replay: message.replay ? 1 : 0 })
          .executeTakeFirst());
      return result.numUpdatedRows > 0n;
    },
    /**
     * The message was delivered (its attempt, recorded here too), or filtered to nothing and not
     * sent: the position moves past it, the endpoint is healthy, a replay that reached where it
     * began is over, and the lease is given back.
     */
    async delivered(id: string, owner: string, change: { end: string; replayOver: boolean; attempt?: AttemptRecord }): Promise<void> {
      const noMessage = { message_id: null, message_at: null, message_type: null, message_body: null, message_ids: null, message_end: null, message_replay: 0 };
      await write(async (tx) => {
        if (change.attempt !== undefined) await insertAttempt(tx, change.attempt);
        await leased(id, owner)(tx)
          .set({ position: change.end, ...noMessage, attempt: 0, failing_since: null, next_attempt_at: null, ...noLease })
          .set(change.replayOver ? { replay_until: null } : {})
          .execute();
      });
    },
    /**
     * A replay asked for begins: the position goes back to `from`, and messages are replays until
     * it is back at `until` (where it was). Only between messages (none kept).
     */
    async startReplay(id: string, owner: string, from: string, until: string): Promise<void> {
      await write((tx) => leased(id, owner)(tx).set({ position: from, replay_until: until, replay_from: null }).where('message_id', 'is', null).execute());
    },
    /** An attempt failed (recorded here): the next one at `nextAt`, or none (`disable`) after a day of failures; the lease is given back. */
    async failed(id: string, owner: string, change: { attempt: AttemptRecord; nextAt: string; failingSince: string; disable: boolean }): Promise<void> {
      await write(async (tx) => {
        await insertAttempt(tx, change.attempt);
        await leased(id, owner)(tx)
          .set({ attempt: change.attempt.attempt, next_attempt_at: change.nextAt, failing_since: change.failingSince, enabled: change.disable ? 0 : 1 })
          .set(noLease)
          .execute();
      });
    },
  };
}

/** The log of delivery attempts, which the dashboard shows for each endpoint. */
function attemptLog(db: Kysely<Database>, write: Write) {
  return {
    /** An attempt outside any delivery (a test event). */
    async recordAttempt(attempt: AttemptRecord): Promise<void> {
      await write((tx) => insertAttempt(tx, attempt));
    },
    /** Newest first, at most `limit`; `before`: only those older than that attempt (the next page). */
    async attempts(endpointId: string, limit: number, before?: string): Promise<WebhookAttempt[]> {
      let query = db.selectFrom('webhook_attempts').selectAll().where('endpoint_id', '=', endpointId);
      if (before !== undefined) {
        const mark = await db.selectFrom('webhook_attempts').select(['at', 'id']).where('id', '=', before).where('endpoint_id', '=', endpointId).executeTakeFirst();
        if (mark === undefined) return [];
        query = query.where((eb) => eb.or([eb('at', '<', mark.at), eb.and([eb('at', '=', mark.at), eb('id', '<', mark.id)])]));
      }
      return query.orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    },
    /** Forgets attempts made before `before` (D24 keeps them 7 days). */
    async pruneAttempts(before: string): Promise<number> {
      const result = await write((tx) => tx.deleteFrom('webhook_attempts').where('at', '<', before).executeTakeFirst());
      return Number(result.numDeletedRows);
    },
  };
}
