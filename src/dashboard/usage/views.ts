import { keyDisplay } from '../../auth/key-format.js';
import type { ApiKeyRecord } from '../../storage/index.js';
import { FIRST_ERROR, OUTCOMES, type Outcome } from '../../usage/index.js';
import { html, type SafeHtml } from '../html.js';
import { countryName, developerPath, fmt, limitText, page, type PageContext } from '../layout.js';

/**
 * Settings > Developer > Usage (issue 12): server-made charts (inline SVG, each with a table of the
 * same numbers), every key together, then per key. No script.
 */

export const OUTCOME_LABELS: Readonly<Record<Outcome, string>> = {
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


/** Counts of one bucket (or one period) by outcome. */
export type Counts = Partial<Record<Outcome, number>>;
/** All requests of one bucket or period, whatever their outcome. */
export const total = (c: Counts) => Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
const errors = (c: Counts) => FAILURE_CODES.reduce((a, o) => a + (c[o] ?? 0), 0);

export interface Series {
  /** Bucket starts (ISO), oldest first, every bucket of the period (empty ones included). */
  starts: string[];
  counts: Counts[];
}

/** A period the Usage page shows: its buckets, and how many minutes one bucket is. */
export interface Range {
  id: '24h' | '7d' | '30d';
  /** "Last 24 hours". */
  label: string;
  /** "five minutes", "hour", "day": what one bar is. */
  per: string;
  /** Short, for the limit's label: "5 min", "hour", "day". */
  perShort: string;
  minutes: number;
  /** An axis label for bar i, or undefined. */
  tick(start: string, i: number): string | undefined;
  /** A bucket's name in the table. */
  row(start: string): string;
}

export const RANGES: Readonly<Record<Range['id'], Range>> = {
  '24h': {
    id: '24h', label: 'Last 24 hours', per: 'five minutes', perShort: '5 min', minutes: 5,
    tick: (start) => (start.slice(14, 16) === '00' && Number(start.slice(11, 13)) % 3 === 0 ? start.slice(11, 16) : undefined),
    row: (start) => `${start.slice(0, 10)} ${start.slice(11, 16)}`,
  },
  '7d': {
    id: '7d', label: 'Last 7 days', per: 'hour', perShort: 'hour', minutes: 60,
    tick: (start) => (start.slice(11, 13) === '00' ? start.slice(5, 10) : undefined),
    row: (start) => `${start.slice(0, 10)} ${start.slice(11, 16)}`,
  },
  '30d': {
    id: '30d', label: 'Last 30 days', per: 'day', perShort: 'day', minutes: 1440,
    tick: (start, i) => (i % 5 === 0 ? start.slice(5, 10) : undefined),
    row: (start) => start.slice(0, 10),
  },
};

export interface KeyUsage {
  key: ApiKeyRecord;
  /** Requests in the period, by outcome. */
  counts: Counts;
  limitPerMinute: number;
}

/** The share of requests answered 200 or 304, as "98.7 %" (never rounded up to 100 %), or "–" when there were none. */
export function successRate(c: Counts): string {
  const all = total(c);
  if (all === 0) return '–';
  const rate = Math.floor((((c['200'] ?? 0) + (c['304'] ?? 0)) / all) * 1000) / 10;
  return `${rate.toFixed(rate === 100 ? 0 : 1)} %`;
}

// ---------------------------------------------------------------- chart

/** A round axis maximum at or above `n`. */
export function niceMax(n: number): number {
  if (n <= 5) return 5;
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= n) return step * magnitude;
  return 10 * magnitude;
}

const W = 760;
const H = 220;
const LEFT = 56;
const RIGHT = 12;
const TOP = 18;
const BOTTOM = 30;

/** A key's limit at the scale of one bar of a chart. */
export interface LimitLine {
  /** Requests per bar that the limit allows: the per-minute limit times the bar's minutes. */
  value: number;
  label: string;
}

/**
 * The axis of a chart: scaled to the busiest bar, so that traffic fills the chart. The limit line
 * is drawn when it falls within twice the busiest bar (the axis then reaches it); further above, a
 * line at the top would squash the bars to slivers, so it is left out and said in words instead.
 */
