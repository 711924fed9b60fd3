import { html } from '../html.js';
import { csrfField, document, notice } from '../layout.js';

/** The sign-in page, before a session: no tabs, the member's email kept after a failed attempt. */

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

