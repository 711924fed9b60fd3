import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import { PER_EMAIL_AND_ADDRESS } from '../../src/dashboard/throttle.js';
import { TEST_STORE } from '../support/database.js';
import type { TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import { freshServer } from '../support/world.js';
import { addMember, DashboardClient } from './helpers.js';

/**
 * The sign-in throttle under a real parallel burst (issue 8, item 7): the attempt is reserved
 * atomically before the password is checked, so however many attempts arrive at once, on however
 * many instances, at most PER_EMAIL_AND_ADDRESS of them reach the check within the window.
 */
describe('sign-in throttle under parallel bursts', () => {
  let first: TestServer;
  let second: TestServer;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    first = await freshServer(t);
    // A second instance on the same database, as a scaled-out deployment runs it.
    second = await freshServer(t, { DATABASE_URL: first.databaseUrl }, { clock: first.clock });
    accountId = await first.createAccount();
  }

  /** Clients that each hold a sign-in form (cookie and token), spread over the instances. */
  async function readyClients(count: number, servers: TestServer[]): Promise<DashboardClient[]> {
    const clients = Array.from({ length: count }, (_, i) => new DashboardClient(servers[i % servers.length]!.dashboardPort!));
    for (const client of clients) assert.equal((await client.get('/sign-in')).status, 200);
    return clients;
  }

  it(`40 at once for one email, the right password last: exactly ${PER_EMAIL_AND_ADDRESS} reach the password check`, async (t) => {
    await world(t);
    const member = await addMember(first, accountId, 'burst@example.com', 'the right password!');
    const clients = await readyClients(40, [first]);
    const statuses = await Promise.all(clients.map((client, i) =>
      client.post('/sign-in', { email: member.email, password: i === 39 ? member.password : `wrong password ${i}` }).then((r) => r.status)));
    const checked = statuses.filter((s) => s === 401 || s === 303).length;
    assert.equal(checked, PER_EMAIL_AND_ADDRESS, `statuses: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 429).length, 40 - PER_EMAIL_AND_ADDRESS);
  });

  it(`150 wrong ones at once over two instances: exactly ${PER_EMAIL_AND_ADDRESS} checks, the rest 429`, async (t) => {
    await world(t);
    const member = await addMember(first, accountId, 'spread@example.com', 'the right password!');
    const clients = await readyClients(150, [first, second]);
    const statuses = await Promise.all(clients.map((client, i) =>
      client.post('/sign-in', { email: member.email, password: `wrong ${i}` }).then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 401).length, PER_EMAIL_AND_ADDRESS, `statuses: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 429).length, 150 - PER_EMAIL_AND_ADDRESS);
    // The failures that were checked are what the throttle counts: no more, no fewer.
    const recorded = await first.service.store.signInFailures.since({ email: member.email }, new Date(first.clock.now() - 60_000).toISOString());
    assert.equal(recorded.length, PER_EMAIL_AND_ADDRESS);
  });

  it('a burst while the failures table is slow to write: never a 500 for want of a pool connection (PostgreSQL)', { skip: TEST_STORE !== 'postgres' && 'PostgreSQL: its pool and locks' }, async (t) => {
    await world(t);
    const member = await addMember(first, accountId, 'slow@example.com', 'the right password!');
    const clients = await readyClients(60, [first]);
    // Another session holds the table against writes (reads go on) for longer than the pool's
    // connection timeout (2 s): attempts that each held a connection meanwhile would leave the
    // rest waiting for one past it.
    const locker = new pg.Client({ connectionString: first.databaseUrl });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table dashboard_login_failures in exclusive mode');
    const statuses = Promise.all(clients.map((client, i) =>
      client.post('/sign-in', { email: member.email, password: `wrong ${i}` }).then((r) => r.status)));
    // Real time is the point: the pool's real connection timeout (2 s) must pass while a write waits
    // on the lock. Measured from when the first write began waiting (the database's own clock), not
    // from when the requests were sent, so a slow machine cannot shorten it.
    // Asked on a connection of its own: within a transaction PostgreSQL shows the activity as it was at its first look.
    const observer = new pg.Client({ connectionString: first.databaseUrl });
    await observer.connect();
    const waitedPastPoolTimeout = async () => (await observer.query(`select 1 from pg_stat_activity where datname = current_database()
      and wait_event_type = 'Lock' and clock_timestamp() - query_start > interval '2500 milliseconds'`)).rowCount! > 0;
    await until(waitedPastPoolTimeout, { what: 'a sign-in write to wait on the lock past the pool\'s connection timeout', timeoutMs: 20_000, everyMs: 50 });
    await observer.end();
    await locker.query('commit');
    await locker.end();
    const all = await statuses;
    assert.equal(all.filter((s) => s === 401).length, PER_EMAIL_AND_ADDRESS, `statuses: ${all.join(' ')}`);
    assert.equal(all.filter((s) => s === 429).length, 60 - PER_EMAIL_AND_ADDRESS, `statuses: ${all.join(' ')}`);
  });

  it('a right password takes its reservation back: it does not count as a failure', async (t) => {
    await world(t);
    const member = await addMember(first, accountId, 'fine@example.com', 'the right password!');
    const client = (await readyClients(1, [first]))[0]!;
    assert.equal((await client.post('/sign-in', { email: member.email, password: member.password })).status, 303);
    assert.deepEqual(await first.service.store.signInFailures.since({ email: member.email }, new Date(first.clock.now() - 60_000).toISOString()), []);
  });
});