export function chartScale(busiest: number, limit?: number): { max: number; limitShown: boolean } {
  const dataMax = niceMax(Math.max(1, busiest));
  if (limit === undefined) return { max: dataMax, limitShown: false };
  if (limit <= dataMax) return { max: dataMax, limitShown: true };
  if (limit <= 2 * Math.max(1, busiest)) return { max: niceMax(limit), limitShown: true };
  return { max: dataMax, limitShown: false };
}

/**
 * A stacked bar chart of `series` by outcome, as inline SVG (colours come from the stylesheet, so the
 * strict CSP holds), with the key's limit at the bars' scale when it is near the traffic.
 */
function barChart(id: string, title: string, description: string, series: Series, range: Range, limitLine?: LimitLine): SafeHtml {
  const totals = series.counts.map(total);
  const { max, limitShown } = chartScale(Math.max(0, ...totals), limitLine?.value);
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
      bars.push(html`<rect class="o-${outcome}" x="${(LEFT + i * step + (step - barW) / 2).toFixed(1)}" y="${top.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(0.5, y(base) - top).toFixed(1)}"><title>${range.row(series.starts[i]!)} UTC: ${fmt(n)} × ${OUTCOME_LABELS[outcome]}</title></rect>`);
      base += n;
    }
  });
  const grid = (Number.isInteger(max / 2) ? [0, max / 2, max] : [0, max]).map((v) => html`<line class="grid" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"></line><text class="axis" x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`);
  const ticks = series.starts.map((start, i) => {
    const label = range.tick(start, i);
    return label === undefined ? '' : html`<text class="axis" x="${(LEFT + i * step).toFixed(1)}" y="${H - 10}">${label}</text>`;
  });
  const limit = limitLine === undefined || !limitShown ? '' : html`<line class="limit" x1="${LEFT}" x2="${W - RIGHT}" y1="${y(limitLine.value).toFixed(1)}" y2="${y(limitLine.value).toFixed(1)}"></line><text class="limit-label" x="${W - RIGHT}" y="${(y(limitLine.value) - 5).toFixed(1)}" text-anchor="end">${limitLine.label}</text>`;
  return html`<svg class="chart" id="${id}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMid meet" data-axis-max="${max}">
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

/** The sum of a series' buckets by outcome. */
function sumCounts(list: readonly Counts[]): Counts {
  const out: Counts = {};
  for (const c of list) for (const o of OUTCOMES) if ((c[o] ?? 0) > 0) out[o] = (out[o] ?? 0) + c[o]!;
  return out;
}

// ---------------------------------------------------------------- usage page

interface UsagePageOptions {
  range: Range;
  /** Every key of the account with its requests in the period, the busiest first. */
  keys: KeyUsage[];
  /** The account's requests per bucket of the period, all keys together. */
  account: Series;
  /** The key whose chart is shown: the one asked for, else the busiest active key. */
  selected?: { usage: KeyUsage; series: Series };
  /** The key named in the address (kept when the period changes), if any. */
  chosenKeyId?: string;
  /** Whether any key had a request in the last 30 days (for the empty page's words). */
  anyIn30Days: boolean;
  flushSeconds: number;
  defaultLimit: number;
}

/** The Usage page's address for a period and a key; the default period (24 hours) is left out of it. */
function usageHref(accountId: string, rangeId: Range['id'], keyId: string | undefined): string {
  const usagePath = developerPath(accountId, 'usage');
  const params = { range: rangeId === '24h' ? undefined : rangeId, key: keyId };
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return q.size === 0 ? usagePath : `${usagePath}?${q}`;
}

/** The period picker: each period's link keeps the key named in the address. */
function periodPicker(ctx: PageContext, range: Range, chosenKeyId: string | undefined): SafeHtml {
  return html`<nav class="segmented" aria-label="Period">${Object.values(RANGES).map((r) => html`<a href="${usageHref(ctx.accountId, r.id, chosenKeyId)}"${r.id === range.id ? html` aria-current="page"` : ''}>${r.label}</a>`)}</nav>`;
}

/** The account's figures for the period, every key together. */
function accountSummary(ctx: PageContext, range: Range, accountCounts: Counts): SafeHtml {
  const failed = errors(accountCounts);
  return html`<ul class="stats" aria-label="${range.label}, all keys">
  <li><span class="stat-label">Requests</span> <strong class="stat-value">${fmt(total(accountCounts))}</strong></li>
  <li><span class="stat-label">Success rate</span> <strong class="stat-value">${successRate(accountCounts)}</strong> <span class="muted">200 and 304</span></li>
  <li><span class="stat-label">Failed</span> <strong class="stat-value">${failed === 0 ? '0' : html`<a href="${developerPath(ctx.accountId, 'failures')}">${fmt(failed)}</a>`}</strong></li>
  <li><span class="stat-label">Not modified (free)</span> <strong class="stat-value">${fmt(accountCounts['304'] ?? 0)}</strong></li>
