import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { FIRST_DELAY_MS, MAX_DELAY_MS, MAX_WAITING, PER_ADDRESS, PER_EMAIL_AND_ADDRESS, SLOW_AFTER } from '../../src/dashboard/throttle.js';
import type { TestServer } from '../support/server.js';
import { within } from '../support/until.js';
import { freshServer } from '../support/world.js';
import { addMember, DashboardClient, text, type PageResponse } from './helpers.js';

/**
 * Issue 40 item 6: wrong passwords from one address used to lock the member out everywhere (429
 * for 15 minutes, renewable forever). Now the failing address is refused, and the account side
 * only slows down: the right password from another address signs in after a bounded delay, which
 * runs on the test's clock (TestClock.sleep) and holds nothing beyond its bounds.
 */
describe('sign-in throttle: nobody can lock a member out from another address (issue 40 item 6)', () => {
  let server: TestServer;
  let proxied: TestServer;
  let accountId: string;

  /** Each test's own world (issue 42): a fresh server and an account. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
  }

  /** The world of the tests of a server behind one proxy: the client is the address it appends to X-Forwarded-For. */
  async function proxiedWorld(t: TestContext): Promise<void> {
    proxied = await freshServer(t, { TRUST_PROXY: '1' });
  }

  /** Resolves once the server holds `count` delayed attempts; fails, rather than hangs, when it never does. */
  async function delayedAttempts(on: TestServer, count: number): Promise<number[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the server did not delay ${count} attempt(s) (it holds ${on.clock.sleeping().length})`)), 15_000);
    });
    try {
      await Promise.race([on.clock.untilSleeping(count), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return on.clock.sleeping();
  }

  /** A browser at `from` (an address of 127.0.0.0/8) with the sign-in form open. */
  async function browserAt(on: TestServer, from?: string): Promise<DashboardClient> {
    const client = new DashboardClient(on.dashboardPort!, undefined, from);
    assert.equal((await client.get('/sign-in')).status, 200);
    return client;
  }

  /** The first `count` of `attempts` to be answered, in the order they were: resolves as the last of them is. */
  function firstAnswered(attempts: Array<Promise<PageResponse>>, count: number): Promise<PageResponse[]> {
    const answered: PageResponse[] = [];
    return new Promise((resolve, reject) => {
      for (const attempt of attempts) {
        attempt.then((answer) => {
          answered.push(answer);
          if (answered.length === count) resolve([...answered]);
        }, reject);
      }
    });
  }

  /** Whether a promise has settled yet (after the turns that could settle it now). */
  async function settled(promise: Promise<unknown>): Promise<boolean> {
    let done = false;
    void promise.then(() => { done = true; }, () => { done = true; });
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  }

  const failuresOf = (on: TestServer, email: string) => on.service.store.signInFailures.since({ email }, new Date(on.clock.now() - 3_600_000).toISOString());

  it(`${PER_EMAIL_AND_ADDRESS} wrong passwords from address A: A is refused, the right password from address B signs in after ${FIRST_DELAY_MS} ms, without holding up other requests`, async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const guesser = await browserAt(server, '127.0.0.2');
    for (let i = 0; i < PER_EMAIL_AND_ADDRESS; i++) assert.equal((await guesser.post('/sign-in', { email: member.email, password: `guess ${i}` })).status, 401);
    const refused = await guesser.post('/sign-in', { email: member.email, password: member.password });
    assert.equal(refused.status, 429, 'A is throttled, even with the right password');
    assert.match(text(refused.body), /Too many failed sign-in attempts\. Try again in 15 minutes\./);

    const owner = await browserAt(server, '127.0.0.3');
    const signIn = owner.post('/sign-in', { email: member.email, password: member.password });
    assert.deepEqual(await delayedAttempts(server, 1), [FIRST_DELAY_MS], 'delayed, not refused');
    // While it waits, the server answers others at once: the delay is a timer, not a blocked loop.
    const bystander = await addMember(server, accountId);
    assert.equal((await (await browserAt(server, '127.0.0.4')).post('/sign-in', { email: bystander.email, password: bystander.password })).status, 303);
    assert.equal(await settled(signIn), false, 'still waiting');
    server.clock.advance(FIRST_DELAY_MS);
    const signedIn = await signIn;
    assert.equal(signedIn.status, 303, 'the owner is in');
    assert.equal((await owner.get(signedIn.location!)).status, 200);

    // The owner's sign-in did not forgive A: still refused, and its failures still count.
    assert.equal((await guesser.post('/sign-in', { email: member.email, password: member.password })).status, 429);
    assert.equal((await failuresOf(server, member.email)).length, PER_EMAIL_AND_ADDRESS);
  });

  it(`the delay grows with the failures from other addresses, and stops at ${MAX_DELAY_MS} ms: the owner still signs in`, async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const delays: number[] = [];
    // Guessers at addresses 127.0.1.x, one wrong password each once the account is slowed.
    for (let i = 0; i < SLOW_AFTER + 6; i++) {
      const attempt = (await browserAt(server, `127.0.1.${i + 1}`)).post('/sign-in', { email: member.email, password: `guess ${i}` });
      if (i >= SLOW_AFTER) {
        const [delay] = await delayedAttempts(server, 1);
        delays.push(delay!);
        server.clock.advance(delay!);
      }
      assert.equal((await attempt).status, 401);
    }
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, MAX_DELAY_MS, MAX_DELAY_MS]);
    const owner = (await browserAt(server, '127.0.1.200')).post('/sign-in', { email: member.email, password: member.password });
    assert.deepEqual(await delayedAttempts(server, 1), [MAX_DELAY_MS]);
    server.clock.advance(MAX_DELAY_MS);
    assert.equal((await owner).status, 303);
  });

  it('parallel attempts from one address while the account is slowed: one waits, the others get 429 at once and are not counted', async (t) => {
    await world(t);
    const member = await addMember(server, accountId);
    const guesser = await browserAt(server, '127.0.2.1');
    for (let i = 0; i < SLOW_AFTER; i++) assert.equal((await guesser.post('/sign-in', { email: member.email, password: `guess ${i}` })).status, 401);
    const flood = await Promise.all(Array.from({ length: 10 }, () => browserAt(server, '127.0.2.2')));
    const attempts = flood.map((client, i) => client.post('/sign-in', { email: member.email, password: `parallel ${i}` }));
    assert.equal((await delayedAttempts(server, 1)).length, 1);
    // The nine come back without the clock moving: nothing of theirs waits.
    const answered = await within(firstAnswered(attempts, 9), 15_000, 'nine attempts answered without the clock moving');
    assert.deepEqual(answered.map((r) => r.status), Array<number>(9).fill(429));
    assert.match(text(answered[0]!.body), /Too many sign-in attempts at once\. Try again in 1 second\./);
    assert.equal(answered[0]!.headers['retry-after'], '1');
    server.clock.advance(FIRST_DELAY_MS);
    assert.deepEqual((await Promise.all(attempts)).map((r) => r.status).sort(), [...Array<number>(9).fill(429), 401].sort());
    assert.equal((await failuresOf(server, member.email)).length, SLOW_AFTER + 1, 'only the one that was checked counts');
  });

  it(`at most ${MAX_WAITING} delayed attempts at once on a process: one more is answered 429 at once, not counted`, async (t) => {
    await proxiedWorld(t);
    const member = await addMember(proxied, await proxied.createAccount());
    const at = (n: number) => ({ 'x-forwarded-for': `198.51.${Math.floor(n / 250)}.${(n % 250) + 1}` });
    const client = await browserAt(proxied);
    for (let i = 0; i < SLOW_AFTER; i++) assert.equal((await client.post('/sign-in', { email: member.email, password: `guess ${i}` }, at(1000))).status, 401);
    // Empty passwords: refused without the scrypt work, so that the test spends its time on the throttle.
    const attempts = Array.from({ length: MAX_WAITING + 1 }, (_, n) => client.post('/sign-in', { email: member.email, password: '' }, at(n)));
    const delays = await delayedAttempts(proxied, MAX_WAITING);
    assert.equal(delays.length, MAX_WAITING);
    assert.ok(delays.every((d) => d > 0 && d <= MAX_DELAY_MS), 'each bounded');
    const refused = (await within(firstAnswered(attempts, 1), 15_000, 'the attempt over the limit to be answered without the clock moving'))[0]!;
    assert.equal(refused.status, 429);
    assert.match(text(refused.body), /Too many sign-in attempts at once\. Try again in 10 seconds\./);
    proxied.clock.advance(MAX_DELAY_MS);
    const statuses = (await Promise.all(attempts)).map((r) => r.status);
    assert.deepEqual([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 429).length], [MAX_WAITING, 1]);
    assert.equal((await failuresOf(proxied, member.email)).length, SLOW_AFTER + MAX_WAITING);
  });

  it(`with TRUST_PROXY, IPv6 addresses of one /64 (from X-Forwarded-For) are one client: ${PER_ADDRESS} failures from it, whatever the addresses, block the /64, not the next one`, async (t) => {
    await proxiedWorld(t);
    const member = await addMember(proxied, await proxied.createAccount());
    const client = await browserAt(proxied);
    const from = (address: string) => ({ 'x-forwarded-for': address });
    for (let i = 0; i < PER_ADDRESS; i++) {
      assert.equal((await client.post('/sign-in', { email: `v6-guess${i}@example.com`, password: 'guess guess guess' }, from(`2001:db8:1:2::${(i + 1).toString(16)}`))).status, 401);
    }
    assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, from('2001:db8:1:2:ffff:ffff:ffff:fffe'))).status, 429, 'the same /64');
    assert.equal((await client.post('/sign-in', { email: member.email, password: member.password }, from('2001:db8:1:3::1'))).status, 303, 'the next /64');
    const stored = await proxied.service.store.db.selectFrom('dashboard_login_failures').select('ip').distinct().where('email', 'like', 'v6-guess%').execute();
    assert.deepEqual(stored.map((r) => r.ip), ['2001:db8:1:2::/64']);

    // IPv4 clients seen as IPv4-mapped IPv6 addresses stay apart: each is its IPv4 address.
    const other = await browserAt(proxied);
    for (const mapped of ['::ffff:203.0.113.5', '::ffff:203.0.113.6']) {
      assert.equal((await other.post('/sign-in', { email: `mapped-${mapped}@example.com`, password: 'guess guess guess' }, from(mapped))).status, 401);
    }
    const mapped = await proxied.service.store.db.selectFrom('dashboard_login_failures').select('ip').where('email', 'like', 'mapped-%').orderBy('ip').execute();
    assert.deepEqual(mapped.map((r) => r.ip), ['203.0.113.5', '203.0.113.6']);
  });
});
