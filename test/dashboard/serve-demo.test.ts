import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { displayPrefix } from '../../src/auth/key-format.js';
import { DEMO_ORG_ID } from '../../src/demo/demo-data.js';
import { openStore } from '../../src/storage/index.js';
import { TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { createMigratedTestDatabase, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { freePort, startServerProcess } from '../support/process.js';
import { dom, named } from '../support/html.js';
import { httpCall } from '../support/server.js';
import { DashboardClient, dev, text } from './helpers.js';
import { until } from '../support/until.js';

/**
 * What `npm start` (`serve --demo`) prints about the dashboard, on stderr (lines for people; stdout
 * is the log). The URL line comes right after the API's listening line, so it may still be on its
 * way when the API first answers: wait for it.
 */
async function dashboardLines(output: () => string): Promise<{ url: string; email: string; password: string }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const login = /Dashboard sign-in \(demo member, new password each start\): {2}(\S+) {2}\/ {2}(\S+)\n/.exec(output());
    const url = /Dashboard \(Settings > Developer: keys and origins\) at (http:\/\/[a-z.]+:\d+)\n/.exec(output());
    if (login && url) return { url: url[1]!, email: login[1]!, password: login[2]! };
    assert.ok(Date.now() < deadline, output());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The demo key `serve --demo` printed. */
function demoKey(output: string): string {
  const key = /Demo API key \(sg, shown once\): {2}(sg_live_\w+)\n/.exec(output)?.[1];
  assert.ok(key, output);
  return key;
}

describe('serve --demo (npm start): prints the dashboard URL and a demo login that works', () => {
  let database: TestDatabase;
  /** Each test's own world (issue 42): a new, migrated database, without any account yet. */
  async function world(t: TestContext): Promise<void> {
    database = await createMigratedTestDatabase();
    atEnd(t, () => database.drop());
  }

  it('signs in with the printed login at the printed URL, sees the demo keys; a restart prints a new password and key, and the old ones stop working', async (t) => {
    await world(t);
    const dashboardPort = await freePort();
    const env = { DATABASE_URL: database.url, DASHBOARD_PORT: String(dashboardPort) };
    const first = await startServerProcess({ ...env, LOG_LEVEL: 'info' }, ['--demo']);
    let firstLogin: Awaited<ReturnType<typeof dashboardLines>>;
    let firstKey: string;
    try {
      firstLogin = await dashboardLines(first.stderr);
      firstKey = demoKey(first.stderr());
      // The banner is for people: the key and the password are never in the log stream (D20).
      assert.match(first.stderr(), new RegExp(`account id ${DEMO_ORG_ID}\\.`));
      await until(() => /"msg":"Server listening/.test(first.stdout()), { what: 'the log on stdout (written in batches)' });
      assert.ok(!first.stdout().includes(firstKey) && !first.stdout().includes(firstLogin.password), 'no secret on stdout');
      assert.ok(!first.stdout().includes(firstKey.slice(8, 20)));
      assert.equal((await httpCall(first.port, '/v1/listings', { key: firstKey })).status, 200);
      assert.equal(firstLogin.url, `http://localhost:${dashboardPort}`);
      assert.equal(firstLogin.email, 'admin@demo.example');
      const client = new DashboardClient(dashboardPort);
      const res = await client.signIn(firstLogin.email, firstLogin.password);
      assert.equal(res.status, 303);
      assert.equal(res.location, dev(DEMO_ORG_ID, 'keys'));
      const page = await client.get(res.location!);
      assert.match(text(page.body), /Demo Realty Pte Ltd/);
      named(dom(page.body), 'tr th[scope=row]', 'demo');
      const origins = dom((await client.get(dev(DEMO_ORG_ID, 'origins'))).body);
      const listed = origins.querySelectorAll('li code').map((code) => code.text);
      assert.ok(listed.includes('http://localhost:5173') && listed.includes('http://127.0.0.1:5173'), `the demo's origins are listed: ${listed.join(', ')}`);
    } finally {
      assert.equal(await first.stop(), 0);
    }

    const second = await startServerProcess(env, ['--demo']);
    try {
      const secondLogin = await dashboardLines(second.stderr);
      assert.notEqual(secondLogin.password, firstLogin.password);
      assert.equal((await new DashboardClient(dashboardPort).signIn(firstLogin.email, firstLogin.password)).status, 401);
      const client = new DashboardClient(dashboardPort);
      assert.equal((await client.signIn(secondLogin.email, secondLogin.password)).status, 303);
      // One active demo key at a time: the first start's key is revoked (and listed as such).
      assert.equal((await httpCall(second.port, '/v1/listings', { key: firstKey })).status, 401);
      assert.equal((await httpCall(second.port, '/v1/listings', { key: demoKey(second.stderr()) })).status, 200);
      const page = await client.get(dev(DEMO_ORG_ID, 'keys'));
      const demoRows = dom(page.body).querySelectorAll('tr').filter((row) => row.querySelector('th[scope=row]')?.text.trim() === 'demo');
      assert.deepEqual(demoRows.map((row) => row.classList.contains('revoked')).sort(), [false, true], 'one active demo key, one revoked');
      assert.match(text(page.body), /operator \(CLI\) revoked key demo/);
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });

  it('a plain serve after serve --demo ends the demo sign-in and names the demo key that still works, loudly (issue 40 item 11)', async (t) => {
    await world(t);
    const dashboardPort = await freePort();
    const env = { DATABASE_URL: database.url, DASHBOARD_PORT: String(dashboardPort) };
    const demo = await startServerProcess(env, ['--demo']);
    let login: Awaited<ReturnType<typeof dashboardLines>>;
    let key: string;
    let session: DashboardClient;
    try {
      login = await dashboardLines(demo.stderr);
      key = demoKey(demo.stderr());
      session = new DashboardClient(dashboardPort);
      assert.equal((await session.signIn(login.email, login.password)).status, 303);
    } finally {
      assert.equal(await demo.stop(), 0);
    }
    const store = openStore(database.url);
    const keyId = (await store.keys.listForAccount(DEMO_ORG_ID)).find((k) => k.label === 'demo' && k.revoked_at === null)!.id;
    await store.close();

    // One process, and (with Redis to share limits) a primary with two workers, which says it once for both.
    const variants: Array<[string[], Record<string, string>]> = [[[], {}]];
    if (TEST_REDIS_URL !== undefined) variants.push([['--workers', '2'], { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: uniquePrefix('serve-demo') }]);
    for (const [args, more] of variants) {
      const plain = await startServerProcess({ ...env, ...more }, args);
      try {
        await until(() => /Listings API listening on/.test(plain.stderr()) && /demo API key still works/.test(plain.stderr()), { what: 'the warning on stderr' });
        // The printed password and the session it opened no longer work; the key does (OPERATIONS:
        // `listings-api demo` prints a key that works with `serve`), and is named with its id.
        assert.equal((await new DashboardClient(dashboardPort).signIn(login.email, login.password)).status, 401, args.join(' '));
        assert.notEqual((await session.get(dev(DEMO_ORG_ID, 'keys'))).status, 200, 'the demo session is signed out');
        assert.equal((await httpCall(plain.port, '/v1/listings', { key })).status, 200);
        assert.match(plain.stderr(), /WARNING: this database was used for the demo/);
        assert.match(plain.stderr(), new RegExp(`Revoke it before serving real traffic: listings-api key revoke ${keyId}`));
        assert.equal(/demo dashboard sign-in \(admin@demo\.example\) is ended/.test(plain.stderr()), args.length === 0, 'said once, when it ended');
        // The log says it too, by id and display prefix only (D20).
        await until(() => plain.stdout().includes('this database holds demo credentials'), { what: 'the warning in the log' });
        const line = JSON.parse(plain.stdout().split('\n').find((l) => l.includes('this database holds demo credentials'))!);
        assert.equal(line.level, 40);
        assert.deepEqual(line.demo_keys, [{ key_id: keyId, key_prefix: displayPrefix(key) }]);
        assert.ok(!plain.output().includes(key) && !plain.output().includes(login.password));
      } finally {
        assert.equal(await plain.stop(), 0);
      }
    }
  });

  it('DASHBOARD_PORT=off: no dashboard, and nothing printed about it', async (t) => {
    await world(t);
    const server = await startServerProcess({ DATABASE_URL: database.url, DASHBOARD_PORT: 'off' }, ['--demo']);
    try {
      const deadline = Date.now() + 10_000;
      while (!/Listings API listening on/.test(server.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(server.output(), /Listings API listening on/);
      assert.doesNotMatch(server.output(), /Dashboard/);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});