</ul>`;
}

/** The table of every key's requests in the period, each with a link to its chart. */
function perKeyTable(ctx: PageContext, opts: UsagePageOptions): SafeHtml {
  const { range } = opts;
  const failuresPath = developerPath(ctx.accountId, 'failures');
  const selectedId = opts.selected?.usage.key.id;
  return html`<section aria-labelledby="keys-usage-heading">
  <h2 id="keys-usage-heading">By key</h2>
  <div class="table-card"><table class="usage-keys">
    <thead><tr><th scope="col">Key</th><th scope="col">Country</th><th scope="col">Requests</th><th scope="col">Success rate</th><th scope="col">Failed</th><th scope="col">Limit</th><th scope="col"><span class="visually-hidden">Chart</span></th></tr></thead>
    <tbody>${opts.keys.map(({ key, counts }) => html`<tr${selectedId === key.id ? html` class="selected" aria-current="true"` : ''}>
      <th scope="row" class="label-cell">${key.label} <code class="key-display">${keyDisplay(key)}</code>${key.revoked_at === null ? '' : html` <span class="badge revoked">Revoked</span>`}</th>
      <td data-label="Country">${countryName(key.country)} <span class="cc">${key.country}</span></td>
      <td data-label="Requests">${fmt(total(counts))}</td>
      <td data-label="Success rate">${successRate(counts)}</td>
      <td data-label="Failed">${errors(counts) === 0 ? '0' : html`<a href="${failuresPath}?key=${key.id}">${fmt(errors(counts))}</a>`}</td>
      <td data-label="Limit">${limitText(key, opts.defaultLimit)}</td>
      <td class="actions">${selectedId === key.id ? html`<span class="muted">Shown below</span>` : html`<a href="${usageHref(ctx.accountId, range.id, key.id)}#chart-heading">Show<span class="visually-hidden"> the usage of ${key.label}</span></a>`}</td>
    </tr>`)}</tbody>
  </table></div>
</section>`;
}

/** What a period without a request says: choose a longer one, or how to make a first request. */
function emptyPeriod(ctx: PageContext, range: Range, anyIn30Days: boolean): SafeHtml {
  return anyIn30Days
    ? html`<div class="empty"><p><strong>No requests in the ${range.label.toLowerCase()}.</strong></p><p>Choose a longer period above to see the earlier ones.</p></div>`
    : html`<div class="empty"><p><strong>No requests counted yet.</strong></p><p>Call the API with one of your keys, for example <code>curl -H "Authorization: Bearer $KEY" …/v1/listings</code>, then reload this page: each key's requests are counted by outcome (200, 304 and each error code). If a call fails, <a href="${developerPath(ctx.accountId, 'failures')}">Failed requests</a> says why and how to fix it.</p></div>`;
}

/** The chart of every key together, with its table. */
function accountChartSection(range: Range, account: Series): SafeHtml {
  const accountOutcomes = present(account.counts);
  const accountChart = barChart('chart-account', `Requests of all keys per ${range.per}, ${range.label.toLowerCase()}`,
    `Stacked bars by outcome, one per ${range.per}, every key of the account together. The table below holds the same numbers.`, account, range);
  return html`<section class="card" aria-labelledby="account-chart-heading">
  <h2 id="account-chart-heading">All keys</h2>
  ${legend(accountOutcomes.length === 0 ? ['200'] : accountOutcomes)}
  ${accountChart}
  ${seriesTable(`Requests of all keys per ${range.per}, ${range.label.toLowerCase()}`, account, range.row)}
</section>`;
}

