import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../core/api-error.js';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import { tenantOf, type Tenant } from '../core/tenant.js';
import { createFeed } from '../readmodel/feed.js';
import type { AttemptRecord, PendingMessage, Store, WebhookEndpoint } from '../storage/index.js';
import { isDatabaseError } from '../storage/index.js';
import { pendingMessageOf } from '../storage/webhooks.js';
import { delivered, failureText, sendAttempt, type Outcome, type SendOptions } from './send.js';
import { FairSlots } from './fair-slots.js';
import { signatureHeaders } from './signature.js';

/** D24: ids per message at most. */
export const MAX_IDS_PER_MESSAGE = 1000;
/** D24: the waits before each retry of a message; the last repeats. */
export const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000] as const;
/** Issue 43: the header that marks a replayed message (`true`); absent on every other. Not signed (Standard Webhooks signs id, timestamp and body). */
export const REPLAY_HEADER = 'listings-replay';
/** D24: an endpoint failing this long is disabled. */
export const DISABLE_AFTER_MS = 24 * 3600_000;
/** D24: after a rotation, the previous secret signs this long too. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;
/** How often enabled endpoints are looked at: changes of about this long are gathered into one message. */
export const TICK_MS = 1000;
/** An instance sends to an endpoint for at most this long before another may take over (longer than an attempt's 10 s). */
const LEASE_MS = 30_000;
/** At most this share of a process's time goes to making the messages of backlogs (an import's many messages). */
const BACKLOG_SHARE = 0.1;

export type DeliveryOutcome = 'delivered' | 'failed' | 'disabled';

export interface DelivererOptions {
  store: Store;
  clock: Clock;
  logger: FastifyBaseLogger;
  send: Pick<SendOptions, 'allowPrivate' | 'resolve' | 'timeoutMs'>;
  /** Attempts under way at once on this instance (WEBHOOK_CONCURRENCY), shared fairly between tenants (fair-slots.ts). */
  concurrency: number;
  /** Names this instance in leases. */
  instanceId?: string;
  onAttempt?: (outcome: DeliveryOutcome) => void;
  /**
   * Told whether each look at the endpoints could read the database, e.g. an OutageLog: one
   * warning when it cannot, one line when it can again, not a warning with a stack a second
   * (issue 40 item 10). Without it, failures are warnings.
   */
  health?: { failed(error: unknown): void; succeeded(): void };
}

/** What this instance last found for an endpoint: nothing new at that version until that time. */
interface Checked {
  version: number;
  until: number;
}

