import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { afterEach, beforeEach, describe, it, type TestContext } from 'node:test';
import { hashKey } from '../../src/auth/key-format.js';
import { runCli } from '../support/cli.js';
import { readCounts } from '../support/read-counts.js';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError } from './helpers.js';

/**
 * The key a keep-alive connection presented last is recalled for its next request with the same
 * header (auth/connection-keys.ts), and never where the full key check would answer otherwise:
 * D4 (a change of any key reaches the next request, on the same connection too), D3 (another
 * country's host), another key on the same connection, the safety TTL, and the caches off.
 */
describe('keys recalled on a keep-alive connection (D3, D4, READ_CACHE_TTL_MS)', () => {
  let server: TestServer;
  let orgA: string;
  let orgB: string;
  let agent: Agent;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t, { METRICS_PORT: '0' });
    orgA = await server.createAccount();
    orgB = await server.createAccount();
    await server.addListings(orgA, [{ title: 'A1' }, { title: 'A2' }]);
    await server.addListings(orgB, [{ title: 'B1' }]);
  }
  beforeEach(() => {
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
  });
  afterEach(() => agent.destroy());

  /** A request on the test's one connection; asserts that it is the same connection as before. */
  let port: number | undefined;
  beforeEach(() => {
    port = undefined;
  });
  async function onConnection(key: string, options: { host?: string; path?: string } = {}): Promise<TestResponse> {
    const res = await server.get(options.path ?? '/v1/listings', { key, host: options.host, agent });
    assert.ok(res.connectionPort !== undefined);
    if (port !== undefined) assert.equal(res.connectionPort, port, 'the same keep-alive connection');
    port = res.connectionPort;
    return res;
  }
  const keyLookups = async () => {
    const { hits, misses } = (await readCounts(server)).keys;
    return hits + misses;
  };
  /**
   * Makes the connection remember `key` (its first look-up waits for the database and is not
   * remembered, the second is found in the cache and is) and shows it recalled by a third request
   * that looks nothing up. Returns the first answer.
   */
  async function rememberedOnConnection(key: string, message: string): Promise<TestResponse> {
    const first = await onConnection(key);
    assert.equal(first.status, 200);
    assert.equal((await onConnection(key)).status, 200);
    const lookups = await keyLookups();
    assert.equal((await onConnection(key)).status, 200);
    assert.equal(await keyLookups(), lookups, message);
    return first;
  }

  it('after a look-up in the cache, the next requests with the same header on the connection do not look the key up, and are answered the same', async (t) => {
    await world(t);
    const { key } = await server.createKey(orgA);
    // The first look-up waits for the database, so it is not remembered; the second is found in the cache, and is.
    const first = await onConnection(key);
    assert.equal(first.status, 200);
    assert.equal((await onConnection(key)).body, first.body);
    const lookups = await keyLookups();
    for (let i = 0; i < 3; i++) {
      const again = await onConnection(key);
      assert.equal(again.status, 200);
      assert.equal(again.body, first.body);
    }
    assert.equal(await keyLookups(), lookups, 'recalled from the connection');
    // A connection of its own looks it up (from the cache).
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
    assert.equal(await keyLookups(), lookups + 1);
  });

  it('a key revoked through the store gets 401 on the next request of the same connection (D4)', async (t) => {
    await world(t);
    const victim = await server.createKey(orgA, 'sg', 'to revoke');
    await rememberedOnConnection(victim.key, 'recalled before the change');
    await server.service.store.keys.revoke(victim.id, new Date(server.clock.now()).toISOString());
    assertError(await onConnection(victim.key), 401, 'unauthorized');
  });

  it('a key revoked with the real CLI (another process) gets 401 on the next request of the same connection (D4)', async (t) => {
    await world(t);
    const victim = await server.createKey(orgA, 'sg', 'cli revoke');
    await rememberedOnConnection(victim.key, 'recalled before the change');
    const revoked = runCli(['key', 'revoke', victim.id, '--json'], { DATABASE_URL: server.databaseUrl });
    assert.equal(revoked.status, 0, revoked.stderr);
    assertError(await onConnection(victim.key), 401, 'unauthorized');
  });

  it("a key's new rate limit applies from the next request of the same connection (D4, D14)", async (t) => {
    await world(t);
    const { id, key } = await server.createKey(orgA, 'sg', 'limit change');
    const before = await rememberedOnConnection(key, 'recalled before the change');
    assert.equal(before.headers['x-ratelimit-limit'], String(server.config.rateLimitPerMinute));
    const changed = runCli(['key', 'set-limit', id, '7'], { DATABASE_URL: server.databaseUrl });
    assert.equal(changed.status, 0, changed.stderr);
    const after = await onConnection(key);
    assert.equal(after.status, 200);
    assert.equal(after.headers['x-ratelimit-limit'], '7');
  });

  it("another key on the same connection is that key, with its own organisation's listings; then the first again", async (t) => {
    await world(t);
    const a = await server.createKey(orgA);
    const b = await server.createKey(orgB);
    const titles = (res: TestResponse) => res.json.items.map((item: { title: string }) => item.title).sort();
    assert.deepEqual(titles(await onConnection(a.key)), ['A1', 'A2']);
    assert.deepEqual(titles(await onConnection(a.key)), ['A1', 'A2']);
    assert.deepEqual(titles(await onConnection(b.key)), ['B1']);
    assert.deepEqual(titles(await onConnection(a.key)), ['A1', 'A2']);
    // A header that differs from the remembered one in one character is not that key.
    const typo = a.key.slice(0, -1) + (a.key.endsWith('a') ? 'b' : 'a');
    assertError(await onConnection(typo), 401, 'unauthorized');
  });

  it("a recalled key is still refused on another country's host (D3)", async (t) => {
    await world(t);
    const { key } = await server.createKey(orgA, 'sg');
    await rememberedOnConnection(key, 'recalled on its own host');
    const elsewhere = await onConnection(key, { host: 'api.my.localhost' });
    assertError(elsewhere, 401, 'unauthorized');
    assert.match(elsewhere.json.message, /country "sg"/);
    assert.equal((await onConnection(key)).status, 200);
  });

  it("a key is looked up again once its cached record's refresh-ahead is due (3/4 of READ_CACHE_TTL_MS after its read), which reads it again in the background", async (t) => {
    await world(t);
    const { key } = await server.createKey(orgA);
    const ttl = server.config.readCacheTtlMs;
    const read = server.clock.now(); // the record is read from the database now
    for (let i = 0; i < 2; i++) assert.equal((await onConnection(key)).status, 200);
    const lookups = await keyLookups();
    const refreshes = (await readCounts(server)).refreshedAhead;
    server.clock.advance(read + ttl * 0.75 - 1 - server.clock.now());
    assert.equal((await onConnection(key)).status, 200);
    assert.equal(await keyLookups(), lookups, 'before its refresh is due: recalled');
    server.clock.advance(1);
    assert.equal((await onConnection(key)).status, 200);
    assert.equal(await keyLookups(), lookups + 1, 'due: looked up, and answered from the cache');
    assert.ok((await readCounts(server)).refreshedAhead > refreshes, 'its record is read again in the background');
    // The read in the background lands (awaited in process, within the first read's TTL: no request).
    const { reads } = server.service;
    await reads.settled();
    const record = reads.findKeyByHash(hashKey(key));
    assert.ok(record !== undefined && !(record instanceof Promise) && reads.keyValidUntil(record) > read + ttl, 'the record read again is in the cache');
    // Past the first read's TTL, the record read again answers at once: no request waits for the database.
    server.clock.advance(ttl * 0.25 + 1);
    const misses = (await readCounts(server)).keys.misses;
    assert.equal((await onConnection(key)).status, 200);
    assert.equal((await readCounts(server)).keys.misses, misses, 'the refreshed record, not a miss');
  });

  it('with READ_CACHE_TTL_MS=0 every request looks its key up', async (t) => {
    await world(t);
    const uncached = await startTestServer({ DATABASE_URL: server.databaseUrl, READ_CACHE_TTL_MS: '0', METRICS_PORT: '0' }, server.clock);
    try {
      const { key } = await server.createKey(orgA);
      // Every look-up waits for the database here, and is not remembered; that a record already
      // due is not remembered either is test/unit/connection-keys.test.ts's.
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await uncached.get('/v1/listings', { key, agent }));
      assert.ok(answers.every((res) => res.status === 200));
      assert.equal(new Set(answers.map((res) => res.connectionPort)).size, 1, 'one connection');
      assert.equal((await readCounts(uncached)).keys.misses, 3);
    } finally {
      await uncached.close();
    }
  });
});