/** One key's chart, with its limit at the bars' scale (drawn, or said in words when far above), its table and totals. */
function keyChartSection(ctx: PageContext, range: Range, selected: { usage: KeyUsage; series: Series }): SafeHtml {
  const { usage: { key, counts, limitPerMinute }, series } = selected;
  const perBar = limitPerMinute * range.minutes;
  const busiest = Math.max(0, ...series.counts.map(total));
  const { limitShown } = chartScale(busiest, perBar);
  const limitWords = `${fmt(limitPerMinute)} a minute, at most ${fmt(perBar)} per ${range.per}`;
  const chart = barChart(`chart-${range.id}`, `Requests of ${key.label} per ${range.per}, ${range.label.toLowerCase()}`,
    `Stacked bars by outcome, one per ${range.per}. ${limitShown
      ? `The dashed line is the key's limit at this scale: ${limitWords}.`
      : `The key's limit (${limitWords}) is far above the busiest ${range.per} (${fmt(busiest)}), so it is not drawn.`} The table below holds the same numbers.`,
    series, range, { value: perBar, label: `limit ${fmt(perBar)} per ${range.perShort} (${fmt(limitPerMinute)}/min)` });
  const outcomes = present(series.counts);
  return html`<section class="card" aria-labelledby="chart-heading">
  <h2 id="chart-heading">${key.label} <code class="key-display">${keyDisplay(key)}</code> <span class="cc">${key.country}</span>${key.revoked_at === null ? '' : html` <span class="badge revoked">Revoked</span>`}</h2>
  <p class="hint">Limit: ${fmt(limitPerMinute)} requests in any rolling minute (a 304 is free and never counts against it). Success rate: ${successRate(counts)}.</p>
  ${legend(outcomes.length === 0 ? ['200'] : outcomes)}
  ${chart}
  <p class="chart-note">${limitShown
    ? html`The dashed line is the limit at this chart's scale: ${fmt(limitPerMinute)}/min × ${fmt(range.minutes)} = ${fmt(perBar)} per ${range.per}.`
    : html`The limit, ${fmt(perBar)} per ${range.per} at this scale (${fmt(limitPerMinute)}/min × ${fmt(range.minutes)}), is off this chart: the busiest ${range.per} had ${fmt(busiest)} (${busiest === 0 ? '0' : Math.max(1, Math.round((busiest / perBar) * 100))} % of it).`}
  ${(counts.rate_limited ?? 0) > 0 ? html` The limit counts each rolling minute, so a burst within one minute gets <code>429</code>s even when its ${range.per} stays under the line.` : ''}</p>
  ${seriesTable(`Requests of ${key.label} per ${range.per}, ${range.label.toLowerCase()}`, series, range.row)}
  <div class="totals-grid">
    <div><h3>${range.label}: ${fmt(total(counts))}</h3>${totalsList(counts)}</div>
  </div>
  ${errors(counts) > 0 ? html`<p><a href="${developerPath(ctx.accountId, 'failures')}?key=${key.id}">See the failed requests of this key</a></p>` : ''}
</section>`;
}

/**
 * The Usage page: the period picker, the account's figures and chart, the per-key table, then one
 * key's chart. Without keys, or without a request in the period, it says what to do instead.
 */
export function usagePage(ctx: PageContext, opts: UsagePageOptions): string {
  const { range } = opts;
  const intro = html`<h1>Usage</h1>
<p class="lead">Requests made with your keys, by outcome: all keys together, then each key with its limit. Counts reach this page within about ${opts.flushSeconds} seconds.</p>`;

  if (opts.keys.length === 0) {
    return page(ctx, 'usage', 'Usage', html`${intro}
<div class="empty"><p><strong>No keys yet, so no usage.</strong></p><p><a href="${developerPath(ctx.accountId, 'keys')}">Create a key</a>, call the API with it (the page that shows the key gives you a curl line), and its requests appear here.</p></div>`);
  }

  const accountCounts = sumCounts(opts.account.counts);
  const ranges = periodPicker(ctx, range, opts.chosenKeyId);
  const breakdown = perKeyTable(ctx, opts);
  if (total(accountCounts) === 0 && opts.selected === undefined) {
    return page(ctx, 'usage', 'Usage', html`${intro}
${ranges}
${emptyPeriod(ctx, range, opts.anyIn30Days)}
${breakdown}`);
  }

  return page(ctx, 'usage', 'Usage', html`${intro}
${ranges}
${accountSummary(ctx, range, accountCounts)}
${accountChartSection(range, opts.account)}
${breakdown}
${opts.selected === undefined ? '' : keyChartSection(ctx, range, opts.selected)}`);
}

