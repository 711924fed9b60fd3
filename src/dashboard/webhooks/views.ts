import type { Country } from '../../core/countries.js';
import type { WebhookAttempt, WebhookEndpoint } from '../../storage/index.js';
import { USAGE_NAMES } from '../../listings/taxonomy.js';
import { filtersText, statusOf } from '../../webhooks/endpoints.js';
import { html, type SafeHtml } from '../html.js';
import { countryName, countryOptions, csrfField, described, developerPath, fieldError, notice, page, when, type PageContext } from '../layout.js';

/**
 * Settings > Developer > Webhooks (D24): the account's endpoints with their status, how far behind
 * each is and its recent attempts; add, send a test event, enable, rotate the secret, show it,
 * remove (confirmed first); replay, choose the events, page through every attempt (issue 43). No
 * script but the copy buttons.
 */

export interface WebhookForm {
  url: string;
  country: string;
  error: string;
}

export interface EndpointView {
  endpoint: WebhookEndpoint;
  attempts: WebhookAttempt[];
}

const webhooksPath = (accountId: string, action = '') => developerPath(accountId, action === '' ? 'webhooks' : `webhooks/${action}`);

function statusBadge(e: WebhookEndpoint): SafeHtml {
  const status = statusOf(e);
  if (status === 'disabled') return html`<span class="badge revoked">Disabled</span>`;
  if (status === 'failing') return html`<span class="badge failing">Failing since ${when(e.failing_since)}</span>`;
  return html`<span class="badge active">Enabled</span>`;
}

/** How far behind the endpoint is: the message it is sending, if any. */
function behind(e: WebhookEndpoint): SafeHtml {
  if (e.message_id === null) return html`<p class="muted">Up to date: every change has been delivered.</p>`;
  const next = e.enabled === 0 ? 'not retried while disabled' : e.next_attempt_at === null ? 'sending now' : html`next attempt ${when(e.next_attempt_at)}`;
  return html`<p>Behind: a message of ${e.message_ids ?? 0} ${e.message_ids === 1 ? 'listing' : 'listings'} waiting since ${when(e.message_at)} (${e.attempt} ${e.attempt === 1 ? 'attempt' : 'attempts'} so far; ${next}). Later changes follow it in order.</p>`;
}

function attemptsTable(attempts: WebhookAttempt[], caption = 'Recent delivery attempts, newest first'): SafeHtml {
  if (attempts.length === 0) return html`<p class="empty-line">No attempts yet.</p>`;
  return html`<div class="table-card"><table class="attempts">
  <caption class="visually-hidden">${caption}</caption>
  <thead><tr><th scope="col">Time</th><th scope="col">Message</th><th scope="col">Type</th><th scope="col">Ids</th><th scope="col">Attempt</th><th scope="col">Result</th><th scope="col">Duration</th></tr></thead>
  <tbody>${attempts.map((a) => html`
    <tr data-ok="${a.status !== null && a.status >= 200 && a.status < 300 ? 'yes' : 'no'}"><td>${when(a.at)}</td><td><code>${a.message_id}</code></td><td>${a.message_type}${a.replay === 1 ? html` <span class="badge">replay</span>` : ''}</td><td>${a.ids}</td><td>${a.attempt}</td>
      <td>${a.status !== null ? html`HTTP ${a.status}` : ''}${a.error !== null && a.status === null ? a.error : ''}</td><td>${a.status !== null ? `${a.duration_ms} ms` : ''}</td></tr>`)}
  </tbody></table></div>`;
}

function actionButton(ctx: PageContext, action: string, id: string, label: string, kind = 'secondary'): SafeHtml {
  return html`<form method="post" action="${webhooksPath(ctx.accountId, action)}" class="inline-form">${csrfField(ctx.csrf)}<input type="hidden" name="id" value="${id}"><button type="submit" class="${kind} small">${label}</button></form>`;
}

