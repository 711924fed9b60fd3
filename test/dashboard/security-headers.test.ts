import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { addMember, DashboardClient, dev, type PageResponse } from './helpers.js';

/**
 * Issue 40 item 9: every answer of the dashboard, each page, redirect, error and static file, on
 * a port of its own and on the API's port, carries a Content-Security-Policy with
 * frame-ancestors 'none' and X-Frame-Options: DENY (and scripts only from the dashboard itself).
 */
describe('dashboard: a Content-Security-Policy and frame protection on every answer (issue 40 item 9)', () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const server of servers) await server.close();
  });

  function assertProtected(res: PageResponse, what: string): void {
    const policy = res.headers['content-security-policy'];
    assert.equal(typeof policy, 'string', `${what} (${res.status}): a Content-Security-Policy`);
    const directives = new Map((policy as string).split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values.join(' ')]));
    assert.equal(directives.get('frame-ancestors'), "'none'", `${what} (${res.status}): frame-ancestors`);
    assert.equal(directives.get('default-src'), "'none'", `${what} (${res.status}): default-src`);
    assert.equal(directives.get('script-src'), "'self'", `${what} (${res.status}): script-src`);
    assert.equal(res.headers['x-frame-options'], 'DENY', `${what} (${res.status}): X-Frame-Options`);
  }

  /** Every kind of answer the dashboard gives, requested through `client`, checked. */
  async function everyAnswer(server: TestServer, client: () => DashboardClient): Promise<number> {
    const accountId = await server.createAccount();
    const other = await server.createAccount();
    const member = await addMember(server, accountId);
    const key = await server.createKey(accountId, 'sg', 'Website');
    await server.allowOrigin(accountId, 'https://shop.example.com', 'sg');
    const hook = await addWebhook(server.service.store, server.clock.now, { accountId, country: 'sg', url: 'http://127.0.0.1:9/hook' });
    const checked: string[] = [];
    const check = (res: PageResponse, what: string) => {
      assertProtected(res, what);
      checked.push(`${what} ${res.status}`);
    };

    const visitor = client();
    check(await visitor.get('/'), 'the root (redirect)');
    check(await visitor.get('/sign-in'), 'sign-in');
    check(await visitor.get(dev(accountId, 'keys')), 'a page, signed out (redirect)');
    check(await visitor.post('/sign-in', { email: member.email, password: 'not the password' }), 'a failed sign-in');
    check(await visitor.post('/sign-in', { email: member.email, password: member.password, _csrf: 'forged' }), 'a forged sign-in');
    check(await visitor.get('/static/dashboard.css'), 'the stylesheet');
    check(await visitor.get('/static/copy.js'), 'the script');
    check(await visitor.get('/static/nothing.js'), 'a missing static file');
    check(await visitor.get('/no-such-page'), 'an unknown page');
    check(await visitor.request('POST', '/sign-in', { body: '{}', headers: { 'content-type': 'application/json' } }), 'a JSON body');

    const signed = client();
    check(await signed.signIn(member.email, member.password), 'sign-in');
    const pages = [
      '', 'keys', `keys/${key.id}/revoke`, 'origins', `origins/remove?country=sg&origin=${encodeURIComponent('https://shop.example.com')}`,
      'usage', 'failures', 'requests?id=req_unknown', 'webhooks', `webhooks/secret?id=${hook.id}`, `webhooks/rotate?id=${hook.id}`,
      `webhooks/remove?id=${hook.id}`, 'activity',
    ];
    for (const page of pages) check(await signed.get(dev(accountId, page)), page === '' ? 'Settings > Developer' : page);
    check(await signed.get(dev(other, 'keys')), 'another account\'s page');
    check(await signed.createKey(accountId, { label: 'Another', country: 'sg' }), 'a new key');
    check(await signed.post(dev(accountId, 'keys'), { label: 'x', country: 'sg', _form: 'edited' }), 'a stale form');
    check(await signed.post(dev(accountId, `keys/${key.id}/label`), { label: '' }), 'a form error');
    check(await signed.post('/sign-out', {}), 'sign-out');
    return checked.length;
  }

  it('on a port of its own (DASHBOARD_PORT)', async () => {
    const server = await startTestServer();
    servers.push(server);
    assert.ok(await everyAnswer(server, () => new DashboardClient(server.dashboardPort!)) > 25);
  });

  it('on the API\'s port, for DASHBOARD_HOST', async () => {
    const server = await startTestServer({ DASHBOARD_PORT: '' });
    servers.push(server);
    assert.ok(await everyAnswer(server, () => new DashboardClient(server.port, `dashboard.localhost:${server.port}`)) > 25);
  });
});
