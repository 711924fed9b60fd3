import type { Country } from '../core/countries.js';
import type { AllowedOrigin, ApiKeyRecord, AuditEntry } from '../storage/index.js';
import { keyDisplay } from '../auth/key-format.js';
import { CSRF_FIELD } from './csrf.js';
import { FORM_FIELD } from './forms.js';
import { html, type SafeHtml } from './html.js';

/**
 * The dashboard's pages: server-rendered HTML from small template functions (html.ts escapes
 * everything), one stylesheet and a few lines of script for the copy buttons. Every page works
 * without script and with the keyboard alone.
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

function document(title: string, body: SafeHtml, bodyClass = ''): string {
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

// ---------------------------------------------------------------- sign-in

export function signInPage(opts: { csrf: string; email?: string; error?: string; notice?: string }): string {
  // After a failed attempt the email is kept: the cursor goes where the member types again, the password.
  const retry = opts.error !== undefined && (opts.email ?? '') !== '';
  return document('Sign in', html`
<main id="main" class="narrow" tabindex="-1">
  <h1>Sign in</h1>
  <p class="lead">Listings API developer settings: API keys and allowed browser origins for your organisation.</p>
  ${notice(opts.notice)}
  ${opts.error === undefined ? '' : html`<div class="alert error" role="alert" id="sign-in-error">${opts.error}</div>`}
  <form method="post" action="/sign-in" class="stack">
    ${csrfField(opts.csrf)}
    <div class="field">
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${opts.email ?? ''}"${retry ? '' : html` autofocus`}>
    </div>
    <div class="field">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256"${retry ? html` autofocus` : ''}>
    </div>
    <button type="submit" class="primary">Sign in</button>
  </form>
  <p class="hint">No account yet? An operator adds members with <code>listings-api user create --account ID --email EMAIL</code>.</p>
</main>`, 'signed-out');
}

// ---------------------------------------------------------------- keys

export interface CreateKeyForm {
  label: string;
  country: string;
  errors: { label?: string; country?: string };
}

export interface RelabelForm {
  keyId: string;
  label: string;
  error: string;
}

export function keysPage(ctx: PageContext, opts: {
  keys: ApiKeyRecord[];
  countries: readonly Country[];
  create?: CreateKeyForm;
  relabel?: RelabelForm;
  recent: AuditEntry[];
  notice?: string;
  /** The create form's single-use token (forms.ts). */
  formToken: string;
  /** The deployment's requests per minute, for keys without a limit of their own. */
  defaultLimit: number;
  /** MAX_KEYS_PER_ACCOUNT_COUNTRY: active keys an account may have in one country. */
  maxKeysPerCountry: number;
}): string {
  const create = opts.create ?? { label: '', country: opts.countries[0] ?? '', errors: {} };
  const keysPath = developerPath(ctx.accountId, 'keys');
  // Active keys first, then revoked ones; newest first within each.
  const keys = [...opts.keys].sort((a, b) =>
    (a.revoked_at === null ? 0 : 1) - (b.revoked_at === null ? 0 : 1) || b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id));
  const errorSummary = create.errors.label ?? create.errors.country ?? opts.relabel?.error;
  return page(ctx, 'keys', 'API keys', html`
<h1>API keys</h1>
<p class="lead">A key lets your website or server read your active listings through the Listings API. Each key sees one country's listings; give each app its own key.</p>
${notice(opts.notice)}
${errorSummary === undefined ? '' : html`<div class="alert error" role="alert">Nothing was changed: ${errorSummary}</div>`}

<section class="card" aria-labelledby="create-heading">
  <h2 id="create-heading">Create a key</h2>
  <form method="post" action="${keysPath}" class="row-form" novalidate>
    ${csrfField(ctx.csrf)}
    <input type="hidden" name="${FORM_FIELD}" value="${opts.formToken}">
    <div class="field grow">
      <label for="label">Label</label>
      <input id="label" name="label" required maxlength="200" value="${create.label}" placeholder="e.g. Website (production)"${described('label-hint', 'label-error', create.errors.label)}>
      <p class="hint" id="label-hint">Say where it is used, so you can tell keys apart later.</p>
      ${fieldError('label-error', create.errors.label)}
    </div>
    <div class="field">
      <label for="country">Country</label>
      <select id="country" name="country"${described('country-hint', 'country-error', create.errors.country)}>${countryOptions(opts.countries, create.country)}</select>
      <p class="hint" id="country-hint">At most ${opts.maxKeysPerCountry} active keys per country.</p>
      ${fieldError('country-error', create.errors.country)}
    </div>
    <div class="field actions-field"><button type="submit" class="primary">Create key</button></div>
  </form>
</section>

<section aria-labelledby="keys-heading">
  <h2 id="keys-heading">Your keys</h2>
  ${keys.length === 0
    ? html`<div class="empty"><p><strong>No keys yet.</strong></p><p>Create your first key above: give it a label such as "Website (production)" and pick the country of the listings it should read. You will see the full key once, with a curl line to try it.</p></div>`
    : html`<div class="table-card"><table class="keys">
    <thead><tr><th scope="col">Label</th><th scope="col">Country</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col">Limit</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
    ${keys.map((key) => keyRow(ctx, key, opts.relabel?.keyId === key.id ? opts.relabel : undefined, opts.defaultLimit))}
    </tbody>
  </table></div>`}
</section>

<section aria-labelledby="recent-heading">
  <h2 id="recent-heading">Recent activity</h2>
  ${activityList(opts.recent, 'Nothing yet: key and origin changes made here are listed, with who made them and when.')}
  <p><a href="${developerPath(ctx.accountId, 'activity')}">All activity</a></p>
</section>`);
}