function endpointCard(ctx: PageContext, { endpoint: e, attempts }: EndpointView): SafeHtml {
  return html`
<section class="card webhook" id="webhook-${e.id}" aria-labelledby="webhook-${e.id}-heading">
  <h2 id="webhook-${e.id}-heading"><code>${e.url}</code></h2>
  <p>${statusBadge(e)} <span class="muted">${countryName(e.country)} (${e.country}) · id <code>${e.id}</code> · added ${when(e.created_at)}</span></p>
  ${e.enabled === 0 ? html`<div class="alert warning">Disabled after a day of failed attempts: nothing is sent. Fix the endpoint, send a test event, then enable it: delivery resumes from where it stopped.</div>` : ''}
  ${behind(e)}
  <p>Told of ${filtersText(e)}.${e.replay_from !== null || e.replay_until !== null ? ' A replay is under way: its messages carry the header listings-replay: true until it has caught up.' : ''}</p>
  <div class="actions">
    ${actionButton(ctx, 'test', e.id, 'Send test event')}
    ${e.enabled === 0 ? actionButton(ctx, 'enable', e.id, 'Enable', 'primary') : ''}
    <a class="button secondary small" href="${webhooksPath(ctx.accountId, 'secret')}?id=${e.id}">Show secret</a>
    <a class="button secondary small" href="${webhooksPath(ctx.accountId, 'rotate')}?id=${e.id}">Rotate secret</a>
    <a class="button secondary small" href="${webhooksPath(ctx.accountId, 'replay')}?id=${e.id}">Replay<span class="visually-hidden"> ${e.url}</span></a>
    <a class="button secondary small" href="${webhooksPath(ctx.accountId, 'filters')}?id=${e.id}">Choose events<span class="visually-hidden"> of ${e.url}</span></a>
    <a class="button danger-outline small" href="${webhooksPath(ctx.accountId, 'remove')}?id=${e.id}">Remove<span class="visually-hidden"> ${e.url}</span></a>
  </div>
  <h3>Recent attempts</h3>
  ${attemptsTable(attempts)}
  ${attempts.length > 0 ? html`<p><a href="${webhooksPath(ctx.accountId, 'attempts')}?id=${e.id}">Every attempt of the last 7 days</a></p>` : ''}
</section>`;
}

