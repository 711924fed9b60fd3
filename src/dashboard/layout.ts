import type { Country } from '../core/countries.js';
import type { ApiKeyRecord } from '../storage/index.js';
import { CSRF_FIELD } from './csrf.js';
import { html, type SafeHtml } from './html.js';

/**
 * What every page of the dashboard shares: the frame (header, Settings > Developer tabs), the
 * error page and small parts of forms and times. The pages themselves are beside their routes,
 * one folder per resource (keys/, origins/, usage/, failures/, webhooks/, activity/, sign-in/):
 * server-rendered HTML from small template functions (html.ts escapes everything), one stylesheet
 * and a few lines of script for the copy buttons. Every page works without script and with the
 * keyboard alone.
 */

export const COUNTRY_NAMES: Readonly<Record<Country, string>> = {
  sg: 'Singapore', my: 'Malaysia', uk: 'United Kingdom', in: 'India', us: 'United States', ca: 'Canada', au: 'Australia', nz: 'New Zealand',
};

/** Who is looking, for the page frame and every form. */
export interface PageContext {
  accountId: string;
  accountName: string;
  email: string;
  /** The session's CSRF token, put in every form. */
  csrf: string;
}

export type Tab = 'keys' | 'origins' | 'usage' | 'failures' | 'webhooks' | 'activity';

/** The URL of a Settings > Developer page of an account. */
export function developerPath(accountId: string, page: string = ''): string {
  return `/accounts/${accountId}/settings/developer${page === '' ? '' : `/${page}`}`;
}

export const csrfField = (token: string) => html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`;

/** A count as the pages show it: 12,345. */
export const fmt = (n: number) => n.toLocaleString('en-US');

export function countryName(country: string): string {
  return COUNTRY_NAMES[country as Country] ?? country;
}

export function when(iso: string | null, never = 'Never'): SafeHtml {
  if (iso === null) return html`<span class="muted">${never}</span>`;
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}

/** How long before `now` a time was, in words: "4 seconds ago", "3 minutes ago", "2 days ago". */
export function ago(iso: string, now: number): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  const [n, unit] = seconds < 60 ? [seconds, 'second'] : seconds < 3600 ? [Math.floor(seconds / 60), 'minute']
    : seconds < 86_400 ? [Math.floor(seconds / 3600), 'hour'] : [Math.floor(seconds / 86_400), 'day'];
  return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
}

/** A time to the second, and how long ago it was (the revoke page's last use). */
export function exactly(iso: string | null, now: number, never = 'Never'): SafeHtml {
  if (iso === null) return html`<span class="muted">${never}</span>`;
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time> <span class="muted">(${ago(iso, now)})</span>`;
}

/** A key's requests per minute as the keys page and the usage page say it. */
export function limitText(key: ApiKeyRecord, defaultLimit: number): SafeHtml {
  return key.rate_limit_per_minute === null
    ? html`${defaultLimit.toLocaleString('en-US')}/min <span class="muted">(default)</span>`
    : html`${key.rate_limit_per_minute.toLocaleString('en-US')}/min`;
}

export function document(title: string, body: SafeHtml, bodyClass = ''): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Listings API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/copy.js" defer></script>
</head>
<body class="${bodyClass}">
<a class="skip" href="#main">Skip to content</a>
${body}
</body>
</html>
`.value;
}

/** A signed-in page: the header, the Settings > Developer tabs, and the content. */
export function page(ctx: PageContext, tab: Tab | undefined, title: string, content: SafeHtml): string {
  const tabs: Array<[Tab, string, string]> = [
    ['keys', 'API keys', 'keys'], ['origins', 'Allowed origins', 'origins'], ['usage', 'Usage', 'usage'], ['failures', 'Failed requests', 'failures'],
    ['webhooks', 'Webhooks', 'webhooks'], ['activity', 'Activity', 'activity'],
  ];
  return document(title, html`
<header class="top">
  <div class="wrap top-row">
    <a class="brand" href="/">Listings API</a>
    <span class="account-name">${ctx.accountName}</span>
    <form class="sign-out" method="post" action="/sign-out">
      ${csrfField(ctx.csrf)}
      <span class="muted">${ctx.email}</span>
      <button type="submit" class="link">Sign out</button>
    </form>
  </div>
</header>
<div class="wrap">
  <p class="crumbs">Settings <span aria-hidden="true">›</span> Developer</p>
  <nav class="tabs" aria-label="Developer settings">
    ${tabs.map(([id, label, path]) => html`<a href="${developerPath(ctx.accountId, path)}"${id === tab ? html` aria-current="page"` : ''}>${label}</a>`)}
  </nav>
  <main id="main" tabindex="-1">
${content}
  </main>
</div>`);
}

export function notice(text: SafeHtml | string | undefined): SafeHtml | string {
  return text === undefined ? '' : html`<div class="alert success" role="status">${text}</div>`;
}

export function fieldError(id: string, error: string | undefined): SafeHtml | string {
  return error === undefined ? '' : html`<p class="field-error" id="${id}">${error}</p>`;
}

/** aria-describedby and aria-invalid for a field, given its hint and error ids. */
export function described(hintId: string | undefined, errorId: string, error: string | undefined): SafeHtml {
  const ids = [hintId, error === undefined ? undefined : errorId].filter((x) => x !== undefined).join(' ');
  return html`${ids === '' ? '' : html` aria-describedby="${ids}"`}${error === undefined ? '' : html` aria-invalid="true"`}`;
}

export function countryOptions(countries: readonly Country[], selected: string): SafeHtml[] {
  return countries.map((c) => html`<option value="${c}"${c === selected ? html` selected` : ''}>${countryName(c)} (${c})</option>`);
}

/** A page that says what went wrong; signed in, with the dashboard's frame. */
export function errorPage(status: number, title: string, message: string, ctx?: PageContext): string {
  const content = html`
<h1>${title}</h1>
<p>${message}</p>
<p><a class="button secondary" href="/">Go to the dashboard</a></p>`;
  if (ctx !== undefined) return page(ctx, undefined, title, content);
  return document(title, html`<main id="main" class="narrow" tabindex="-1" data-status="${status}">${content}</main>`, 'signed-out');
}
