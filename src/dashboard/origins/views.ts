import type { Country } from '../../core/countries.js';
import type { AllowedOrigin } from '../../storage/index.js';
import { html } from '../html.js';
import { countryName, countryOptions, csrfField, described, developerPath, fieldError, notice, page, when, type PageContext } from '../layout.js';


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

