import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { sql } from '#kysely';
import { generateKey } from '../../src/auth/key-format.js';
import { ABSOLUTE_MS, IDLE_MS } from '../../src/dashboard/sessions.js';
import { PER_ADDRESS, PER_EMAIL_AND_ADDRESS, WINDOW_MS } from '../../src/dashboard/throttle.js';
import { dom, only } from '../support/html.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { addMember, DashboardClient, dev, PASSWORD, setCookie, text } from './helpers.js';

describe('dashboard sign-in, sessions and sign-out', () => {
  let server: TestServer;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
  }

  const sessionCount = async () =>
    Number((await sql<{ n: number }>`select count(*) as n from dashboard_sessions`.execute(server.service.store.db)).rows[0]!.n);

  it('signed out, every page leads to the sign-in form (no account data)', async (t) => {
    await world(t);
    const client = new DashboardClient(server.dashboardPort!);
    for (const path of ['/', dev(accountId), dev(accountId, 'keys'), dev(accountId, 'origins'), dev(accountId, 'activity')]) {
      const res = await client.get(path);
      assert.equal(res.status, 303, path);
      assert.equal(res.location, '/sign-in', path);
    }
    const form = await client.get('/sign-in');
    assert.equal(form.status, 200);
    assert.match(form.headers['content-type'] as string, /^text\/html/);
    const email = only(dom(form.body), 'input#email');
    assert.deepEqual([email.getAttribute('name'), email.getAttribute('type')], ['email', 'email']);
    assert.match(only(dom(form.body), 'input[name=_csrf]').getAttribute('value')!, /^[A-Za-z0-9_-]{43}$/);
    const cookie = setCookie(form, 'dashboard_signin');
    assert.ok(cookie, 'a pre-session cookie for the sign-in form token');
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.doesNotMatch(cookie, /Secure/, 'plain http: no Secure attribute');
  });

  it('right email and password: a session cookie (HttpOnly, SameSite) and the keys page; only the session id hash is stored', async (t) => {
    await world(t);
    const member = await addMember(server, accountId, 'Ada@Example.com');
    const client = new DashboardClient(server.dashboardPort!);
    const res = await client.signIn('  ada@EXAMPLE.com ', member.password);
    assert.equal(res.status, 303);
    assert.equal(res.location, dev(accountId, 'keys'));
    const cookie = setCookie(res, 'dashboard_session');
    assert.ok(cookie);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\//);
    const sessionId = client.cookies.get('dashboard_session')!;
    assert.match(sessionId, /^[A-Za-z0-9_-]{43}$/);

    const rows = await server.service.store.db.selectFrom('dashboard_sessions').selectAll().execute();
    assert.ok(rows.some((r) => r.id_hash === createHash('sha256').update(sessionId).digest('hex')), 'the SHA-256 of the id is stored');
    assert.ok(!JSON.stringify(rows).includes(sessionId), 'the raw session id is not stored');

    const page = await client.get(dev(accountId, 'keys'));
    assert.equal(page.status, 200);
    assert.match(text(page.body), /ada@example\.com/);
    const user = await server.service.store.users.findByEmail('ada@example.com');
    assert.equal(user?.last_sign_in_at, new Date(server.clock.now()).toISOString());
  });

  it('a wrong password and an unknown email get the same 401 answer, and no session', async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const before = await sessionCount();
    const wrong = await new DashboardClient(server.dashboardPort!).signIn(member.email, 'not the password at all');
    const unknown = await new DashboardClient(server.dashboardPort!).signIn('nobody@example.com', PASSWORD);
    for (const res of [wrong, unknown]) {
      assert.equal(res.status, 401);
      assert.match(text(res.body), /That email and password do not match a member/);
      assert.equal(setCookie(res, 'dashboard_session'), undefined);
      assert.doesNotMatch(res.body, /not the password at all|correct horse/, 'the password is not echoed');
      // The email is kept and the focus goes to the password, where the member types again.
      const form = dom(res.body);
      assert.equal(only(form, '#password').getAttribute('autofocus'), '');
      assert.equal(only(form, '#email').hasAttribute('autofocus'), false);
    }
    assert.equal(await sessionCount(), before);
  });

  it('CSRF: a sign-in without the form token, with a wrong one, or from another site is 403 and signs no one in', async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const before = await sessionCount();
    const client = new DashboardClient(server.dashboardPort!);
    await client.get('/sign-in');
    const attempts = [
      await client.post('/sign-in', { _csrf: null, email: member.email, password: member.password }),
      await client.post('/sign-in', { _csrf: 'x'.repeat(43), email: member.email, password: member.password }),
      await client.post('/sign-in', { email: member.email, password: member.password }, { origin: 'https://evil.example' }),
      await client.post('/sign-in', { email: member.email, password: member.password }, { 'sec-fetch-site': 'cross-site' }),
    ];
    // A token without its cookie (another browser's form) fails too.
    const stranger = new DashboardClient(server.dashboardPort!);
    stranger.csrf = client.csrf;
    attempts.push(await stranger.post('/sign-in', { email: member.email, password: member.password }));
    for (const res of attempts) {
      assert.equal(res.status, 403, res.body.slice(0, 200));
      assert.equal(setCookie(res, 'dashboard_session'), undefined);
      assert.match(text(res.body), /Nothing was changed/);
    }
    assert.equal(await sessionCount(), before);
    // The same browser, same-origin, with its token: signed in.
    assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, { origin: `http://localhost:${server.dashboardPort}` })).status, 303);
  });

  it(`throttles failed sign-ins: after ${PER_EMAIL_AND_ADDRESS} failures for an email from an address, even the right password from it is refused (429, Retry-After) until the window passes`, async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const client = new DashboardClient(server.dashboardPort!);
    for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.equal((await client.signIn(member.email, `wrong password ${i}`)).status, 401);
    const blocked = await client.signIn(member.email, member.password);
    assert.equal(blocked.status, 429);
    assert.match(text(blocked.body), /Too many failed sign-in attempts\. Try again in 15 minutes/);
    assert.equal(Number(blocked.headers['retry-after']), WINDOW_MS / 1000);
    assert.equal(setCookie(blocked, 'dashboard_session'), undefined);
    // Another email from the same address is not locked by this one.
    const other = await addMember(server, accountId);
    assert.equal((await new DashboardClient(server.dashboardPort!).signIn(other.email, other.password)).status, 303);

    server.clock.advance(WINDOW_MS - 1000);
    assert.equal((await client.signIn(member.email, member.password)).status, 429, 'still inside the window');
    server.clock.advance(1000);
    const ok = await client.signIn(member.email, member.password);
    assert.equal(ok.status, 303, 'the oldest failure left the window');
    // Success cleared the failures: a new mistake does not lock at once.
    const fresh = new DashboardClient(server.dashboardPort!);
    assert.equal((await fresh.signIn(member.email, 'wrong again')).status, 401);
    assert.equal((await fresh.signIn(member.email, member.password)).status, 303);
  });

  it(`throttles by client address too: ${PER_ADDRESS} failures from one address, whatever the emails, block it`, async (t) => {
    await world(t);
    // A separate server, so that this address's failures do not disturb the other tests.
    const own = await startTestServer({ TRUST_PROXY: '1' });
    try {
      const account = await own.createAccount();
      const member = await addMember(own, account);
      const client = new DashboardClient(own.dashboardPort!);
      const from = { 'x-forwarded-for': '203.0.113.7' };
      await client.get('/sign-in');
      for (let i = 0; i < PER_ADDRESS; i++) {
        assert.equal((await client.post('/sign-in', { email: `guess${i}@example.com`, password: 'guess guess guess' }, from)).status, 401);
      }
      assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, from)).status, 429);
      // Another address is not affected.
      assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, { 'x-forwarded-for': '198.51.100.1' })).status, 303);
    } finally {
      await own.close();
    }
  });

  it(`issue 29 item 3: TRUST_PROXY=1 counts the address the proxy appended, not the client's own X-Forwarded-For entries (${PER_ADDRESS} then 429)`, async (t) => {
    await world(t);
    const own = await startTestServer({ TRUST_PROXY: '1' });
    try {
      const account = await own.createAccount();
      const member = await addMember(own, account);
      const client = new DashboardClient(own.dashboardPort!);
      await client.get('/sign-in');
      // The reproduction: the client writes a new left-most entry each time; the proxy
      // in front appends the address it saw (10.0.0.10), the right-most entry.
      const statuses: number[] = [];
      for (let i = 0; i < PER_ADDRESS + 5; i++) {
        const res = await client.post('/sign-in', { email: `guess${i}@example.com`, password: 'guess guess guess' }, { 'x-forwarded-for': `203.0.113.${i}, 10.0.0.10` });
        statuses.push(res.status);
      }
      assert.deepEqual(statuses, [...Array<number>(PER_ADDRESS).fill(401), ...Array<number>(5).fill(429)]);
      const stored = await own.service.store.db.selectFrom('dashboard_login_failures').select('ip').distinct().execute();
      assert.deepEqual(stored.map((r) => r.ip), ['10.0.0.10']);
      // A client behind another address (as the proxy appended it) is not affected.
      const other = { 'x-forwarded-for': '10.0.0.10, 198.51.100.1' };
      assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, other)).status, 303);
    } finally {
      await own.close();
    }
  });

  it('issue 29 item 3: an X-Forwarded-For entry that is not an address is not counted (no 500 on PostgreSQL); a port is not part of the address', async (t) => {
    await world(t);
    const own = await startTestServer({ TRUST_PROXY: '1' });
    try {
      const client = new DashboardClient(own.dashboardPort!);
      await client.get('/sign-in');
      // [X-Forwarded-For, the client address (logged), the client the throttle counts (issue 40 item 6: an IPv6 address's /64)]
      const cases: Array<[string, string, string?]> = [
        // Longer than the throttle's column: refused by PostgreSQL before; the peer counts instead.
        [`203.0.113.5, ${'x'.repeat(100)}`, '127.0.0.1'],
        ['not-an-address', '127.0.0.1'],
        [`fe80::1%${'z'.repeat(80)}`, '127.0.0.1'],
        // What is left of a bad entry is not believed either: the nearest address is the client.
        ['203.0.113.5, bogus, 198.51.100.9', '198.51.100.9'],
        // Some proxies append the source port: one count per address, not per connection.
        ['203.0.113.5:4711', '203.0.113.5'],
        ['203.0.113.5:4712', '203.0.113.5'],
        ['[2001:db8::5]:443', '2001:db8::5', '2001:db8:0:0::/64'],
        ['10.0.0.1, 2001:db8::6', '2001:db8::6', '2001:db8:0:0::/64'],
      ];
      for (const [n, [xff, logged, counted = logged]] of cases.entries()) {
        const res = await client.post('/sign-in', { email: `odd${n}@example.com`, password: 'guess guess guess' }, { 'x-forwarded-for': xff });
        assert.equal(res.status, 401, xff);
        const row = await own.service.store.db.selectFrom('dashboard_login_failures').select('ip').where('email', '=', `odd${n}@example.com`).executeTakeFirst();
        assert.equal(row?.ip, counted, xff);
        const line = own.logs.lines.find((l) => l.msg === 'dashboard request' && l.method === 'POST' && l.client_address === logged);
        assert.ok(line, `the dashboard's log line names ${logged}`);
      }
    } finally {
      await own.close();
    }
  });

  it('issue 29 item 3: TRUST_PROXY as addresses: only a listed peer\'s X-Forwarded-For and X-Forwarded-Proto count; the client is the right-most unlisted entry', async (t) => {
    await world(t);
    // 127.0.0.2 is the proxy (the test connects from it); 127.0.0.1 reaches the service directly.
    const own = await startTestServer({ TRUST_PROXY: '127.0.0.2, 10.0.0.0/8' });
    try {
      const account = await own.createAccount();
      const member = await addMember(own, account);
      const failures = async () => (await own.service.store.db.selectFrom('dashboard_login_failures').select('ip').orderBy('at').execute()).map((r) => r.ip);
      const wrong = (n: number) => ({ email: `list${n}@example.com`, password: 'guess guess guess' });

      const proxied = new DashboardClient(own.dashboardPort!, undefined, '127.0.0.2');
      await proxied.get('/sign-in');
      const forwardedFor = ['203.0.113.5, 198.51.100.7', '203.0.113.5, 10.0.0.10', undefined];
      for (const [n, xff] of forwardedFor.entries()) {
        assert.equal((await proxied.post('/sign-in', wrong(n), xff === undefined ? {} : { 'x-forwarded-for': xff })).status, 401);
        own.clock.advance(1); // the failures' times give their order
      }
      // 10.0.0.10 is a listed proxy too: the client is the entry before it. Without the header, the proxy itself.
      assert.deepEqual(await failures(), ['198.51.100.7', '203.0.113.5', '127.0.0.2']);

      // A peer not in the list: its forwarded headers are the client's words, ignored.
      const direct = new DashboardClient(own.dashboardPort!);
      const form = await direct.get('/sign-in', { 'x-forwarded-proto': 'https' });
      assert.ok(setCookie(form, 'dashboard_signin'), 'no __Host- cookie: X-Forwarded-Proto was not believed');
      assert.equal(form.headers['strict-transport-security'], undefined);
      const statuses: number[] = [];
      for (let i = 0; i <= PER_ADDRESS; i++) {
        statuses.push((await direct.post('/sign-in', wrong(100 + i), { 'x-forwarded-for': `203.0.113.${i}`, 'x-forwarded-proto': 'https' })).status);
      }
      assert.deepEqual(statuses, [...Array<number>(PER_ADDRESS).fill(401), 429], 'every attempt counted for 127.0.0.1, whatever X-Forwarded-For said');
      assert.equal((await failures()).filter((ip) => ip === '127.0.0.1').length, PER_ADDRESS);

      // The listed proxy's X-Forwarded-Proto is believed, and its clients are still let in.
      const form2 = await proxied.get('/sign-in', { 'x-forwarded-proto': 'https' });
      assert.match(setCookie(form2, '__Host-dashboard_signin') ?? '', /; Secure/);
      const ok = await proxied.post('/sign-in', { email: member.email, password: member.password }, { 'x-forwarded-for': '192.0.2.44', 'x-forwarded-proto': 'https' });
      assert.equal(ok.status, 303);
    } finally {
      await own.close();
    }
  });

  it(`a session ends after ${IDLE_MS / 3_600_000} h without requests, and ${ABSOLUTE_MS / 3_600_000} h after sign-in however busy (injected clock)`, async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const idle = new DashboardClient(server.dashboardPort!);
    assert.equal((await idle.signIn(member.email, member.password)).status, 303);
    server.clock.advance(IDLE_MS - 60_000);
    assert.equal((await idle.get(dev(accountId, 'keys'))).status, 200, 'activity just inside the idle time');
    server.clock.advance(IDLE_MS - 60_000);
    assert.equal((await idle.get(dev(accountId, 'keys'))).status, 200, 'the idle time counts from the last request');
    server.clock.advance(IDLE_MS + 1);
    const expired = await idle.get(dev(accountId, 'keys'));
    assert.equal(expired.status, 303);
    assert.equal(expired.location, '/sign-in');

    const busy = new DashboardClient(server.dashboardPort!);
    assert.equal((await busy.signIn(member.email, member.password)).status, 303);
    for (let t = 0; t < ABSOLUTE_MS - IDLE_MS / 2; t += IDLE_MS / 2) {
      server.clock.advance(IDLE_MS / 2);
      assert.equal((await busy.get(dev(accountId, 'keys'))).status, 200);
    }
    server.clock.advance(IDLE_MS / 2);
    assert.equal((await busy.get(dev(accountId, 'keys'))).location, '/sign-in', 'the absolute lifetime is over');
  });

  it('sign-out needs the CSRF token, ends the session in the database and clears the cookie', async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const client = new DashboardClient(server.dashboardPort!);
    await client.signIn(member.email, member.password);
    await client.get(dev(accountId, 'keys'));
    const sessionId = client.cookies.get('dashboard_session')!;

    const forged = await client.post('/sign-out', { _csrf: null });
    assert.equal(forged.status, 403);
    assert.equal((await client.get(dev(accountId, 'keys'))).status, 200, 'still signed in');

    const out = await client.post('/sign-out', {});
    assert.equal(out.status, 303);
    assert.equal(out.location, '/sign-in?signed_out=1');
    assert.match(setCookie(out, 'dashboard_session') ?? '', /Expires=Thu, 01 Jan 1970/);
    assert.match(text((await client.get('/sign-in?signed_out=1')).body), /You are signed out\./);

    // The old cookie, replayed, no longer works: the session is gone from the database.
    const replay = new DashboardClient(server.dashboardPort!);
    replay.cookies.set('dashboard_session', sessionId);
    assert.equal((await replay.get(dev(accountId, 'keys'))).location, '/sign-in');
    const hash = createHash('sha256').update(sessionId).digest('hex');
    assert.equal(await server.service.store.db.selectFrom('dashboard_sessions').select('id_hash').where('id_hash', '=', hash).executeTakeFirst(), undefined);
  });

  it('a forged or malformed session cookie signs no one in', async (t) => {
    await world(t);
    for (const value of ['', 'abc', 'x'.repeat(43), `${'A'.repeat(42)}%`]) {
      const client = new DashboardClient(server.dashboardPort!);
      client.cookies.set('dashboard_session', value);
      assert.equal((await client.get(dev(accountId, 'keys'))).location, '/sign-in', value);
    }
  });

  it('behind https (TRUST_PROXY, X-Forwarded-Proto): cookies are Secure and __Host- prefixed', async (t) => {
    await world(t);
    const own = await startTestServer({ TRUST_PROXY: '1' });
    try {
      const account = await own.createAccount();
      const member = await addMember(own, account);
      const https = { 'x-forwarded-proto': 'https' };
      const client = new DashboardClient(own.dashboardPort!);
      const form = await client.get('/sign-in', https);
      assert.match(setCookie(form, '__Host-dashboard_signin') ?? '', /; Secure/);
      assert.match(form.headers['strict-transport-security'] as string, /max-age=\d+/);
      const res = await client.post('/sign-in', { email: member.email, password: member.password }, https);
      assert.equal(res.status, 303);
      const cookie = setCookie(res, '__Host-dashboard_session');
      assert.ok(cookie);
      assert.match(cookie, /; Secure/);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      assert.match(cookie, /Path=\//);
      assert.doesNotMatch(cookie, /Domain=/i);
    } finally {
      await own.close();
    }
  });

  it('pages are not cached and cannot be framed; the log has no password, cookie or token', async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const client = new DashboardClient(server.dashboardPort!);
    await client.signIn(member.email, member.password);
    const page = await client.get(dev(accountId, 'keys'));
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.match(page.headers['content-security-policy'] as string, /frame-ancestors 'none'/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.equal(page.headers['referrer-policy'], 'same-origin', 'ids in URLs never go to other sites');
    const logs = server.logs.raw.join('\n');
    assert.ok(server.logs.lines.some((l) => l.msg === 'dashboard request' && l.path === '/sign-in' && l.status === 303));
    assert.ok(!logs.includes(PASSWORD), 'no password in the logs');
    assert.ok(!logs.includes(client.cookies.get('dashboard_session')!), 'no session id in the logs');
    assert.ok(!logs.includes(client.csrf!), 'no CSRF token in the logs');
  });
});

