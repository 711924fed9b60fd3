import { keyDisplay } from '../auth/key-format.js';
import type { Country } from '../core/countries.js';
import { isErrorReason, type ErrorReason } from '../core/api-error.js';
import { normalizeOrigin, validateOriginToRegister } from '../cors/origin.js';
import type { ApiKeyRecord, FailedRequest } from '../storage/index.js';
import { FIRST_ERROR, OUTCOMES, type Outcome } from '../usage/outcomes.js';
import { CSRF_FIELD } from './csrf.js';
import { html, type SafeHtml } from './html.js';
import { COUNTRY_NAMES, developerPath, page, when, type PageContext } from './views.js';

/**
 * Settings > Developer > Usage, Failed requests and the request-id look-up (issue 12): server-made
 * charts (inline SVG, each with a table of the same numbers) and a list of failures that says how to
 * fix each one. No script.
 */

const OUTCOME_LABELS: Readonly<Record<Outcome, string>> = {
  '200': '200 OK',
  '304': '304 Not Modified (free)',
  bad_request: '400 bad_request',
  unauthorized: '401 unauthorized',
  origin_not_allowed: '403 origin_not_allowed',
  not_found: '404 not_found',
  method_not_allowed: '405 method_not_allowed',
  rate_limited: '429 rate_limited',
  internal_error: '500 internal_error',
};
/** The error codes a key's failed request can have (405 comes before the key is read). */
export const FAILURE_CODES: readonly Outcome[] = OUTCOMES.slice(FIRST_ERROR).filter((o) => o !== 'method_not_allowed');

const countryName = (c: string) => COUNTRY_NAMES[c as Country] ?? c;
const fmt = (n: number) => n.toLocaleString('en-US');

/** Counts of one bucket (or one period) by outcome. */
export type Counts = Partial<Record<Outcome, number>>;
const total = (c: Counts) => Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
const errors = (c: Counts) => FAILURE_CODES.reduce((a, o) => a + (c[o] ?? 0), 0);

export interface Series {
  /** Bucket starts (ISO), oldest first, every bucket of the period (empty ones included). */
  starts: string[];
  counts: Counts[];
}

export interface KeyUsage {
  key: ApiKeyRecord;
  last24h: Counts;
  last30d: Counts;
}

// ---------------------------------------------------------------- chart

/** A round axis maximum at or above `n`. */
function niceMax(n: number): number {
  if (n <= 5) return 5;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= n) return step * magnitude;
  return 10 * magnitude;
}

const W = 760;
const H = 220;
const LEFT = 56;
const RIGHT = 12;
const TOP = 14;
const BOTTOM = 30;

/**
 * A stacked bar chart of `series` by outcome, as inline SVG (colours come from the stylesheet, so the
 * strict CSP holds), with an optional horizontal line (the key's limit over one bucket).
 */
function barChart(
  id: string,
  title: string,
  description: string,
  series: Series,
  tick: (start: string, i: number) => string | undefined,
  limitLine?: { value: number; label: string },
): SafeHtml {
  const totals = series.counts.map(total);
  const max = niceMax(Math.max(1, ...totals, limitLine?.value ?? 0));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const step = plotW / Math.max(1, series.starts.length);
  const barW = Math.max(1, step * 0.8);
  const y = (v: number) => TOP + plotH - (v / max) * plotH;
  const bars: SafeHtml[] = [];
  series.counts.forEach((counts, i) => {
    let base = 0;
    for (const outcome of OUTCOMES) {
      const n = counts[outcome] ?? 0;
      if (n === 0) continue;
      const top = y(base + n);
      bars.push(html`<rect class="o-${outcome}" x="${(LEFT + i * step + (step - barW) / 2).toFixed(1)}" y="${top.toFixed(1)}" width="${barW.toFixed(1)}" height="${(y(base) - top).toFixed(1)}"><title>${series.starts[i]!.slice(0, 16).replace('T', ' ')} UTC: ${fmt(n)} × ${OUTCOME_LABELS[outcome]}</title></rect>`);
      base += n;
    }
  });
  const grid = [0, max / 2, max].map((v) => html`<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"></line><text class="axis" x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`);
  const ticks = series.starts.map((start, i) => {
    const label = tick(start, i);
    return label === undefined ? '' : html`<text class="axis" x="${(LEFT + i * step).toFixed(1)}" y="${H - 10}">${label}</text>`;
  });
  const limit = limitLine === undefined ? '' : html`<line class="limit" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(limitLine.value).toFixed(1)}" y2="${y(limitLine.value).toFixed(1)}"></line><text class="limit-label" x="${W - RIGHT}" y="${(y(limitLine.value) - 5).toFixed(1)}" text-anchor="end">${limitLine.label}</text>`;
  return html`<svg class="chart" id="${id}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet">
  <title id="${id}-title">${title}</title><desc id="${id}-desc">${description}</desc>
  ${grid}${bars}${limit}${ticks}
</svg>`;
}