/** One deliverer's parts, built once with it: `deliver` and the functions it calls take them. */
interface Delivery {
  options: DelivererOptions;
  /** Names this instance in leases. */
  owner: string;
  feed: ReturnType<typeof createFeed>;
  /** The same feed with each upserted listing's JSON: for endpoints told of some usage types only. */
  feedWithListings: ReturnType<typeof createFeed>;
  /** What this instance last found for each endpoint. */
  checked: Map<string, Checked>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The secrets that sign at `now`: the endpoint's, and the previous one for a day after a rotation (D24). */
function signingSecrets(endpoint: WebhookEndpoint, now: number): string[] {
  const previous = endpoint.previous_secret !== null && endpoint.previous_secret_until !== null && endpoint.previous_secret_until > iso(now);
  return previous ? [endpoint.secret, endpoint.previous_secret!] : [endpoint.secret];
}

/**
 * One attempt of a message to an endpoint, and the attempt as its delivery log keeps it: every
 * failure, however early (a stored secret that cannot sign included), is an attempt, so it is
 * retried on the schedule rather than at once. The log keeps the failure's category, never its
 * detail (D24).
 */
async function sendAndDescribe(endpoint: WebhookEndpoint, message: Omit<PendingMessage, 'at' | 'end'>, number: number, now: number, send: SendOptions) {
  let outcome: Outcome;
  try {
    const headers = signatureHeaders(signingSecrets(endpoint, now), message.id, Math.floor(now / 1000), message.body);
    if (message.replay) headers[REPLAY_HEADER] = 'true';
    outcome = await sendAttempt(endpoint.url, headers, message.body, send);
  } catch (error) {
    outcome = { error: 'internal error', detail: `the message could not be made: ${(error as Error).message}`, durationMs: 0 };
  }
  const record: AttemptRecord = {
    endpoint_id: endpoint.id,
    at: iso(now),
    message_id: message.id,
    message_type: message.type,
    ids: message.ids,
    attempt: number,
    status: outcome.status ?? null,
    error: delivered(outcome) ? null : failureText(outcome),
    duration_ms: outcome.durationMs,
    replay: message.replay ? 1 : 0,
  };
  return { outcome, record };
}

/** The message body of a test event (D24). */
export const testEventBody = (country: string, at: number) => JSON.stringify({ type: 'webhook.test', timestamp: iso(at), data: { country } });

/**
 * Webhook delivery (D24). Each endpoint's position in the change history is the only state: a
 * message covers the change-feed events after it (D22's, an expiry passing included), is kept whole
 * before its first attempt, and the position moves past it only on a 2xx. Every TICK_MS the
 * enabled endpoints are looked at; one is read from the history only when its tenant's version
 * (in memory) moved or its next expiry (one indexed query) has come, so idle endpoints cost no
 * further query. Each endpoint with work is delivered to by one chain of attempts at a time (its
 * order), each attempt under the endpoint's lease (storage/webhooks.ts) and in one of the
 * instance's slots, shared fairly between tenants (fair-slots.ts): a tenant's slow, hanging or
 * busy endpoints hold their own slots, never another tenant's turn. A backlog's next message is
 * made as soon as the last one is delivered, within BACKLOG_SHARE of the process's time.
 */
export function createWebhookDeliverer(options: DelivererOptions) {
  const { store, clock, logger } = options;
  const health = options.health ?? { failed: (error: unknown) => logger.warn({ err: error }, 'webhook look failed'), succeeded: () => {} };
  const delivery: Delivery = {
    options,
    owner: options.instanceId ?? randomUUID(),
    // The feed's events without their listings: a message names ids only.
    feed: createFeed(store, clock, () => 'null'),
    feedWithListings: createFeed(store, clock, (row) => row.body),
    checked: new Map(),
  };
  const slots = new FairSlots(options.concurrency);
  /** The endpoints this instance is delivering to, or waiting for a slot for: one chain each (D24's order). */
  const working = new Map<string, Promise<void>>();
  /** When this instance first saw news for an endpoint that has no message yet. */
  const noticed = new Map<string, number>();
  let oldestUndelivered: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** The look at the endpoints under way, if any (one at a time); it resolves with the chains it started. */
  let looking: Promise<Array<Promise<void>>> | undefined;
  let stopping = false;
  /** performance.now() before which no further backlog message is made (BACKLOG_SHARE, across every endpoint). */
  let backlogAt = 0;

  /** Delivers to the endpoint while it has work due: one message per slot, a backlog's next one after its turn. */
  async function chain(id: string, tenant: string): Promise<void> {
    while (!stopping) {
      const release = await slots.acquire(tenant);
      let made: { ms: number } | undefined;
      try {
        made = stopping ? undefined : await deliverUnderLease(delivery, id);
      } finally {
        release();
      }
      if (made === undefined) return;
      // The API's requests come first: each message of a backlog is followed by (1 / BACKLOG_SHARE - 1)
      // times what making it took (reading the history) before another backlog message is made, on
      // any endpoint, so that imports' messages take at most that share of the process. The
      // attempts' own waits are not counted, and the slot is free meanwhile.
      const now = performance.now();
      backlogAt = Math.max(backlogAt, now) + made.ms * (1 / BACKLOG_SHARE - 1);
      await sleep(backlogAt - now);
    }
  }

  /** Looks at every enabled endpoint once, and starts a chain for each that is due (not waiting for them). */
  async function look(): Promise<Array<Promise<void>>> {
    const now = clock();
    const nowIso = iso(now);
    const started: Array<Promise<void>> = [];
    let oldest = Infinity;
    for (const e of await store.webhooks.enabled()) {
      let due: boolean;
      if (e.message_id !== null) {
        oldest = Math.min(oldest, Date.parse(e.message_at!));
        due = e.next_attempt_at === null || e.next_attempt_at <= nowIso;
      } else if (e.replay_from !== null || hasNews(delivery, e, now)) {
        if (!noticed.has(e.id)) noticed.set(e.id, now);
        oldest = Math.min(oldest, noticed.get(e.id)!);
        due = true;
      } else {
        noticed.delete(e.id);
        due = false;
      }
      if (!due || stopping || working.has(e.id) || (e.lease_until !== null && e.lease_until > nowIso)) continue;
      const delivering: Promise<void> = chain(e.id, tenantOf(e.account_id, e.country as Country).key)
        .catch((error: unknown) => (isDatabaseError(error) ? health.failed(error) : logger.warn({ webhookId: e.id, err: error }, 'webhook delivery failed')))
        .finally(() => working.delete(e.id));
      working.set(e.id, delivering);
      started.push(delivering);
    }
    oldestUndelivered = oldest === Infinity ? undefined : oldest;
    return started;
  }

  const lookOnce = () => (looking ??= look().finally(() => (looking = undefined)));

  return {
    /**
     * When the oldest change not yet delivered to an enabled endpoint was made into a message, or
     * first seen by this instance; undefined when every endpoint is caught up (as of the last tick).
     */
    oldestUndeliveredAt: (): number | undefined => oldestUndelivered,
    /** One look at every endpoint, awaiting the chains it starts (tests drive delivery with it). */
    async tick(): Promise<void> {
      await Promise.all(await lookOnce());
    },
    start(): void {
      // Each second a look; the chains it starts run on, and the next look skips their endpoints.
      timer ??= setInterval(() => void lookOnce().then(() => health.succeeded(), (error: unknown) => health.failed(error)), TICK_MS);
      timer.unref();
    },
    /** Starts nothing more; waits for the attempts under way (a chain waiting for a slot ends without one). */
    async stop(): Promise<void> {
      stopping = true;
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await looking?.catch(() => undefined);
      await Promise.all(working.values());
    },
  };
}

/** Whether the endpoint may have news: its tenant's version moved, or an expiry it showed has come. */
function hasNews({ options, checked }: Delivery, endpoint: Pick<WebhookEndpoint, 'id' | 'account_id' | 'country'>, now: number): boolean {
  const last = checked.get(endpoint.id);
  if (last === undefined) return true;
  return last.version !== options.store.changes.tenantVersion(tenantOf(endpoint.account_id, endpoint.country as Country).key) || now >= last.until;
}

/** Whether this instance still holds an endpoint's lease: a delivery's last write gives it back itself. */
interface Lease {
  held: boolean;
}

/** Delivers the endpoint's next message if it is due and nobody else is sending to it; deliverOne's answer. */
async function deliverUnderLease(delivery: Delivery, id: string): Promise<{ ms: number } | undefined> {
  const { options: { store, clock }, owner } = delivery;
  const now = clock();
  const endpoint = await store.webhooks.takeLease(id, owner, iso(now), iso(now + LEASE_MS));
  if (endpoint === undefined) return undefined;
  const lease: Lease = { held: true };
  try {
    return await deliverOne(delivery, lease, endpoint);
  } finally {
    if (lease.held) await store.webhooks.releaseLease(id, owner);
  }
}

/**
 * The endpoint's next attempt, if one is due. When it was delivered and more may be waiting: how
 * long making the message took (0 for a message made earlier); else undefined.
 */
async function deliverOne(delivery: Delivery, lease: Lease, endpoint: WebhookEndpoint): Promise<{ ms: number } | undefined> {
  const { options: { store, clock }, owner, checked } = delivery;
  const now = clock();
  let message = pendingMessageOf(endpoint);
  let more = true;
  const making = performance.now();
  if (message === undefined) {
    // A replay asked for begins between two messages: back to where it starts (issue 43).
    if (endpoint.replay_from !== null) {
      const replayUntil = endpoint.replay_until ?? endpoint.position;
      await store.webhooks.startReplay(endpoint.id, owner, endpoint.replay_from, replayUntil);
      endpoint = { ...endpoint, position: endpoint.replay_from, replay_until: replayUntil, replay_from: null };
    }
    const tenant = tenantOf(endpoint.account_id, endpoint.country as Country);
    const version = store.changes.tenantVersion(tenant.key);
    const expiry = await store.feed.nextExpiry(tenant.ownerAccountId, tenant.country, iso(now));
    const until = expiry === undefined ? Infinity : Date.parse(expiry);
    const next = await nextMessage(delivery, endpoint, tenant, version);
    more = next?.more === true;
    // Nothing new until the version moves or the next expiry comes (more pending: look again).
    if (!more) checked.set(endpoint.id, { version, until });
    // A replay is over once the endpoint has caught up with the history.
    const replayOver = endpoint.replay_until !== null && !more;
    if (next === undefined) {
      if (replayOver) {
        await store.webhooks.delivered(endpoint.id, owner, { end: endpoint.position, replayOver: true });
        lease.held = false;
      }
      return undefined;
    }
    // Filtered to nothing (issue 43): nothing to send, and the position moves past it.
    if (next.ids === 0 && next.type === 'listings.changed') {
      await store.webhooks.delivered(endpoint.id, owner, { end: next.end, replayOver });
      lease.held = false;
      return more ? { ms: performance.now() - making } : undefined;
    }
    if (!(await store.webhooks.keepMessage(endpoint.id, owner, next))) return undefined;
    message = next;
  } else if (endpoint.next_attempt_at !== null && endpoint.next_attempt_at > iso(now)) {
    return undefined;
  }
  const ms = performance.now() - making;
  return (await attempt(delivery, lease, endpoint, message, !more)) && more ? { ms } : undefined;
}

/** A message made from the history, and whether more changes wait after it. */
type NextMessage = PendingMessage & { more: boolean };

/** A feed item as a message reads it: the listing's JSON only from `feedWithListings`. */
interface FeedItem {
  type: string;
  id: string;
  listing?: { usage_types?: string[] } | null;
}

/**
 * The next message from the endpoint's position, or undefined when nothing changed since. Its
 * `ids` are 0 when the endpoint's filters left nothing of the changes it covers (issue 43): an
 * endpoint told of some usage types only hears of an upserted listing of none of them as a
 * removal (it may have left them: the site's copy stays exact), and one told of one kind of change
 * only hears of that kind.
 */
async function nextMessage(delivery: Delivery, endpoint: WebhookEndpoint, tenant: Tenant, version: number): Promise<NextMessage | undefined> {
  const now = delivery.options.clock();
  const usageTypes = endpoint.only_usage_types === null ? undefined : new Set(JSON.parse(endpoint.only_usage_types) as string[]);
  const feed = usageTypes === undefined ? delivery.feed : delivery.feedWithListings;
  const replay = endpoint.replay_until !== null;
  let text: string;
  try {
    text = await feed.answer(tenant, endpoint.position, MAX_IDS_PER_MESSAGE, version);
  } catch (error) {
    if (!(error instanceof ApiError && error.reason === 'bad_cursor')) throw error;
    // The history after its position was pruned (it was disabled a long time): re-read everything.
    const body = JSON.stringify({ type: 'listings.resync', timestamp: iso(now), data: { country: endpoint.country } });
    return { id: `msg_${randomUUID()}`, at: iso(now), type: 'listings.resync', body, ids: 0, end: await feed.endCursor(tenant, version), more: false, replay };
  }
  const answer = JSON.parse(text) as { items: FeedItem[]; next_cursor: string; has_more: boolean };
  if (answer.items.length === 0) return undefined;
  // Each id once, by its latest event in the message.
  const latest = new Map<string, FeedItem>();
  for (const item of answer.items) {
    latest.delete(item.id);
    latest.set(item.id, item);
  }
  const shown = (item: FeedItem) => item.type === 'listing.upserted' && (usageTypes === undefined || (item.listing?.usage_types ?? []).some((t) => usageTypes.has(t)));
  const upserted = endpoint.only_change === 'removed' ? [] : [...latest.values()].filter(shown).map((item) => item.id);
  const removed = endpoint.only_change === 'upserted' ? [] : [...latest.values()].filter((item) => !shown(item)).map((item) => item.id);
  const body = JSON.stringify({ type: 'listings.changed', timestamp: iso(now), data: { country: endpoint.country, upserted, removed } });
  const ids = upserted.length + removed.length;
  return { id: `msg_${randomUUID()}`, at: iso(now), type: 'listings.changed', body, ids, end: answer.next_cursor, more: answer.has_more, replay };
}

/** One attempt of the endpoint's message; records it and moves the endpoint on (giving the lease back). True when delivered. */
async function attempt(delivery: Delivery, lease: Lease, endpoint: WebhookEndpoint, message: PendingMessage, lastOfReplay: boolean): Promise<boolean> {
  const { options, owner } = delivery;
  const { store, clock, logger } = options;
  const started = clock();
  const number = endpoint.attempt + 1;
  const { outcome, record } = await sendAndDescribe(endpoint, message, number, started, options.send);
  if (delivered(outcome)) {
    await store.webhooks.delivered(endpoint.id, owner, { end: message.end, replayOver: endpoint.replay_until !== null && lastOfReplay, attempt: record });
    lease.held = false;
    options.onAttempt?.('delivered');
    return true;
  }
  // Retries are counted from the end of the failed attempt (issue 43): an endpoint that took its
  // 10 s to fail gets its full 5 s before the next one.
  const ended = clock();
  const failingSince = endpoint.failing_since ?? iso(started);
  const disable = ended - Date.parse(failingSince) >= DISABLE_AFTER_MS;
  const delay = RETRY_DELAYS_MS[Math.min(number - 1, RETRY_DELAYS_MS.length - 1)]!;
  await store.webhooks.failed(endpoint.id, owner, { attempt: record, nextAt: iso(ended + delay), failingSince, disable });
  lease.held = false;
  options.onAttempt?.(disable ? 'disabled' : 'failed');
  // The URL is the endpoint owner's; the secret and the body never go to the log.
  logger.info({ webhookId: endpoint.id, messageId: message.id, attempt: number, status: outcome.status, error: outcome.error, detail: outcome.detail, disabled: disable }, 'webhook attempt failed');
  return false;
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;

/** A test event (D24): sent once, now, to the endpoint, and recorded like any attempt. */
export async function sendTestEvent(store: Store, endpoint: WebhookEndpoint, now: number, send: SendOptions): Promise<Outcome & { messageId: string }> {
  const message = { id: `msg_${randomUUID()}`, type: 'webhook.test', body: testEventBody(endpoint.country, now), ids: 0, replay: false };
  const { outcome, record } = await sendAndDescribe(endpoint, message, 1, now, send);
  await store.webhooks.recordAttempt(record);
  return { ...outcome, messageId: message.id };
}