function keyRow(ctx: PageContext, key: ApiKeyRecord, relabel: RelabelForm | undefined, defaultLimit: number): SafeHtml {
  const revoked = key.revoked_at !== null;
  const base = `${developerPath(ctx.accountId, 'keys')}/${key.id}`;
  const inputId = `label-${key.id}`;
  return html`<tr id="key-${key.id}" class="${revoked ? 'revoked' : ''}">
      <th scope="row" class="label-cell">${key.label}</th>
      <td data-label="Country">${countryName(key.country)} <span class="cc">${key.country}</span></td>
      <td data-label="Key"><code class="key-display">${keyDisplay(key)}</code></td>
      <td data-label="Created">${when(key.created_at)}</td>
      <td data-label="Last used">${when(key.last_used_at)}</td>
      <td data-label="Status">${revoked ? html`<span class="badge revoked">Revoked</span> ${when(key.revoked_at)}` : html`<span class="badge active">Active</span>`}</td>
      <td data-label="Limit">${limitText(key, defaultLimit)}
        <a class="usage-link" href="${developerPath(ctx.accountId, 'usage')}?key=${key.id}#chart-heading">Usage<span class="visually-hidden"> of key ${key.label}</span></a></td>
      <td class="actions">${revoked ? '' : html`
        <details class="rename"${relabel === undefined ? '' : html` open`}>
          <summary>Rename<span class="visually-hidden"> key ${key.label}</span></summary>
          <form method="post" action="${base}/label" class="mini-form" novalidate>
            ${csrfField(ctx.csrf)}
            <label for="${inputId}">New label</label>
            <input id="${inputId}" name="label" required maxlength="200" value="${relabel?.label ?? key.label}"${described(undefined, `${inputId}-error`, relabel?.error)}>
            ${fieldError(`${inputId}-error`, relabel?.error)}
            <button type="submit" class="secondary">Save label</button>
          </form>
        </details>
        <a class="button danger-outline" href="${base}/revoke">Revoke<span class="visually-hidden"> key ${key.label}</span></a>`}
      </td>
    </tr>`;
}

/**
 * The one page that shows a new key. The Copy button is focused on arrival (`autofocus`, and
 * copy.js, which shows it); without script it stays hidden and the key is selectable text.
 */
export function keyCreatedPage(ctx: PageContext, opts: { key: ApiKeyRecord; fullKey: string; curl: string }): string {
  return page(ctx, 'keys', 'Copy your new key', html`
<h1>Copy your new key now</h1>
<div class="alert warning" role="alert">
  <strong>This is the only time the key is shown.</strong> Only a hash of it is kept, so it cannot be shown again or recovered.
  If you lose it, revoke it and create a new one.
</div>
<p>Key <strong>${opts.key.label}</strong> for ${countryName(opts.key.country)} (${opts.key.country}):</p>
<div class="secret">
  <code id="new-key">${opts.fullKey}</code>
  <button type="button" class="primary" data-copy="new-key" hidden autofocus>Copy key</button>
</div>
<p class="hint">Keep it server-side, in a secret store or an environment variable, and never commit it. If it must be used in a browser, register the page's origin under <a href="${developerPath(ctx.accountId, 'origins')}">Allowed origins</a>.</p>
<h2>Try it</h2>
<div class="secret">
  <pre><code id="curl-line">${opts.curl}</code></pre>
  <button type="button" class="secondary" data-copy="curl-line" hidden>Copy curl line</button>
</div>
<p class="copy-status" role="status" aria-live="polite"></p>
<p><a class="button primary" href="${developerPath(ctx.accountId, 'keys')}">I have stored it: back to keys</a></p>`);
}

