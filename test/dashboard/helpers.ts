import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { hashPassword, normalizeEmail } from '../../src/dashboard/passwords.js';
import type { TestServer } from '../support/server.js';
import { dom } from '../support/html.js';

/** A response from the dashboard. */
export interface PageResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  location: string | undefined;
  setCookies: string[];
}

/**
 * A browser-like HTTP client for the dashboard: keeps cookies, reads the CSRF token from the last
 * page it fetched, and posts forms. It talks to the real listening server, nothing is mocked.
 */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  /** The `_csrf` of the last page that had one. */
  csrf: string | undefined;
  /** The single-use token (`_form`) of the create-key form on the last page fetched, if it had that form. */
  formToken: string | undefined;

  /** `from`: the address to connect from (any of 127.0.0.0/8 on Linux), to be another peer, as a proxy is (TRUST_PROXY tests). */
  constructor(readonly port: number, readonly host = `localhost:${port}`, readonly from?: string) {}

  request(method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}): Promise<PageResponse> {
    path = path.split('#', 1)[0]!; // browsers never send the fragment
    const headers: Record<string, string> = { host: this.host, ...options.headers };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(options.body));
    }
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: this.port, path, method, headers, agent: false, localAddress: this.from }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const setCookies = res.headers['set-cookie'] ?? [];
          for (const line of setCookies) {
            const [pair] = line.split(';', 1);
            const eq = pair!.indexOf('=');
            const name = pair!.slice(0, eq);
            const value = pair!.slice(eq + 1);
            if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0/i.test(line)) this.cookies.delete(name);
            else this.cookies.set(name, value);
          }
          const body = Buffer.concat(chunks).toString('utf8');
          const token = /name="_csrf" value="([^"]+)"/.exec(body)?.[1];
          if (token !== undefined) this.csrf = token;
          // A property of the page, as in a browser: a page without the create form leaves none.
          this.formToken = /name="_form" value="([^"]+)"/.exec(body)?.[1];
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, location: res.headers.location, setCookies });
        });
      });
      req.on('error', reject);
      if (options.body !== undefined) req.write(options.body);
      req.end();
    });
  }

  get(path: string, headers?: Record<string, string>): Promise<PageResponse> {
    return this.request('GET', path, { headers });
  }

  /** Posts a form; adds the current CSRF token unless `_csrf` is given (null: send none). */
  /** A form post; a list is a field sent once per value (checkboxes of one name). */
  post(path: string, fields: Record<string, string | string[] | null>, headers?: Record<string, string>): Promise<PageResponse> {
    const form = new URLSearchParams();
    if (!('_csrf' in fields) && this.csrf !== undefined) form.set('_csrf', this.csrf);
    for (const [k, v] of Object.entries(fields)) for (const value of v === null ? [] : [v].flat()) form.append(k, value);
    return this.request('POST', path, { body: form.toString(), headers });
  }

  /**
   * Creates a key as a member does: opens the keys page and submits its create form, with the
   * form's single-use token. Extra fields override (e.g. `_form: null` sends none).
   */
  async createKey(accountId: string, fields: Record<string, string | null>): Promise<PageResponse> {
    await this.get(dev(accountId, 'keys'));
    return this.post(dev(accountId, 'keys'), { _form: this.formToken ?? null, ...fields });
  }

  async signIn(email: string, password: string): Promise<PageResponse> {
    await this.get('/sign-in');
    return this.post('/sign-in', { email, password });
  }
}

/** The Fetch Metadata a browser sends with a page's cross-origin fetch (what tells it from curl setting Origin). */
export const FROM_A_PAGE: Readonly<Record<string, string>> = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' };

/** The path of an account's Settings > Developer page. */
export const dev = (accountId: string, page = '') => `/accounts/${accountId}/settings/developer${page === '' ? '' : `/${page}`}`;

export const PASSWORD = 'correct horse battery staple';

/**
 * Each password's scrypt hash, made once per process (about 65 ms each): every member of a test
 * world signs in with a real hash of its password, and the worlds do not pay for one each.
 */
const hashes = new Map<string, Promise<string>>();
const hashOf = (password: string) => hashes.get(password) ?? hashes.set(password, hashPassword(password)).get(password)!;

/** Adds a dashboard member to an account, as `user create` does; returns its id and email. */
export async function addMember(server: TestServer, accountId: string, email = `member-${randomUUID().slice(0, 8)}@example.com`, password = PASSWORD) {
  const id = randomUUID();
  email = normalizeEmail(email); // as `user create` stores it
  await server.service.store.users.create({
    id, account_id: accountId, email, password_hash: await hashOf(password),
    created_at: new Date(server.clock.now()).toISOString(), last_sign_in_at: null,
  });
  return { id, email, password };
}

/** A client signed in as a new member of the account. */
export async function signedIn(server: TestServer, accountId: string): Promise<{ client: DashboardClient; email: string; userId: string }> {
  const member = await addMember(server, accountId);
  const client = new DashboardClient(server.dashboardPort!);
  const res = await client.signIn(member.email, member.password);
  assert.equal(res.status, 303, res.body);
  assert.equal(res.location, dev(accountId, 'keys'));
  await client.get(dev(accountId, 'keys')); // picks up the session's CSRF token
  return { client, email: member.email, userId: member.id };
}

/** The text of a page without tags, whitespace collapsed, entities of the escaper decoded. */
export function text(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&#96;/g, '`').replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The full key shown on the "Copy your new key" page. */
export function revealedKey(html: string): string {
  const key = dom(html).querySelector('code#new-key')?.text;
  assert.ok(key, 'the page shows the new key');
  return key;
}

/** The entries of an activity list (the Activity page, the keys page's latest): each one's action and its words. */
export function activityItems(html: string): Array<[action: string, words: string]> {
  return dom(html).querySelectorAll('li[data-action]').map((li) => [li.getAttribute('data-action')!, text(li.innerHTML)]);
}

/** Cookie attributes of a Set-Cookie line by cookie name. */
export function setCookie(res: PageResponse, name: string): string | undefined {
  return res.setCookies.find((line) => line.startsWith(`${name}=`));
}
