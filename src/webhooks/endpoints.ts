import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import { tenantOf } from '../core/tenant.js';
import { createFeed, FeedPositionError } from '../readmodel/feed.js';
import { USAGE_NAMES } from '../listings/taxonomy.js';
import type { Store, WebhookEndpoint } from '../storage/index.js';
import type { WebhookChangeKind } from '../storage/schema.js';
import { MAX_WEBHOOKS_PER_TENANT, type WebhookFilters } from '../storage/webhooks.js';
import { PREVIOUS_SECRET_MS } from './deliverer.js';
import { newWebhookSecret } from './signature.js';
import { webhookUrlProblem } from './url.js';

/** Managing endpoints (D24), for the CLI and the dashboard alike: each refusal is one sentence. */

export class WebhookError extends Error {}

export type WebhookStatus = 'enabled' | 'failing' | 'disabled';

export const statusOf = (e: Pick<WebhookEndpoint, 'enabled' | 'failing_since'>): WebhookStatus =>
  e.enabled === 0 ? 'disabled' : e.failing_since !== null ? 'failing' : 'enabled';

/**
 * Registers an endpoint at the end of the change history (D24: it is told of changes committed
 * after it was added); returns it, secret included (shown to the caller, never logged).
 */
export async function addWebhook(store: Store, clock: Clock, input: { accountId: string; country: Country; url: string }): Promise<WebhookEndpoint> {
  const problem = webhookUrlProblem(input.url);
  if (problem !== undefined) throw new WebhookError(problem);
  const tenant = tenantOf(input.accountId, input.country);
  const position = await createFeed(store, clock, () => 'null').endCursor(tenant, store.changes.tenantVersion(tenant.key));
  const endpoint: WebhookEndpoint = {
    id: randomUUID(),
    account_id: input.accountId,
    country: input.country,
    url: input.url,
    secret: newWebhookSecret(),
    previous_secret: null,
    previous_secret_until: null,
    enabled: 1,
    created_at: new Date(clock()).toISOString(),
    position,
    failing_since: null,
    next_attempt_at: null,
    message_id: null,
    message_at: null,
    message_type: null,
    message_body: null,
    message_ids: null,
    message_end: null,
    attempt: 0,
    lease_owner: null,
    lease_until: null,
    replay_from: null,
    replay_until: null,
    message_replay: 0,
    only_change: null,
    only_usage_types: null,
  };
  if (!(await store.webhooks.add(endpoint))) {
    throw new WebhookError(`this account has ${MAX_WEBHOOKS_PER_TENANT} webhook endpoints in ${input.country} already, the most allowed; remove one first`);
  }
  return endpoint;
}

/** A new secret for the endpoint; the previous one signs too for 24 hours. Undefined when there is no such endpoint. */
export async function rotateWebhookSecret(store: Store, clock: Clock, id: string): Promise<string | undefined> {
  const secret = newWebhookSecret();
  return (await store.webhooks.rotateSecret(id, secret, new Date(clock() + PREVIOUS_SECRET_MS).toISOString())) ? secret : undefined;
}

/** An ISO 8601 date-time with its offset (`2026-12-01T00:00:00Z`), as `--since` and the dashboard take it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Asks for the endpoint's messages again since `since` (issue 43): an ISO date-time with its
 * offset (every change made at or after it), or a change-feed cursor of the endpoint's account and
 * country (every change after it). The sender goes back there at the endpoint's next message
 * boundary, in D24's order; the messages carry the replay header until it has caught up.
 */
export async function replayWebhook(store: Store, clock: Clock, endpoint: WebhookEndpoint, since: string): Promise<void> {
  const value = since.trim();
  const tenant = tenantOf(endpoint.account_id, endpoint.country as Country);
  let from: string;
  if (/^\d{4}-/.test(value)) {
    const at = DATE_TIME.test(value) ? Date.parse(value) : NaN;
    if (Number.isNaN(at)) throw new WebhookError(`"${value}" is not a date and time with its offset (e.g. 2026-12-01T00:00:00Z) or a change-feed cursor`);
    if (at > clock()) throw new WebhookError(`${value} is in the future: replay from a time in the past`);
    from = await replayFrom(store, clock, tenant, { at: new Date(at).toISOString() });
  } else {
    if (value === '') throw new WebhookError('say since when: a date and time (e.g. 2026-12-01T00:00:00Z) or a change-feed cursor');
    from = await replayFrom(store, clock, tenant, { cursor: value });
  }
  if (!(await store.webhooks.requestReplay(endpoint.id, from))) throw new WebhookError(`no webhook endpoint with id ${endpoint.id}`);
}

async function replayFrom(store: Store, clock: Clock, tenant: ReturnType<typeof tenantOf>, since: { at: string } | { cursor: string }): Promise<string> {
  try {
    return await createFeed(store, clock, () => 'null').replayFrom(tenant, since);
  } catch (error) {
    throw error instanceof FeedPositionError ? new WebhookError(`cannot replay from there: ${error.message}`) : error;
  }
}

/** The kinds of change an endpoint can be told of (issue 43): `all`, or one of them. */
export const CHANGE_KINDS = ['all', 'upserted', 'removed'] as const;

export interface WebhookFilterInput {
  /** `all` (default), `upserted` or `removed`. */
  changes: string;
  /** Usage type names (main types and sub-types, spec 2.2); empty: every listing. */
  usageTypes: readonly string[];
}

/** What the endpoint is told from its next message on (issue 43); each refusal one sentence. */
export async function setWebhookFilters(store: Store, endpoint: WebhookEndpoint, input: WebhookFilterInput): Promise<WebhookFilters> {
  const changes = input.changes.trim().toLowerCase();
  if (!(CHANGE_KINDS as readonly string[]).includes(changes)) throw new WebhookError(`changes must be one of ${CHANGE_KINDS.join(', ')}, not "${input.changes}"`);
  const names = [...new Set(input.usageTypes.map((name) => name.trim()).filter((name) => name !== ''))];
  const unknown = names.filter((name) => !USAGE_NAMES.includes(name));
  if (unknown.length > 0) throw new WebhookError(`"${unknown[0]}" is not a usage type; use these names, exactly spelt: ${USAGE_NAMES.join(', ')}`);
  const filters: WebhookFilters = {
    only_change: changes === 'all' ? null : (changes as WebhookChangeKind),
    only_usage_types: names.length === 0 ? null : JSON.stringify(names),
  };
  if (!(await store.webhooks.setFilters(endpoint.id, filters))) throw new WebhookError(`no webhook endpoint with id ${endpoint.id}`);
  return filters;
}

/** The endpoint's filters in words (the CLI and the dashboard). */
export function filtersText(e: Pick<WebhookEndpoint, 'only_change' | 'only_usage_types'>): string {
  const kinds = e.only_change === null ? 'every change' : e.only_change === 'upserted' ? 'upserts only' : 'removals only';
  const types = e.only_usage_types === null ? '' : `, listings of ${(JSON.parse(e.only_usage_types) as string[]).join(', ')}`;
  return `${kinds}${types}`;
}