/**
 * The answer to a create-key form sent a second time (a reload of the new key's page): nothing is
 * created, and the key the form made is named, never shown (D20). `key` is undefined while the
 * first submission is still under way.
 */
export function formUsedPage(ctx: PageContext, key: ApiKeyRecord | undefined): string {
  const keysPath = developerPath(ctx.accountId, 'keys');
  return page(ctx, 'keys', 'Form already used', html`
<h1>This form was already used</h1>
<div class="alert warning" role="alert">
  ${key === undefined
    ? 'This form was already used to create a key.'
    : html`This form was already used to create key <code>${keyDisplay(key)}</code> "${key.label}".`}
  A key is shown only once; if you did not copy it, revoke it and create another.
</div>
<p>No new key was created.</p>
<div class="button-row">
  <a class="button primary" href="${keysPath}">Back to keys</a>
  ${key !== undefined && key.revoked_at === null
    ? html`<a class="button danger-outline" href="${keysPath}/${key.id}/revoke">Revoke<span class="visually-hidden"> key ${key.label}</span></a>`
    : ''}
</div>`);
}

export function revokePage(ctx: PageContext, key: ApiKeyRecord, opts: { now: number; limitPerMinute: number }): string {
  const keysPath = developerPath(ctx.accountId, 'keys');
  if (key.revoked_at !== null) {
    return page(ctx, 'keys', 'Key revoked', html`
<h1>Key "${key.label}" is revoked</h1>
<p>${keyDisplay(key)} was revoked ${when(key.revoked_at)}. Nothing more to do.</p>
<p><a class="button secondary" href="${keysPath}">Back to keys</a></p>`);
  }
  return page(ctx, 'keys', 'Revoke key', html`
<h1>Revoke key "${key.label}"?</h1>
<dl class="facts">
  <dt>Key</dt><dd><code>${keyDisplay(key)}</code></dd>
  <dt>Country</dt><dd>${countryName(key.country)} <span class="cc">${key.country}</span></dd>
  <dt>Created</dt><dd>${when(key.created_at)}</dd>
  <dt>Last used</dt><dd id="last-used">${exactly(key.last_used_at, opts.now)}</dd>
  <dt>Limit</dt><dd>${opts.limitPerMinute.toLocaleString('en-US')} requests a minute</dd>
</dl>
<p><a href="${developerPath(ctx.accountId, 'usage')}?key=${key.id}#chart-heading">See this key's usage</a> before you revoke it: a key still in use breaks what uses it.</p>
<div class="alert warning" role="note">
  From the moment you confirm, every request with this key is refused with <code>401 unauthorized</code>.
  This cannot be undone: to restore access, create a new key and put it where this one was used.
</div>
<form method="post" action="${keysPath}/${key.id}/revoke" class="button-row">
  ${csrfField(ctx.csrf)}
  <button type="submit" class="danger">Revoke key</button>
  <a class="button secondary" href="${keysPath}">Cancel</a>
</form>`);
}

// ---------------------------------------------------------------- origins

export interface OriginForm {
  /** The country section the form belongs to, or `other` for the form with a country list. */
  section: string;
  country: string;
  origin: string;
  error: string;
}