function legend(outcomes: readonly Outcome[]): SafeHtml {
  return html`<ul class="legend" aria-label="Outcomes">${outcomes.map((o) => html`<li><span class="swatch o-${o}" aria-hidden="true"></span>${OUTCOME_LABELS[o]}</li>`)}</ul>`;
}

/** The outcomes with any count in these buckets, in OUTCOMES order. */
function present(list: readonly Counts[]): Outcome[] {
  return OUTCOMES.filter((o) => list.some((c) => (c[o] ?? 0) > 0));
}

/** The chart's numbers as a table: one row per non-empty bucket. */
function seriesTable(caption: string, series: Series, label: (start: string) => string): SafeHtml {
  const outcomes = present(series.counts);
  const rows = series.starts.map((start, i) => [start, series.counts[i]!] as const).filter(([, c]) => total(c) > 0);
  if (rows.length === 0) return html`<p class="empty-line">No requests in this period.</p>`;
  return html`<details class="numbers"><summary>${caption} (table)</summary>
  <div class="table-card"><table class="numbers-table">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Period (UTC)</th>${outcomes.map((o) => html`<th scope="col">${OUTCOME_LABELS[o]}</th>`)}<th scope="col">Total</th></tr></thead>
    <tbody>${rows.map(([start, c]) => html`<tr><th scope="row">${label(start)}</th>${outcomes.map((o) => html`<td>${fmt(c[o] ?? 0)}</td>`)}<td>${fmt(total(c))}</td></tr>`)}</tbody>
  </table></div>
  <p class="hint">Periods with no requests are left out.</p>
</details>`;
}

function totalsList(counts: Counts): SafeHtml {
  const outcomes = OUTCOMES.filter((o) => (counts[o] ?? 0) > 0);
  if (outcomes.length === 0) return html`<span class="muted">No requests</span>`;
  return html`<ul class="totals">${outcomes.map((o) => html`<li><span class="swatch o-${o}" aria-hidden="true"></span>${OUTCOME_LABELS[o]}: <strong>${fmt(counts[o]!)}</strong></li>`)}</ul>`;
}

// ---------------------------------------------------------------- usage page