describe('dashboard static files and error pages', () => {
  let server: TestServer;
  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
  }

  it('serves its one stylesheet and one script; nothing else under /static', async (t) => {
    await world(t);
    const client = new DashboardClient(server.dashboardPort!);
    const css = await client.get('/static/dashboard.css');
    assert.equal(css.status, 200);
    assert.match(css.headers['content-type'] as string, /^text\/css/);
    const js = await client.get('/static/copy.js');
    assert.equal(js.status, 200);
    assert.match(js.headers['content-type'] as string, /^text\/javascript/);
    assert.ok(js.body.split('\n').length < 20, 'a few lines of script');
    for (const path of ['/static/__proto__', '/static/constructor', '/static/..%2F..%2Fpackage.json', '/static/index.ts']) {
      assert.equal((await client.get(path)).status, 404, path);
    }
  });

  it('unknown pages get an HTML 404; a JSON body is refused (415), not parsed', async (t) => {
    await world(t);
    const client = new DashboardClient(server.dashboardPort!);
    const missing = await client.get('/does-not-exist');
    assert.equal(missing.status, 404);
    assert.match(missing.headers['content-type'] as string, /^text\/html/);
    assert.match(text(missing.body), /Not found/);
    // A key pasted into the address bar by mistake does not reach the log (D20).
    const key = generateKey('sg');
    assert.equal((await client.get(`/${key}`)).status, 404);
    assert.ok(server.logs.lines.some((l) => l.msg === 'dashboard request' && l.path === '/sg_live_[redacted]'));
    assert.ok(!server.logs.raw.join('\n').includes(key.slice(8)));
    const json = await client.request('POST', '/sign-in', { body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(json.status, 415);
    assert.match(text(json.body), /Nothing was changed/);
  });
});