export function originsPage(ctx: PageContext, opts: {
  origins: AllowedOrigin[];
  /** Countries of the account's active keys. */
  keyCountries: ReadonlySet<string>;
  countries: readonly Country[];
  form?: OriginForm;
  notice?: string;
}): string {
  const path = developerPath(ctx.accountId, 'origins');
  const byCountry = new Map<string, AllowedOrigin[]>();
  for (const o of opts.origins) byCountry.set(o.country, [...(byCountry.get(o.country) ?? []), o]);
  // A section for every country the account has a key or an origin in, in the deployment's order.
  const sections = opts.countries.filter((c) => opts.keyCountries.has(c) || byCountry.has(c));
  const others = opts.countries.filter((c) => !sections.includes(c));
  const formFor = (section: string) => (opts.form?.section === section ? opts.form : undefined);

  const addForm = (section: string, country: Country | undefined) => {
    const form = formFor(section);
    const id = `origin-${section}`;
    return html`<form method="post" action="${path}" class="row-form" novalidate>
      ${csrfField(ctx.csrf)}
      ${country === undefined
        ? html`<div class="field"><label for="country-other">Country</label><select id="country-other" name="country">${countryOptions(others, form?.country ?? '')}</select></div>`
        : html`<input type="hidden" name="country" value="${country}">`}
      <div class="field grow">
        <label for="${id}">${country === undefined ? 'Origin' : html`Add an origin for ${countryName(country)}`}</label>
        <input id="${id}" name="origin" inputmode="url" autocomplete="off" spellcheck="false" required maxlength="300" placeholder="https://www.example.com" value="${form?.origin ?? ''}"${described(`${id}-hint`, `${id}-error`, form?.error)}>
        ${fieldError(`${id}-error`, form?.error)}
        <p class="hint" id="${id}-hint">Scheme, host and optional port, e.g. <code>https://www.example.com</code> or <code>http://localhost:5173</code>. No path; https except on localhost.</p>
      </div>
      <div class="field actions-field"><button type="submit" class="primary">Add origin</button></div>
    </form>`;
  };

  return page(ctx, 'origins', 'Allowed origins', html`
<h1>Allowed origins</h1>
<p class="lead">Code running in a web page sends the page's origin with each API call. The API answers it only if that origin is listed here for the key's country.</p>
<div class="callout">
  <p><strong>401 or 403?</strong> A <code>401 unauthorized</code> means the key itself is not accepted (missing, mistyped, unknown or revoked); a <code>403 origin_not_allowed</code> means the key is fine but the page's origin is not on this list.</p>
  <p><strong>Recommended:</strong> keep the key on your own server and call the API from there (a small proxy for your pages). Server-to-server calls need no origin here, and a key used in browser code can be read by anyone who opens the page.</p>
</div>
${notice(opts.notice)}
${sections.length === 0
  ? html`<div class="empty"><p><strong>No origins yet, and no keys.</strong></p><p>Server-to-server calls need no origin. To call the API from a browser, first <a href="${developerPath(ctx.accountId, 'keys')}">create a key</a>, then add the origin of the page that uses it (for example <code>https://www.example.com</code>).</p></div>`
  : sections.map((country) => {
      const list = byCountry.get(country) ?? [];
      return html`
<section class="card" id="country-${country}" aria-labelledby="country-${country}-heading">
  <h2 id="country-${country}-heading">${countryName(country)} <span class="cc">${country}</span></h2>
  ${list.length === 0
    ? html`<p class="empty-line">No origins for ${countryName(country)}: browsers cannot use ${country} keys yet (server-to-server calls work). Add the origin of the page that calls the API.</p>`
    : html`<ul class="origins">${list.map((o) => html`
    <li><code>${o.origin}</code> <span class="muted">added ${when(o.created_at)}</span>
      <a class="button danger-outline small" href="${removeOriginPath(ctx.accountId, o)}">Remove<span class="visually-hidden"> ${o.origin} for ${countryName(country)}</span></a>
    </li>`)}</ul>`}
  ${addForm(country, country)}
</section>`;
    })}
${others.length === 0 ? '' : html`
<section class="card" aria-labelledby="other-heading">
  <h2 id="other-heading">${sections.length === 0 ? 'Add an origin' : 'Another country'}</h2>
  ${addForm('other', undefined)}
</section>`}`);
}

/** The confirmation page of removing an origin. */
function removeOriginPath(accountId: string, origin: Pick<AllowedOrigin, 'country' | 'origin'>): string {
  return `${developerPath(accountId, 'origins')}/remove?${new URLSearchParams({ country: origin.country, origin: origin.origin })}`;
}

/** Removing an origin breaks the pages on it at once, so it is confirmed first, like revoking a key. */
export function removeOriginPage(ctx: PageContext, origin: AllowedOrigin, activeKeys: number): string {
  const path = developerPath(ctx.accountId, 'origins');
  const name = countryName(origin.country);
  return page(ctx, 'origins', 'Remove origin', html`
<h1>Remove <code>${origin.origin}</code> for ${name}?</h1>
<dl class="facts">
  <dt>Origin</dt><dd><code>${origin.origin}</code></dd>
  <dt>Country</dt><dd>${name} <span class="cc">${origin.country}</span></dd>
  <dt>Added</dt><dd>${when(origin.created_at)}</dd>
  <dt>Active keys</dt><dd>${activeKeys === 0 ? html`<span class="muted">None for ${name}</span>` : `${activeKeys} for ${name}`}</dd>
</dl>
<div class="alert warning" role="note">
  From the moment you confirm, browser calls from pages on this origin with ${origin.country} keys get
  <code>403 origin_not_allowed</code>, including pages that are open right now. Server-to-server calls are not affected.
  To allow it again, add it again.
</div>
<form method="post" action="${path}/remove" class="button-row">
  ${csrfField(ctx.csrf)}
  <input type="hidden" name="country" value="${origin.country}">
  <input type="hidden" name="origin" value="${origin.origin}">
  <button type="submit" class="danger">Remove origin</button>
  <a class="button secondary" href="${path}#country-${origin.country}">Cancel</a>
</form>`);
}

// ---------------------------------------------------------------- activity

function describe(entry: AuditEntry): SafeHtml {
  const key = html`<code>${entry.key_display}</code>`;
  switch (entry.action) {
    case 'key.created':
      return html`created key <strong>${entry.key_label}</strong> ${key} for ${countryName(entry.country ?? '')}`;
    case 'key.relabelled':
      return html`renamed key ${key} from <strong>${entry.previous_label}</strong> to <strong>${entry.key_label}</strong>`;
    case 'key.revoked':
      return html`revoked key <strong>${entry.key_label}</strong> ${key}`;
    case 'key.limit_changed':
      return html`set the limit of key <strong>${entry.key_label}</strong> ${key} to ${entry.rate_limit_per_minute ?? 'the default'} requests per minute`;
    case 'origin.added':
      return html`allowed origin <code>${entry.origin}</code> for ${countryName(entry.country ?? '')}`;
    case 'origin.removed':
      return html`removed origin <code>${entry.origin}</code> for ${countryName(entry.country ?? '')}`;
    case 'webhook.added':
      return html`added webhook <code>${entry.webhook_url}</code> for ${countryName(entry.country ?? '')}`;
    case 'webhook.removed':
      return html`removed webhook <code>${entry.webhook_url}</code> for ${countryName(entry.country ?? '')}`;
    case 'webhook.enabled':
      return html`enabled webhook <code>${entry.webhook_url}</code>`;
    case 'webhook.secret_rotated':
      return html`rotated the secret of webhook <code>${entry.webhook_url}</code>`;
    default:
      return html`${entry.action}`;
  }
}

function activityList(entries: AuditEntry[], empty: string): SafeHtml {
  if (entries.length === 0) return html`<p class="empty-line">${empty}</p>`;
  return html`<ol class="activity">${entries.map((e) => html`
    <li data-action="${e.action}">${when(e.at)} <span class="actor">${e.actor_email}</span> ${describe(e)}</li>`)}
  </ol>`;
}

/** `older`: the id to page back from when there are older entries; `paged`: this is not the newest page. */
export function activityPage(ctx: PageContext, entries: AuditEntry[], opts: { older?: string; paged: boolean }): string {
  const path = developerPath(ctx.accountId, 'activity');
  const pager = opts.older === undefined && !opts.paged ? '' : html`<nav class="pager" aria-label="Activity pages">
  ${opts.paged ? html`<a href="${path}">Newest entries</a>` : ''}
  ${opts.older === undefined ? html`<span class="muted">The first entry of your account.</span>` : html`<a href="${path}?before=${opts.older}" rel="next">Older entries</a>`}
</nav>`;
  return page(ctx, 'activity', 'Activity', html`
<h1>Activity</h1>
<p class="lead">Who created, renamed or revoked a key, and who allowed or removed an origin, newest first${opts.paged && entries[0] !== undefined ? html`, from ${when(entries[0].at)} back` : ''}.</p>
${activityList(entries, 'Nothing yet. Changes to keys and origins made here will be listed with who made them and when.')}
${pager}`);
}

// ---------------------------------------------------------------- errors

export function errorPage(status: number, title: string, message: string, ctx?: PageContext): string {
  const content = html`
<h1>${title}</h1>
<p>${message}</p>
<p><a class="button secondary" href="/">Go to the dashboard</a></p>`;
  if (ctx !== undefined) return page(ctx, undefined, title, content);
  return document(title, html`<main id="main" class="narrow" tabindex="-1" data-status="${status}">${content}</main>`, 'signed-out');
}
