import { keyDisplay } from '../../auth/key-format.js';
import { isErrorReason, type ErrorReason } from '../../core/api-error.js';
import { normalizeOrigin, validateOriginToRegister } from '../../cors/origin.js';
import type { ApiKeyRecord, FailedRequest } from '../../storage/index.js';
import { CSRF_FIELD } from '../csrf.js';
import { html, type SafeHtml } from '../html.js';
import { countryName, developerPath, fmt, page, when, type PageContext } from '../layout.js';
import { FAILURE_CODES, OUTCOME_LABELS } from '../usage/views.js';

/**
 * Settings > Developer > Failed requests and the request-id look-up (issue 12): a list of failures
 * that says how to fix each one, alike requests grouped. No script.
 */


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
    case 'database_unavailable':
      return html`Our database could not answer then, not a fault in your request: retry with exponential backoff.`;
    case null:
      return html`This request was recorded before the dashboard kept why requests failed: the message below is what the API answered.`;
  }
}

/** How many of a set of failed requests a browser sent (Fetch Metadata), how many surely not; the rest were not recorded. */
export interface Sources {
  fromBrowser: number;
  notBrowser: number;
}

export function sourcesOf(failures: ReadonlyArray<Pick<FailedRequest, 'sec_fetch'>>): Sources {
  return {
    fromBrowser: failures.filter((f) => f.sec_fetch !== null && f.sec_fetch !== '').length,
    notBrowser: failures.filter((f) => f.sec_fetch === '').length,
  };
}

/** What a failed request's Fetch Metadata says about who sent it. */
function sentBy(failure: FailedRequest): SafeHtml {
  if (failure.sec_fetch === null) return html`<span class="muted">Not recorded</span>`;
  if (failure.sec_fetch === '') return html`Not a browser <span class="muted">(no <code>Sec-Fetch-*</code> headers)</span>`;
  const [site, mode, dest] = failure.sec_fetch.split(' ');
  return html`A browser <span class="muted">(<code>Sec-Fetch-Site: ${site}</code>, <code>Mode: ${mode}</code>, <code>Dest: ${dest}</code>)</span>`;
}

/**
 * "Allow this origin" on a refused origin that can be registered, with whether a browser sent the
 * requests (their Sec-Fetch-* headers): a page on that origin, or something that set `Origin`
 * itself (curl, a script, a server), for which allowing the origin is the wrong fix.
 */
