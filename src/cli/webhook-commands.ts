import type { Store, WebhookEndpoint } from '../storage/index.js';
import { sendTestEvent } from '../webhooks/deliverer.js';
import { delivered, failureText } from '../webhooks/send.js';
import { addWebhook, rotateWebhookSecret, statusOf, WebhookError } from '../webhooks/endpoints.js';
import { recordCliChange } from './audit.js';
import { CliError, emit, table } from './output.js';
import { countryArg, existingAccount, uuidArg, withStore } from './store.js';

/**
 * `webhook add | list | remove | test | enable | rotate-secret` (D24). Changes are recorded in the
 * audit log as the CLI operator. A secret is printed by `add` and `rotate-secret` only.
 */

const clock = () => Date.now();

async function existingWebhook(store: Store, value: string): Promise<WebhookEndpoint> {
  const id = uuidArg('webhook id', value);
  const endpoint = await store.webhooks.get(id);
  if (endpoint === undefined) throw new CliError(`no webhook endpoint with id ${id}`);
  return endpoint;
}

const audit = (store: Store, e: WebhookEndpoint, action: 'webhook.added' | 'webhook.removed' | 'webhook.enabled' | 'webhook.secret_rotated') =>
  recordCliChange(store, { account_id: e.account_id, at: new Date().toISOString(), action, country: e.country, webhook_url: e.url });

export async function webhookAdd(url: string, opts: { account: string; country: string; json: boolean }): Promise<void> {
  const country = countryArg(opts.country);
  const endpoint = await withStore(async (store) => {
    const accountId = await existingAccount(store, opts.account);
    try {
      const added = await addWebhook(store, clock, { accountId, country, url });
      await audit(store, added, 'webhook.added');
      return added;
    } catch (error) {
      throw error instanceof WebhookError ? new CliError(error.message) : error;
    }
  });
  emit(opts.json, { id: endpoint.id, url: endpoint.url, country: endpoint.country, secret: endpoint.secret }, () =>
    `Webhook ${endpoint.id} added for ${endpoint.country}: ${endpoint.url}\nSigning secret (verify messages with it; shown again only by rotate-secret): ${endpoint.secret}`);
}

export async function webhookList(opts: { account: string; json: boolean }): Promise<void> {
  const endpoints = await withStore(async (store) => store.webhooks.listForAccount(await existingAccount(store, opts.account)));
  const rows = endpoints.map((e) => ({
    id: e.id,
    url: e.url,
    country: e.country,
    status: statusOf(e),
    created_at: e.created_at,
    failing_since: e.failing_since,
    next_attempt_at: e.message_id === null ? null : e.next_attempt_at,
  }));
  emit(opts.json, { webhooks: rows }, () =>
    rows.length === 0
      ? 'No webhook endpoints. Add one with: listings-api webhook add --account ID --country CC URL'
      : table(['ID', 'COUNTRY', 'STATUS', 'URL'], rows.map((r) => [r.id, r.country, r.failing_since === null ? r.status : `${r.status} since ${r.failing_since}`, r.url])));
}

export async function webhookRemove(id: string, opts: { json: boolean }): Promise<void> {
  const endpoint = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    if (!(await store.webhooks.remove(found.id))) throw new CliError(`no webhook endpoint with id ${found.id}`);
    await audit(store, found, 'webhook.removed');
    return found;
  });
  emit(opts.json, { id: endpoint.id, removed: true }, () => `Removed webhook ${endpoint.id} (${endpoint.url}).`);
}

export async function webhookEnable(id: string, opts: { json: boolean }): Promise<void> {
  const endpoint = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    await store.webhooks.enable(found.id);
    await audit(store, found, 'webhook.enabled');
    return found;
  });
  emit(opts.json, { id: endpoint.id, status: 'enabled' }, () => `Enabled webhook ${endpoint.id}: delivery resumes from where it stopped.`);
}

export async function webhookRotateSecret(id: string, opts: { json: boolean }): Promise<void> {
  const { endpoint, secret } = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    const rotated = await rotateWebhookSecret(store, clock, found.id);
    if (rotated === undefined) throw new CliError(`no webhook endpoint with id ${found.id}`);
    await audit(store, found, 'webhook.secret_rotated');
    return { endpoint: found, secret: rotated };
  });
  emit(opts.json, { id: endpoint.id, secret }, () => `New signing secret of webhook ${endpoint.id} (the previous one also signs for 24 hours): ${secret}`);
}

export async function webhookTest(id: string, opts: { json: boolean }): Promise<void> {
  const { endpoint, outcome } = await withStore(async (store, config) => {
    const found = await existingWebhook(store, id);
    return { endpoint: found, outcome: await sendTestEvent(store, found, clock(), { allowPrivate: config.webhookAllowPrivate }) };
  });
  const received = delivered(outcome);
  // Like any failed command: one line on stderr, exit 1 (the attempt is in the endpoint's log). As
  // on the dashboard (D24), a failure is its category only: no error name, no timing.
  if (!received) throw new CliError(`test event ${outcome.messageId} not delivered to ${endpoint.url}: ${failureText(outcome)}`);
  emit(opts.json, { id: endpoint.id, message_id: outcome.messageId, delivered: received, status: outcome.status, duration_ms: outcome.durationMs }, () =>
    `Delivered test event ${outcome.messageId} to ${endpoint.url}: HTTP ${outcome.status} in ${outcome.durationMs} ms.`);
}