export function usagePage(ctx: PageContext, opts: {
  keys: KeyUsage[];
  selected?: { key: ApiKeyRecord; limitPerMinute: number; day: Series; month: Series };
  flushSeconds: number;
}): string {
  const usagePath = developerPath(ctx.accountId, 'usage');
  const failuresPath = developerPath(ctx.accountId, 'failures');
  const anyUsage = opts.keys.some((k) => total(k.last30d) > 0 || total(k.last24h) > 0);
  const intro = html`<h1>Usage</h1>
<p class="lead">Requests made with each of your keys, by outcome: over the last 24 hours (per five minutes) and the last 30 days (per day, UTC). Counts reach this page within about ${opts.flushSeconds} seconds.</p>`;

  if (opts.keys.length === 0) {
    return page(ctx, 'usage', 'Usage', html`${intro}
<div class="empty"><p><strong>No keys yet, so no usage.</strong></p><p><a href="${developerPath(ctx.accountId, 'keys')}">Create a key</a>, call the API with it (the page that shows the key gives you a curl line), and its requests appear here.</p></div>`);
  }

  const summary = html`<section aria-labelledby="keys-usage-heading">
  <h2 id="keys-usage-heading">Your keys</h2>
  <div class="table-card"><table class="usage-keys">
    <thead><tr><th scope="col">Key</th><th scope="col">Country</th><th scope="col">Last 24 hours</th><th scope="col">Failed (24 h)</th><th scope="col">Last 30 days</th><th scope="col"><span class="visually-hidden">Chart</span></th></tr></thead>
    <tbody>${opts.keys.map(({ key, last24h, last30d }) => html`<tr${opts.selected?.key.id === key.id ? html` class="selected" aria-current="true"` : ''}>
      <th scope="row" class="label-cell">${key.label} <code class="key-display">${keyDisplay(key)}</code>${key.revoked_at === null ? '' : html` <span class="badge revoked">Revoked</span>`}</th>
      <td data-label="Country">${countryName(key.country)} <span class="cc">${key.country}</span></td>
      <td data-label="Last 24 hours">${fmt(total(last24h))}</td>
      <td data-label="Failed (24 h)">${errors(last24h) === 0 ? '0' : html`<a href="${failuresPath}?key=${key.id}">${fmt(errors(last24h))}</a>`}</td>
      <td data-label="Last 30 days">${fmt(total(last30d))}</td>
      <td class="actions"><a href="${usagePath}?key=${key.id}#chart-heading">Show<span class="visually-hidden"> the usage of ${key.label}</span></a></td>
    </tr>`)}</tbody>
  </table></div>
</section>`;

  if (!anyUsage || opts.selected === undefined) {
    return page(ctx, 'usage', 'Usage', html`${intro}
<div class="empty"><p><strong>No requests counted yet.</strong></p><p>Call the API with one of your keys, for example <code>curl -H "Authorization: Bearer $KEY" …/v1/listings</code>, then reload this page: each key's requests are counted by outcome (200, 304 and each error code). If a call fails, <a href="${failuresPath}">Failed requests</a> says why and how to fix it.</p></div>
${summary}`);
  }

  const { key, limitPerMinute, day, month } = opts.selected;
  const selected = opts.keys.find((k) => k.key.id === key.id)!;
  const outcomes = present([...day.counts, ...month.counts]);
  const hourLabel = (start: string) => `${start.slice(0, 10)} ${start.slice(11, 16)}`;
  const dayLabel = (start: string) => start.slice(0, 10);
  const chart24 = barChart('chart-24h', `Requests of ${key.label} per five minutes, last 24 hours`,
    `Stacked bars by outcome, one per five minutes; the dashed line is the key's limit of ${fmt(limitPerMinute)} requests a minute (${fmt(limitPerMinute * 5)} per five minutes). The table below holds the same numbers.`,
    day, (start, i) => (i % 36 === 0 ? `${start.slice(11, 16)}` : undefined), { value: limitPerMinute * 5, label: `limit ${fmt(limitPerMinute)}/min` });
  const chart30 = barChart('chart-30d', `Requests of ${key.label} per day, last 30 days`,
    'Stacked bars by outcome, one per UTC day. The table below holds the same numbers.',
    month, (start, i) => (i % 5 === 0 ? start.slice(5, 10) : undefined));

  return page(ctx, 'usage', 'Usage', html`${intro}
${summary}
<section class="card" aria-labelledby="chart-heading">
  <h2 id="chart-heading">${key.label} <code class="key-display">${keyDisplay(key)}</code> <span class="cc">${key.country}</span></h2>
  <p class="hint">Limit: ${fmt(limitPerMinute)} requests in any rolling minute (a 304 is free and never counts against it).</p>
  ${legend(outcomes.length === 0 ? ['200'] : outcomes)}
  <h3>Last 24 hours</h3>
  ${chart24}
  ${seriesTable('Requests per five minutes, last 24 hours', day, hourLabel)}
  <h3>Last 30 days</h3>
  ${chart30}
  ${seriesTable('Requests per day, last 30 days', month, dayLabel)}
  <h3>Totals</h3>
  <div class="totals-grid">
    <div><h4>Last 24 hours: ${fmt(total(selected.last24h))}</h4>${totalsList(selected.last24h)}</div>
    <div><h4>Last 30 days: ${fmt(total(selected.last30d))}</h4>${totalsList(selected.last30d)}</div>
  </div>
  ${errors(selected.last24h) > 0 ? html`<p><a href="${failuresPath}?key=${key.id}">See the failed requests of this key</a></p>` : ''}
</section>`);
}

// ---------------------------------------------------------------- failed requests

