import type { Store, WebhookEndpoint } from '../storage/index.js';
import { sendTestEvent } from '../webhooks/deliverer.js';
import { delivered, failureText } from '../webhooks/send.js';
import { addWebhook, filtersText, replayWebhook, rotateWebhookSecret, setWebhookFilters, statusOf, WebhookError } from '../webhooks/endpoints.js';
import { recordCliChange } from './audit.js';
import { CliError, emit, table } from './output.js';
import { countryArg, existingAccount, uuidArg, withStore } from './store.js';

/**
 * `webhook add | list | remove | test | enable | rotate-secret` (D24), `replay | filter | attempts`
 * (issue 43). Changes are recorded in the
 * audit log as the CLI operator. A secret is printed by `add` and `rotate-secret` only.
 */

const clock = () => Date.now();

async function existingWebhook(store: Store, value: string): Promise<WebhookEndpoint> {
  const id = uuidArg('webhook id', value);
  const endpoint = await store.webhooks.get(id);
  if (endpoint === undefined) throw new CliError(`no webhook endpoint with id ${id}`);
  return endpoint;
}

type WebhookAction = 'webhook.added' | 'webhook.removed' | 'webhook.enabled' | 'webhook.secret_rotated' | 'webhook.replayed' | 'webhook.filters_changed';

const audit = (store: Store, e: WebhookEndpoint, action: WebhookAction) =>
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
    changes: e.only_change ?? 'all',
    usage_types: e.only_usage_types === null ? null : (JSON.parse(e.only_usage_types) as string[]),
    replaying: e.replay_from !== null || e.replay_until !== null,
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

/** A WebhookError as the CLI's one line (exit 1). */
const asCliError = (error: unknown) => (error instanceof WebhookError ? new CliError(error.message) : error);

export async function webhookReplay(id: string, opts: { since: string; json: boolean }): Promise<void> {
  const endpoint = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    await replayWebhook(store, clock, found, opts.since).catch((error: unknown) => {
      throw asCliError(error);
    });
    await audit(store, found, 'webhook.replayed');
    return found;
  });
  emit(opts.json, { id: endpoint.id, replay: 'requested', since: opts.since }, () =>
    `Replay of webhook ${endpoint.id} since ${opts.since} asked for: its messages go again, in order, after the one it is sending (marked listings-replay: true).`);
}

export async function webhookFilter(id: string, opts: { changes: string; usageTypes: string; json: boolean }): Promise<void> {
  const endpoint = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    const usageTypes = opts.usageTypes.trim().toLowerCase() === 'all' ? [] : opts.usageTypes.split(',');
    const filters = await setWebhookFilters(store, found, { changes: opts.changes, usageTypes }).catch((error: unknown) => {
      throw asCliError(error);
    });
    await audit(store, found, 'webhook.filters_changed');
    return { ...found, ...filters };
  });
  emit(opts.json, { id: endpoint.id, changes: endpoint.only_change ?? 'all', usage_types: endpoint.only_usage_types === null ? null : JSON.parse(endpoint.only_usage_types) }, () =>
    `Webhook ${endpoint.id} is told of ${filtersText(endpoint)} from its next message on.`);
}

/** Attempts per page of `webhook attempts` unless --limit says otherwise. */
const ATTEMPTS_PAGE = 20;

export async function webhookAttempts(id: string, opts: { limit?: string; before?: string; json: boolean }): Promise<void> {
  const limit = opts.limit === undefined ? ATTEMPTS_PAGE : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliError(`--limit must be a whole number from 1 to 1000, not "${opts.limit}"`);
  const { attempts, more } = await withStore(async (store) => {
    const found = await existingWebhook(store, id);
    const before = opts.before === undefined ? undefined : uuidArg('--before attempt id', opts.before);
    const page = await store.webhooks.attempts(found.id, limit + 1, before);
    return { attempts: page.slice(0, limit), more: page.length > limit };
  });
  const rows = attempts.map((a) => ({
    id: a.id,
    at: a.at,
    message_id: a.message_id,
    type: a.message_type,
    ids: a.ids,
    attempt: a.attempt,
    outcome: a.error === null ? `HTTP ${a.status}` : a.error,
    delivered: a.error === null,
    duration_ms: a.duration_ms,
    replay: a.replay === 1,
  }));
  const next = more ? rows.at(-1)!.id : null;
  emit(opts.json, { attempts: rows, next_before: next }, () =>
    rows.length === 0
      ? 'No delivery attempts kept (they are kept 7 days).'
      : table(['AT', 'MESSAGE', 'TYPE', 'IDS', 'ATTEMPT', 'OUTCOME', 'MS'], rows.map((r) => [r.at, r.message_id, `${r.type}${r.replay ? ' (replay)' : ''}`, String(r.ids), String(r.attempt), r.outcome, String(r.duration_ms)]))
        + (next === null ? '' : `\nOlder attempts: listings-api webhook attempts ${id} --before ${next}`));
}