export function webhooksPage(
  ctx: PageContext,
  opts: { endpoints: EndpointView[]; countries: readonly Country[]; form?: WebhookForm; notice?: string; error?: string },
): string {
  const form = opts.form;
  return page(ctx, 'webhooks', 'Webhooks', html`
<h1>Webhooks</h1>
<p class="lead">Your website is told when its listings change: a signed <code>POST</code> to your URL naming the listings that changed, so it rebuilds just those pages. Messages are retried until your endpoint answers 2xx, in order, and nothing is lost.</p>
${notice(opts.notice)}
${opts.error === undefined ? '' : html`<div class="alert error" role="alert">${opts.error}</div>`}
${opts.endpoints.length === 0
  ? html`<div class="empty"><p><strong>No webhook endpoints yet.</strong></p><p>Add the URL of your site that should receive the messages. Verify each message with its secret (any Standard Webhooks library, or the SDK's <code>verifyWebhook</code>).</p></div>`
  : opts.endpoints.map((view) => endpointCard(ctx, view))}
<section class="card" aria-labelledby="add-webhook-heading">
  <h2 id="add-webhook-heading">Add an endpoint</h2>
  <form method="post" action="${webhooksPath(ctx.accountId)}" class="row-form" novalidate>
    ${csrfField(ctx.csrf)}
    <div class="field"><label for="webhook-country">Country</label><select id="webhook-country" name="country">${countryOptions(opts.countries, form?.country ?? '')}</select></div>
    <div class="field grow">
      <label for="webhook-url">URL</label>
      <input id="webhook-url" name="url" inputmode="url" autocomplete="off" spellcheck="false" required maxlength="2000" placeholder="https://www.example.com/webhooks/listings" value="${form?.url ?? ''}"${described('webhook-url-hint', 'webhook-url-error', form?.error)}>
      ${fieldError('webhook-url-error', form?.error)}
      <p class="hint" id="webhook-url-hint">An https URL of your site (http only for localhost). At most 10 per country.</p>
    </div>
    <div class="field actions-field"><button type="submit" class="primary">Add endpoint</button></div>
  </form>
</section>`);
}

/**
 * The secret, on the page after adding or rotating (`fresh`), or when asked for later. Its way back
 * carries a query: the page after adding is POST /webhooks, and a link to the same path with only
 * a fragment would not load the list.
 */
export function webhookSecretPage(ctx: PageContext, endpoint: WebhookEndpoint, fresh: 'added' | 'rotated' | undefined): string {
  const lead = fresh === 'added'
    ? html`Endpoint <code>${endpoint.url}</code> added for ${countryName(endpoint.country)}. It is told of changes from now on.`
    : fresh === 'rotated'
      ? html`The secret of <code>${endpoint.url}</code> was rotated. Messages are signed with both the new and the previous secret for 24 hours: switch your site to the new one within that time.`
      : html`The signing secret of <code>${endpoint.url}</code>.`;
  return page(ctx, 'webhooks', 'Webhook secret', html`
<h1>${fresh === 'added' ? 'Webhook added' : 'Webhook signing secret'}</h1>
<p>${lead}</p>
<div class="secret">
  <code id="webhook-secret">${endpoint.secret}</code>
  <button type="button" class="primary" data-copy="webhook-secret" hidden autofocus>Copy secret</button>
</div>
<p class="copy-status" role="status" aria-live="polite"></p>
<p class="hint">Keep it on your server (an environment variable such as <code>LISTINGS_WEBHOOK_SECRET</code>). Verify every message with it: the SDK's <code>verifyWebhook(rawBody, headers, secret)</code> or any Standard Webhooks library.</p>
<p><a class="button primary" href="${webhooksPath(ctx.accountId)}?id=${endpoint.id}#webhook-${endpoint.id}">Back to webhooks</a></p>`);
}

/** Confirmation of a rotation or a removal. */
export function confirmWebhookPage(ctx: PageContext, endpoint: WebhookEndpoint, action: 'rotate' | 'remove'): string {
  const title = action === 'remove' ? 'Remove this webhook endpoint?' : 'Rotate this endpoint\'s secret?';
  const text = action === 'remove'
    ? html`<code>${endpoint.url}</code> will get no more messages, and its delivery log is deleted. Changes not yet delivered to it are not sent.`
    : html`A new secret is made for <code>${endpoint.url}</code>. For 24 hours messages carry signatures of both, so your site keeps verifying while you switch it to the new one.`;
  return page(ctx, 'webhooks', title, html`
<h1>${title}</h1>
<p>${text}</p>
<form method="post" action="${webhooksPath(ctx.accountId, action)}" class="confirm">
  ${csrfField(ctx.csrf)}
  <input type="hidden" name="id" value="${endpoint.id}">
  <button type="submit" class="${action === 'remove' ? 'danger' : 'primary'}">${action === 'remove' ? 'Remove endpoint' : 'Rotate secret'}</button>
  <a class="button secondary" href="${webhooksPath(ctx.accountId)}?id=${endpoint.id}#webhook-${endpoint.id}">Cancel</a>
</form>`);
}

const backLink = (ctx: PageContext, e: WebhookEndpoint, label = 'Back to webhooks') =>
  html`<a class="button secondary" href="${webhooksPath(ctx.accountId)}?id=${e.id}#webhook-${e.id}">${label}</a>`;

/** Replay (issue 43): the endpoint's messages again from a time, or from a change-feed cursor its site holds. */
export function replayPage(ctx: PageContext, endpoint: WebhookEndpoint, form: { since: string; error?: string } = { since: '' }): string {
  return page(ctx, 'webhooks', 'Replay webhook messages', html`
<h1>Replay messages</h1>
<p>Send the changes since a point in time to <code>${endpoint.url}</code> again: in order, after the message it is sending now, each marked with the header <code>listings-replay: true</code> until it has caught up. The change history of the last 30 days at least can be replayed.</p>
<form method="post" action="${webhooksPath(ctx.accountId, 'replay')}" class="confirm" novalidate>
  ${csrfField(ctx.csrf)}
  <input type="hidden" name="id" value="${endpoint.id}">
  <div class="field">
    <label for="replay-since">Since</label>
    <input id="replay-since" name="since" required autocomplete="off" spellcheck="false" placeholder="2026-12-01T00:00:00Z" value="${form.since}"${described('replay-since-hint', 'replay-since-error', form.error)}>
    ${fieldError('replay-since-error', form.error)}
    <p class="hint" id="replay-since-hint">A date and time in UTC (<code>2026-12-01T00:00</code>) or with its offset (<code>2026-12-01T08:00+08:00</code>), or a change-feed cursor your site holds.</p>
  </div>
  <button type="submit" class="primary">Replay</button>
  ${backLink(ctx, endpoint, 'Cancel')}
</form>`);
}

/** What the endpoint is told of (issue 43): a kind of change, listings of some usage types. */
export function filtersPage(ctx: PageContext, endpoint: WebhookEndpoint, error?: string): string {
  const chosen = new Set(endpoint.only_usage_types === null ? [] : (JSON.parse(endpoint.only_usage_types) as string[]));
  const kind = endpoint.only_change ?? 'all';
  const kinds = [['all', 'Every change'], ['upserted', 'Upserts only (new and changed listings)'], ['removed', 'Removals only']] as const;
  return page(ctx, 'webhooks', 'Choose webhook events', html`
<h1>Choose events</h1>
<p>What <code>${endpoint.url}</code> is told of, from its next message on. A message left with nothing to tell is not sent.</p>
${error === undefined ? '' : html`<div class="alert error" role="alert">${error}</div>`}
<form method="post" action="${webhooksPath(ctx.accountId, 'filters')}" class="confirm">
  ${csrfField(ctx.csrf)}
  <input type="hidden" name="id" value="${endpoint.id}">
  <fieldset><legend>Changes</legend>${kinds.map(([value, label]) => html`
    <label><input type="radio" name="changes" value="${value}"${kind === value ? html` checked` : ''}> ${label}</label>`)}
  </fieldset>
  <fieldset><legend>Usage types</legend>
    <p class="hint">None ticked: every listing. Ticked: upserts of listings of one of these; a listing that is of none of them (it may have left them) is told as a removal, so your site's copy stays exact.</p>${USAGE_NAMES.map((name) => html`
    <label><input type="checkbox" name="usage_types" value="${name}"${chosen.has(name) ? html` checked` : ''}> ${name}</label>`)}
  </fieldset>
  <button type="submit" class="primary">Save</button>
  ${backLink(ctx, endpoint, 'Cancel')}
</form>`);
}

/** Every attempt kept (7 days), newest first, a page at a time back to the first. */
export function attemptsPage(ctx: PageContext, endpoint: WebhookEndpoint, attempts: WebhookAttempt[], opts: { older?: string; paged: boolean }): string {
  const path = `${webhooksPath(ctx.accountId, 'attempts')}?id=${endpoint.id}`;
  const pager = opts.older === undefined && !opts.paged ? '' : html`<nav class="pager" aria-label="Attempt pages">
  ${opts.paged ? html`<a href="${path}">Newest attempts</a>` : ''}
  ${opts.older === undefined ? html`<span class="muted">The oldest attempt kept.</span>` : html`<a href="${path}&amp;before=${opts.older}" rel="next">Older attempts</a>`}
</nav>`;
  return page(ctx, 'webhooks', 'Webhook attempts', html`
<h1>Delivery attempts</h1>
<p class="lead">Every attempt to <code>${endpoint.url}</code> of the last 7 days, newest first. A failure shows its category only.</p>
${attemptsTable(attempts, 'Delivery attempts, newest first')}
${pager}
<p>${backLink(ctx, endpoint)}</p>`);
}