export interface FailureRow {
  failure: FailedRequest;
  key: ApiKeyRecord | undefined;
  /** The key's per-minute limit now (its own or the default). */
  limitPerMinute: number;
  /** The normalised origin of a 403, when it is one that can be registered, and whether it is allowed now for the key's country. */
  origin?: { origin: string; allowed: boolean };
  /** The key's country's API base URL (for a key sent to another country's host). */
  apiBaseUrl?: string;
}

/**
 * Why a failed request failed: the reason stored with it (issue 29 item 11). A row written before
 * reasons were kept has only its code: the reason when the code has one (429, 405, 500), a 403's
 * when its stored origin says it (the literal `null`, or one the origin step could read), else
 * null. Never the key's state now, nor the message's words.
 */
export function reasonOf(failure: FailedRequest): ErrorReason | null {
  if (isErrorReason(failure.reason)) return failure.reason;
  switch (failure.code) {
    case 'rate_limited':
    case 'method_not_allowed':
    case 'internal_error':
      return failure.code;
    case 'origin_not_allowed':
      if (failure.origin === 'null') return 'null_origin';
      return failure.origin !== null && normalizeOrigin(failure.origin) !== undefined ? 'origin_not_registered' : null;
    default:
      return null;
  }
}

const AUTHORIZATION = html`<code>Authorization: Bearer &lt;key&gt;</code>`;

/** One sentence that says how to fix a failed request, chosen by why it failed (reasonOf). */
export function explain(row: FailureRow): SafeHtml {
  const { failure, key } = row;
  switch (reasonOf(failure)) {
    case 'revoked_key':
      return html`This key had been revoked when the request was made, so it was refused: create a new key and put it where this one is used.`;
    case 'wrong_country':
      return key === undefined
        ? html`The key was sent to the host of another country than its own: call its own country's API host with it.`
        : html`This is a ${countryName(key.country)} key sent to another country's host: call <code>${row.apiBaseUrl ?? `the ${key.country} host`}</code> with it instead, or create a key for the country whose host you called.`;
    case 'unknown_key':
      return html`The key is not one the API knows: copy it again from where it was saved, or create a new one.`;
    case 'malformed_key':
      return html`The key was not whole (cut short, mistyped or with extra characters): copy it again whole, or create a new one.`;
    case 'missing_key':
      return html`No key was sent: send the header ${AUTHORIZATION}.`;
    case 'malformed_authorization':
      return html`The <code>Authorization</code> header was not <code>Bearer</code> and a key: send ${AUTHORIZATION}.`;
    case 'repeated_authorization':
      return html`The <code>Authorization</code> header was sent more than once (a proxy or a library may add its own): send it once.`;
    case 'null_origin':
      return html`The page's origin was <code>null</code> (a sandboxed frame, a <code>file:</code> page or a redirect across origins), which can never be allowed: serve the page from a real https origin, or call the API from your server.`;
    case 'malformed_origin':
      return html`The request's <code>Origin</code> header was not an origin a browser sends: call the API from a page served over https, or from your server.`;
    case 'origin_not_registered': {
      const country = key === undefined ? 'its country' : countryName(key.country);
      if (row.origin === undefined) return html`The page's origin is not registered${key === undefined ? '' : html` for ${country}`}, and cannot be (only https origins, or http on localhost): serve the page over https and register that origin, or call the API from your server.`;
      if (row.origin.allowed) return html`The origin <code>${row.origin.origin}</code> was not registered for ${country} then; it is allowed now, so the page works on its next call.`;
      return html`The origin <code>${row.origin.origin}</code> is not registered for ${country}: allow it, or call the API from your server.`;
    }
    case 'rate_limited':
      return html`More requests a minute than this key's limit (${fmt(row.limitPerMinute)} a minute now): poll less often, and send <code>If-None-Match</code> with the last <code>ETag</code> (a 304 is free and never counts).`;
    case 'bad_parameter':
      return html`A query parameter is wrong: ${failure.message === '' ? 'check the parameters against the reference.' : failure.message}`;
    case 'bad_cursor':
      return html`The change feed's cursor was refused (too old, or not issued for this key's account and country): start again without a cursor, then follow <code>next_cursor</code>.`;
    case 'malformed_request':
      return html`The request itself was malformed (its URL or its headers): the message below says what.`;
    case 'listing_not_found':
      return html`No active listing with this id is visible to this key: it may be leased or expired, belong to another country, or the id is mistyped.`;
    case 'unknown_route':
      return html`No such route: the API serves <code>GET /v1/listings</code>, <code>/v1/listings/{id}</code> and <code>/v1/listings/changes</code>.`;
    case 'unknown_host':
      return html`The host called serves no country of this API: call the API host of the key's country.`;
    case 'method_not_allowed':
      return html`The API answers only <code>GET</code>, <code>HEAD</code> and <code>OPTIONS</code>.`;
    case 'internal_error':
      return html`A failure on our side, not in your request: retry with exponential backoff; if it keeps happening, give your contact the request id.`;
    case null:
      return html`This request was recorded before the dashboard kept why requests failed: the message below is what the API answered.`;
  }
}

