import { keyDisplay } from '../../auth/key-format.js';
import type { Country } from '../../core/countries.js';
import type { ApiKeyRecord, AuditEntry } from '../../storage/index.js';
import { activityList } from '../activity/views.js';
import { FORM_FIELD } from '../forms.js';
import { html, type SafeHtml } from '../html.js';
import { countryName, countryOptions, csrfField, described, developerPath, exactly, fieldError, limitText, notice, page, when, type PageContext } from '../layout.js';


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