function allowForm(ctx: PageContext, row: FailureRow, back: string, sources: Sources): SafeHtml | string {
  if (reasonOf(row.failure) !== 'origin_not_registered' || row.origin === undefined || row.origin.allowed || row.key === undefined) return '';
  const { fromBrowser, notBrowser } = sources;
  const browser = fromBrowser > 0;
  const source = browser
    ? notBrowser === 0
      ? html`<p class="source browser"><strong>Sent by a browser:</strong> a page on <code>${row.origin.origin}</code> called the API (${fromBrowser === 1 ? 'the request carried' : 'the requests carried'} the <code>Sec-Fetch-*</code> headers browsers add).</p>`
      : html`<p class="source browser"><strong>${fmt(fromBrowser)} sent by a browser</strong> (with the <code>Sec-Fetch-*</code> headers browsers add), ${fmt(notBrowser)} without them (curl, a script or a server that set <code>Origin</code> itself).</p>`
    : notBrowser > 0
      ? html`<p class="source not-browser"><strong>Not from a browser:</strong> sent without the <code>Sec-Fetch-*</code> headers every current browser adds, so by curl, a script or a server that set <code>Origin</code> itself. A server needs no allowed origin: it should send no <code>Origin</code> header. Allow it only if a page on this origin is meant to call the API from a browser that sends none (Safari before 16.4).</p>`
      : html`<p class="source"><span class="muted">Whether a browser sent ${fromBrowser + notBrowser === 1 ? 'it' : 'them'} was not recorded (before the dashboard kept it).</span></p>`;
  const label = browser || notBrowser === 0 ? 'Allow this origin' : 'Allow anyway';
  return html`${source}<form method="post" action="${developerPath(ctx.accountId, 'failures')}/allow-origin" class="inline-form allow-form">
    <input type="hidden" name="${CSRF_FIELD}" value="${ctx.csrf}">
    <input type="hidden" name="country" value="${row.key.country}">
    <input type="hidden" name="origin" value="${row.origin.origin}">
    <input type="hidden" name="back" value="${back}">
    <button type="submit" class="${label === 'Allow anyway' ? 'secondary' : 'primary'} small">${label}<span class="visually-hidden"> ${row.origin.origin} for ${countryName(row.key.country)}</span></button>
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

/** Failed requests alike (same key, status, code, reason and origin), as the list shows them. */
export interface FailureGroupRow {
  /** The newest request of the group, with its key and limit: what the group's advice is chosen by. */
  latest: FailureRow;
  n: number;
  firstAt: string;
  lastAt: string;
  sources: Sources;
  /** The group's newest requests, newest first (at most `shownPerGroup`). */
  requests: FailedRequest[];
}

export function failuresPage(ctx: PageContext, opts: {
  groups: FailureGroupRow[];
  keys: ApiKeyRecord[];
  filter: { keyId?: string; code?: string };
  /** 1-based page of groups, groups per page, and the number of groups and of requests matching the filter. */
  page: { number: number; size: number; groups: number; requests: number };
  shownPerGroup: number;
  kept: number;
  notice?: string;
  flushSeconds: number;
}): string {
  const path = developerPath(ctx.accountId, 'failures');
  const link = (pageNumber: number) => {
    const q = new URLSearchParams();
    if (opts.filter.keyId !== undefined) q.set('key', opts.filter.keyId);
    if (opts.filter.code !== undefined) q.set('code', opts.filter.code);
    if (pageNumber > 1) q.set('page', String(pageNumber));
    return q.size === 0 ? path : `${path}?${q}`;
  };
  const back = link(opts.page.number);
  const filtered = opts.filter.keyId !== undefined || opts.filter.code !== undefined;
  const pages = Math.max(1, Math.ceil(opts.page.groups / opts.page.size));
  const first = (opts.page.number - 1) * opts.page.size + 1;
  const last = Math.min(opts.page.groups, first + opts.groups.length - 1);
  const summary = opts.page.groups === 0 ? '' : html`<p class="list-summary" id="failures-summary"><strong>${fmt(opts.page.requests)}</strong> failed request${opts.page.requests === 1 ? '' : 's'} in <strong>${fmt(opts.page.groups)}</strong> group${opts.page.groups === 1 ? '' : 's'}${pages > 1 ? html`, groups ${fmt(first)}–${fmt(last)} shown` : ''}.</p>`;
  const pager = pages <= 1 ? '' : html`<nav class="pager" aria-label="Pages of failed requests">
  ${opts.page.number > 1 ? html`<a href="${link(opts.page.number - 1)}" rel="prev">Newer</a>` : html`<span class="muted">Newer</span>`}
  <span>Page ${opts.page.number} of ${pages}</span>
  ${opts.page.number < pages ? html`<a href="${link(opts.page.number + 1)}" rel="next">Older</a>` : html`<span class="muted">Older</span>`}
</nav>`;
  const empty = opts.page.groups === 0
    ? html`<div class="empty"><p><strong>${filtered ? 'No failed requests match this filter.' : 'No failed requests.'}</strong></p><p>${filtered ? html`<a href="${path}">Show all failed requests</a>.` : 'Every request made with your keys was answered (or none was made yet). When a page of yours shows nothing, look here first: a refused origin, a revoked key or too many requests each show up with how to fix it.'}</p></div>`
    : html`<div class="empty"><p><strong>There is no page ${opts.page.number}.</strong></p><p><a href="${link(1)}">Back to the first page</a>.</p></div>`;
  return page(ctx, 'failures', 'Failed requests', html`
<h1>Failed requests</h1>
${opts.notice === undefined ? '' : html`<div class="alert success" role="status" id="notice" tabindex="-1">${opts.notice}</div>`}
<p class="lead">The newest ${opts.kept} requests made with your keys that failed, alike ones grouped (same key, status, code, reason and origin), the most recent first, each with what to do about it. They appear here within about ${opts.flushSeconds} seconds. A request with a missing or unknown key belongs to no account and is not listed.</p>
${requestIdForm(ctx)}
<form method="get" action="${path}" class="row-form filters" aria-label="Filter failed requests">
  <div class="field"><label for="filter-key">Key</label>
    <select id="filter-key" name="key"><option value="">All keys</option>${opts.keys.map((k) => html`<option value="${k.id}"${opts.filter.keyId === k.id ? html` selected` : ''}>${k.label} (${keyDisplay(k)})</option>`)}</select></div>
  <div class="field"><label for="filter-code">Error</label>
    <select id="filter-code" name="code"><option value="">All errors</option>${FAILURE_CODES.map((c) => html`<option value="${c}"${opts.filter.code === c ? html` selected` : ''}>${OUTCOME_LABELS[c]}</option>`)}</select></div>
  <div class="field actions-field"><div class="button-pair"><button type="submit" class="secondary">Filter</button>${filtered ? html`<a href="${path}">Clear</a>` : ''}</div></div>
</form>
${summary}
${opts.groups.length === 0 ? empty : html`<ol class="failures">${opts.groups.map((group) => failureGroup(ctx, group, back, opts.shownPerGroup))}</ol>`}
${pager}`);
}

function failureGroup(ctx: PageContext, group: FailureGroupRow, back: string, shownPerGroup: number): SafeHtml {
  const { latest } = group;
  const f = latest.failure;
  const requestLink = (r: FailedRequest) => html`<a href="${developerPath(ctx.accountId, 'requests')}?id=${encodeURIComponent(r.request_id)}"><code>${r.request_id}</code></a>`;
  return html`
  <li class="failure" id="failure-${f.id}" data-code="${f.code}" data-count="${group.n}">
    <div class="failure-head">
      <span class="badge code-${f.code}">${f.status} ${f.code}</span>
      ${when(group.lastAt)}
      <span class="count">${group.n === 1 ? '1 request' : html`<strong>${fmt(group.n)}</strong> requests`}</span>
      <span class="failure-key">${keyCell(latest)}</span>
    </div>
    <p class="fix">${explain(latest)}</p>
    ${allowForm(ctx, latest, back, group.sources)}
    <dl class="facts small">
      ${f.origin === null ? '' : html`<dt>Origin</dt><dd><code>${f.origin}</code></dd>`}
      ${group.n === 1 ? '' : html`<dt>First seen</dt><dd>${when(group.firstAt)}</dd><dt>Last seen</dt><dd>${when(group.lastAt)}</dd>`}
      <dt>${group.n === 1 ? 'Request' : 'Latest request'}</dt><dd><code>${f.method} ${f.path}</code></dd>
      ${f.client_ip === null ? '' : html`<dt>Client address</dt><dd><code>${f.client_ip}</code></dd>`}
      <dt>Request id</dt><dd>${requestLink(f)}</dd>
      ${f.message === '' ? '' : html`<dt>Message</dt><dd>${f.message}</dd>`}
    </dl>
    ${group.n === 1 ? '' : html`<details class="group-requests">
      <summary>${group.n > group.requests.length ? `The newest ${group.requests.length} of these ${fmt(group.n)} requests` : `All ${fmt(group.n)} requests`}</summary>
      <div class="table-card"><table class="requests-table">
        <thead><tr><th scope="col">Time (UTC)</th><th scope="col">Request</th><th scope="col">Client address</th><th scope="col">Browser</th><th scope="col">Request id</th></tr></thead>
        <tbody>${group.requests.map((r) => html`<tr>
          <td data-label="Time">${r.at.slice(0, 10)} ${r.at.slice(11, 19)}</td>
          <td data-label="Request"><code>${r.method} ${r.path}</code></td>
          <td data-label="Client address">${r.client_ip === null ? html`<span class="muted">–</span>` : html`<code>${r.client_ip}</code>`}</td>
          <td data-label="Browser">${r.sec_fetch === null ? html`<span class="muted">–</span>` : r.sec_fetch === '' ? 'No' : 'Yes'}</td>
          <td data-label="Request id">${requestLink(r)}</td>
        </tr>`)}</tbody>
      </table></div>
      ${group.n > shownPerGroup ? html`<p class="hint">Only the newest ${shownPerGroup} of a group are listed here; look up any other by its request id.</p>` : ''}
    </details>`}
  </li>`;
}

export function requestPage(ctx: PageContext, opts: { requestId: string; row?: FailureRow }): string {
  const back = `${developerPath(ctx.accountId, 'requests')}?id=${encodeURIComponent(opts.requestId)}`;
  const content = opts.row === undefined
    ? html`<h1>Look up a request</h1>${requestIdForm(ctx, opts.requestId)}`
    : html`<h1>Request <code>${opts.requestId}</code></h1>
<div class="failure card" data-code="${opts.row.failure.code}">
  <div class="failure-head"><span class="badge code-${opts.row.failure.code}">${opts.row.failure.status} ${opts.row.failure.code}</span> ${when(opts.row.failure.at)}</div>
  <p class="fix">${explain(opts.row)}</p>
  ${allowForm(ctx, opts.row, back, sourcesOf([opts.row.failure]))}
  <dl class="facts">
    <dt>Key</dt><dd>${keyCell(opts.row)}</dd>
    <dt>Request</dt><dd><code>${opts.row.failure.method} ${opts.row.failure.path}</code></dd>
    <dt>Origin</dt><dd>${opts.row.failure.origin === null ? html`<span class="muted">None (a server-to-server call)</span>` : html`<code>${opts.row.failure.origin}</code>`}</dd>
    <dt>Sent by</dt><dd>${sentBy(opts.row.failure)}</dd>
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