function allowButton(ctx: PageContext, row: FailureRow, back: string): SafeHtml | string {
  if (reasonOf(row.failure) !== 'origin_not_registered' || row.origin === undefined || row.origin.allowed || row.key === undefined) return '';
  return html`<form method="post" action="${developerPath(ctx.accountId, 'failures')}/allow-origin" class="inline-form">
    <input type="hidden" name="${CSRF_FIELD}" value="${ctx.csrf}">
    <input type="hidden" name="country" value="${row.key.country}">
    <input type="hidden" name="origin" value="${row.origin.origin}">
    <input type="hidden" name="back" value="${back}">
    <button type="submit" class="primary small">Allow this origin<span class="visually-hidden"> ${row.origin.origin} for ${countryName(row.key.country)}</span></button>
  </form>`;
}

function keyCell(row: FailureRow): SafeHtml {
  return row.key === undefined ? html`<span class="muted">A deleted key</span>` : html`${row.key.label} <code class="key-display">${keyDisplay(row.key)}</code>`;
}

function requestIdForm(ctx: PageContext, value = ''): SafeHtml {
  return html`<form method="get" action="${developerPath(ctx.accountId, 'requests')}" class="row-form lookup" role="search">
  <div class="field grow">
    <label for="request-id">Look up a request id</label>
    <input id="request-id" name="id" autocomplete="off" spellcheck="false" maxlength="140" value="${value}" placeholder="req_…" aria-describedby="request-id-hint">
    <p class="hint" id="request-id-hint">Paste the <code>X-Request-Id</code> of an answer. Failed requests are kept (the newest 200 of your account); successful ones are only counted.</p>
  </div>
  <div class="field actions-field"><button type="submit" class="secondary">Look up</button></div>
</form>`;
}

export function failuresPage(ctx: PageContext, opts: {
  rows: FailureRow[];
  keys: ApiKeyRecord[];
  filter: { keyId?: string; code?: string };
  kept: number;
  notice?: string;
  flushSeconds: number;
}): string {
  const path = developerPath(ctx.accountId, 'failures');
  const query = new URLSearchParams();
  if (opts.filter.keyId !== undefined) query.set('key', opts.filter.keyId);
  if (opts.filter.code !== undefined) query.set('code', opts.filter.code);
  const back = query.size === 0 ? path : `${path}?${query}`;
  const filtered = opts.filter.keyId !== undefined || opts.filter.code !== undefined;
  return page(ctx, 'failures', 'Failed requests', html`
<h1>Failed requests</h1>
<p class="lead">The newest ${opts.kept} requests made with your keys that failed, newest first, each with what to do about it. They appear here within about ${opts.flushSeconds} seconds. A request with a missing or unknown key belongs to no account and is not listed.</p>
${opts.notice === undefined ? '' : html`<div class="alert success" role="status">${opts.notice}</div>`}
${requestIdForm(ctx)}
<form method="get" action="${path}" class="row-form filters" aria-label="Filter failed requests">
  <div class="field"><label for="filter-key">Key</label>
    <select id="filter-key" name="key"><option value="">All keys</option>${opts.keys.map((k) => html`<option value="${k.id}"${opts.filter.keyId === k.id ? html` selected` : ''}>${k.label} (${keyDisplay(k)})</option>`)}</select></div>
  <div class="field"><label for="filter-code">Error</label>
    <select id="filter-code" name="code"><option value="">All errors</option>${FAILURE_CODES.map((c) => html`<option value="${c}"${opts.filter.code === c ? html` selected` : ''}>${OUTCOME_LABELS[c]}</option>`)}</select></div>
  <div class="field actions-field"><button type="submit" class="secondary">Filter</button>${filtered ? html` <a href="${path}">Clear</a>` : ''}</div>
</form>
${opts.rows.length === 0
  ? html`<div class="empty"><p><strong>${filtered ? 'No failed requests match this filter.' : 'No failed requests.'}</strong></p><p>${filtered ? html`<a href="${path}">Show all failed requests</a>.` : 'Every request made with your keys was answered (or none was made yet). When a page of yours shows nothing, look here first: a refused origin, a revoked key or too many requests each show up with how to fix it.'}</p></div>`
  : html`<ol class="failures">${opts.rows.map((row) => html`
  <li class="failure" id="failure-${row.failure.id}" data-code="${row.failure.code}">
    <div class="failure-head">
      <span class="badge code-${row.failure.code}">${row.failure.status} ${row.failure.code}</span>
      ${when(row.failure.at)}
      <span class="failure-key">${keyCell(row)}</span>
    </div>
    <p class="fix">${explain(row)}</p>
    ${allowButton(ctx, row, back)}
    <dl class="facts small">
      <dt>Request</dt><dd><code>${row.failure.method} ${row.failure.path}</code></dd>
      ${row.failure.origin === null ? '' : html`<dt>Origin</dt><dd><code>${row.failure.origin}</code></dd>`}
      ${row.failure.client_ip === null ? '' : html`<dt>Client address</dt><dd><code>${row.failure.client_ip}</code></dd>`}
      <dt>Request id</dt><dd><a href="${developerPath(ctx.accountId, 'requests')}?id=${encodeURIComponent(row.failure.request_id)}"><code>${row.failure.request_id}</code></a></dd>
      ${row.failure.message === '' ? '' : html`<dt>Message</dt><dd>${row.failure.message}</dd>`}
    </dl>
  </li>`)}</ol>`}`);
}

