import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { requireDeclaredSchema } from '../../src/dashboard/schemas.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { dev, DashboardClient, signedIn, text } from './helpers.js';

/**
 * Issue 42, item 3: the dashboard's routes declare their params, query and form bodies
 * (src/dashboard/schemas.ts). A request no page sends (a field twice) is answered with the
 * dashboard's own 400 page and changes nothing; the guard (signed in, CSRF, own account) answers
 * first, so a malformed request tells nobody more than any other.
 */
describe('dashboard request schemas (issue 42, item 3)', () => {
  let server: TestServer;
  let account: string;
  let member: DashboardClient;
  let snapshot: () => Promise<string>;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    account = await server.createAccount();
    ({ client: member } = await signedIn(server, account));
    await member.get(dev(account, 'origins'));
    snapshot = async () => JSON.stringify({
      origins: await server.service.store.origins.listForAccount(account),
      keys: await server.service.store.keys.listForAccount(account),
      audit: await server.service.store.audit.listForAccount(account, 100),
    });
  }

  /** A form body with `name` sent twice, and the member's CSRF token. */
  const twice = (fields: Record<string, string>, name: string, second: string) => {
    const form = new URLSearchParams({ _csrf: member.csrf!, ...fields });
    form.append(name, second);
    return form.toString();
  };

  it('a form field sent twice: the 400 page "Request not accepted", as HTML, and nothing changed', async (t) => {
    await world(t);
    const before = await snapshot();
    const body = twice({ country: 'sg', origin: 'https://www.example.com' }, 'origin', 'https://evil.example.com');
    const res = await member.request('POST', dev(account, 'origins'), { body });
    assert.equal(res.status, 400);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(text(res.body), /Request not accepted.*Nothing was changed/);
    assert.equal(await snapshot(), before);
    // The same form, sent once, is taken: the schema refused the shape, not the values.
    assert.equal((await member.post(dev(account, 'origins'), { country: 'sg', origin: 'https://www.example.com' })).status, 303);
    assert.notEqual(await snapshot(), before);
  });

  it('a query parameter sent twice: the 400 page', async (t) => {
    await world(t);
    for (const page of ['failures?code=unauthorized&code=rate_limited', 'usage?range=24h&range=7d', 'webhooks/secret?id=a&id=b', 'activity?before=x&before=y']) {
      const res = await member.get(dev(account, page));
      assert.equal(res.status, 400, page);
      assert.match(text(res.body), /Request not accepted/, page);
    }
  });

  it('the guard answers before the schema: signed out, another account, no CSRF token', async (t) => {
    await world(t);
    const stranger = new DashboardClient(server.dashboardPort!);
    const signedOut = await stranger.get(dev(account, 'usage?range=24h&range=7d'));
    assert.equal(signedOut.status, 303);
    assert.equal(signedOut.location, '/sign-in');
    const other = await server.createAccount();
    assert.equal((await member.get(dev(other, 'usage?range=24h&range=7d'))).status, 404);
    const before = await snapshot();
    const noToken = twice({ country: 'sg', origin: 'https://a.example.com' }, 'origin', 'https://b.example.com').replace(/_csrf=[^&]*&?/, '');
    assert.equal((await member.request('POST', dev(account, 'origins'), { body: noToken })).status, 403);
    assert.equal(await snapshot(), before);
  });

  it('every route declares its schema: a form without a body schema, or params without theirs, is refused at start-up', () => {
    assert.throws(() => requireDeclaredSchema({ method: 'POST', url: '/accounts/:accountId/x' }), /POST \/accounts\/:accountId\/x declares no body schema/);
    assert.throws(() => requireDeclaredSchema({ method: 'GET', url: '/keys/:keyId', schema: {} }), /declares no params schema/);
    assert.doesNotThrow(() => requireDeclaredSchema({ method: 'GET', url: '/sign-in' }));
    // The service started: every route of the dashboard passed this check.
    assert.ok(server.service.dashboard !== undefined);
  });
});
