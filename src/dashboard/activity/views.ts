import type { AuditEntry } from '../../storage/index.js';
import { html, type SafeHtml } from '../html.js';
import { countryName, developerPath, page, when, type PageContext } from '../layout.js';


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
    case 'webhook.replayed':
      return html`asked for the messages of webhook <code>${entry.webhook_url}</code> again`;
    case 'webhook.filters_changed':
      return html`changed what webhook <code>${entry.webhook_url}</code> is told of`;
    default:
      return html`${entry.action}`;
  }
}

export function activityList(entries: AuditEntry[], empty: string): SafeHtml {
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