export function requestPage(ctx: PageContext, opts: { requestId: string; row?: FailureRow }): string {
  const back = `${developerPath(ctx.accountId, 'requests')}?id=${encodeURIComponent(opts.requestId)}`;
  const content = opts.row === undefined
    ? html`<h1>Look up a request</h1>${requestIdForm(ctx, opts.requestId)}`
    : html`<h1>Request <code>${opts.requestId}</code></h1>
<div class="failure card" data-code="${opts.row.failure.code}">
  <div class="failure-head"><span class="badge code-${opts.row.failure.code}">${opts.row.failure.status} ${opts.row.failure.code}</span> ${when(opts.row.failure.at)}</div>
  <p class="fix">${explain(opts.row)}</p>
  ${allowButton(ctx, opts.row, back)}
  <dl class="facts">
    <dt>Key</dt><dd>${keyCell(opts.row)}</dd>
    <dt>Request</dt><dd><code>${opts.row.failure.method} ${opts.row.failure.path}</code></dd>
    <dt>Origin</dt><dd>${opts.row.failure.origin === null ? html`<span class="muted">None (a server-to-server call)</span>` : html`<code>${opts.row.failure.origin}</code>`}</dd>
    <dt>Client address</dt><dd>${opts.row.failure.client_ip === null ? html`<span class="muted">Not recorded</span>` : html`<code>${opts.row.failure.client_ip}</code>`}</dd>
    <dt>Message</dt><dd>${opts.row.failure.message}</dd>
  </dl>
</div>
${requestIdForm(ctx)}
<p><a href="${developerPath(ctx.accountId, 'failures')}">All failed requests</a></p>`;
  return page(ctx, 'failures', 'Request', content);
}

/** The 404 of a request id that is not held for the account (never said apart from another account's). */
export function requestNotHeldPage(ctx: PageContext, requestId: string): string {
  return page(ctx, 'failures', 'Request not found', html`
<h1>No such request is held</h1>
<p>No failed request with the id <code>${requestId}</code> is held for your account. Only failed requests are kept (the newest 200); a successful request is counted on the Usage page but not kept, and an id from another account is never shown.</p>
${requestIdForm(ctx, requestId)}
<p><a href="${developerPath(ctx.accountId, 'failures')}">All failed requests</a></p>`);
}

/** The normalised form of a refused origin, when it is one that can be registered. */
export function registrableOrigin(origin: string | null): string | undefined {
  if (origin === null) return undefined;
  const checked = validateOriginToRegister(origin);
  return 'origin' in checked ? checked.origin : undefined;
}
