import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import { tenantOf } from '../core/tenant.js';
import { createFeed } from '../readmodel/feed.js';
import type { Store, WebhookEndpoint } from '../storage/index.js';
import { MAX_WEBHOOKS_PER_TENANT } from '../storage/webhooks.js';
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
