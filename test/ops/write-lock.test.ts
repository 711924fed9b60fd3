import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { dev, signedIn, text } from '../dashboard/helpers.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { holdWriteLock } from '../support/sqlite-lock.js';

/**
 * SQLite allows one writer at a time (issue 8, items 3 and 4). While another process holds the
 * write lock (an import being applied, here a process that simply holds it), the server keeps
 * answering reads, its own writes wait their turn without holding the event loop (they used to wait
 * synchronously, freezing every request for up to 5 s), and a write that cannot get its turn in
 * DATABASE_BUSY_TIMEOUT_MS fails with a clear page, never a bare 500.
 */
describe('SQLite: another writer holding the database', { skip: process.env.TEST_STORE === 'postgres' ? 'SQLite only' : false }, () => {
  let server: TestServer;
  let file: string;
  let accountId: string;
  let key: string;

  before(async () => {
    server = await startTestServer({ DATABASE_BUSY_TIMEOUT_MS: '30000' });
    file = server.databaseUrl.slice('file:'.length);
    accountId = await server.createAccount();
    await server.addListings(accountId, Array.from({ length: 30 }, (_, i) => ({ title: `L${i}` })));
    key = (await server.createKey(accountId)).key;
  });
  after(() => server.close());

  it('reads go on, the event loop stays free, and the server\'s own writes wait their turn and then succeed', async () => {
    const { client } = await signedIn(server, accountId);
    const victim = await server.createKey(accountId, 'sg', 'to revoke while locked');
    const cold = await server.createAccount();
    await server.addListings(cold, [{ title: 'never read before' }]);
    const coldKey = (await server.createKey(cold)).key;
    assert.equal((await server.get('/v1/listings', { key: victim.key })).status, 200);

    const lock = await holdWriteLock(file);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    try {
      // The server's own writes start now and must wait: a revoke from the dashboard, and the
      // flush of last-used times (which used to wait synchronously on the event loop).
      await client.get(dev(accountId, `keys/${victim.id}/revoke`));
      const revoking = client.post(dev(accountId, `keys/${victim.id}/revoke`), {});
      const flushing = server.service.lastUsed.flush();
      let settled = false;
      void revoking.then(() => (settled = true));
      // Meanwhile reads are answered, warm and cold, many of them.
      for (let i = 0; i < 20; i++) {
        assert.equal((await server.get('/v1/listings?per_page=5', { key })).status, 200);
        assert.equal((await server.get('/v1/listings', { key: coldKey })).status, 200);
      }
      // A later marker: a dashboard page asked for after the revoke is answered while the revoke is not.
      assert.equal((await client.get(dev(accountId, `keys/${victim.id}/revoke`))).status, 200);
      assert.equal(settled, false, 'the revoke is still waiting for its turn while the lock is held');
      delay.disable();
      // Before: a synchronous wait of up to 5 s per write; now the loop is never held for long.
      assert.ok(delay.max / 1e6 < 250, `event loop held for ${(delay.max / 1e6).toFixed(0)} ms`);
      await lock.release();
      assert.equal((await revoking).status, 303, 'the write had its turn once the lock was released');
      await flushing;
      assert.equal((await server.get('/v1/listings', { key: victim.key })).status, 401, 'revoked (D4)');
      assert.ok((await server.service.store.keys.get(victim.id))!.last_used_at !== null, 'last-used times were written after all');
    } finally {
      delay.disable();
      if (lock.child.exitCode === null) await lock.release();
    }
  });

  it('a write that cannot get its turn in DATABASE_BUSY_TIMEOUT_MS gets a clear 503 page, and nothing changes', async () => {
    const quick = await startTestServer({ DATABASE_URL: server.databaseUrl, DATABASE_BUSY_TIMEOUT_MS: '200' });
    try {
      const { client } = await signedIn(quick, accountId);
      const victim = await quick.createKey(accountId, 'sg', 'survives');
      await client.get(dev(accountId, `keys/${victim.id}/revoke`));
      const lock = await holdWriteLock(file);
      try {
        const res = await client.post(dev(accountId, `keys/${victim.id}/revoke`), {});
        assert.equal(res.status, 503);
        assert.equal(res.headers['retry-after'], '5');
        assert.match(text(res.body), /The database is busy .* Nothing was changed; try again in a few seconds\./);
      } finally {
        await lock.release();
      }
      assert.equal((await quick.service.store.keys.get(victim.id))!.revoked_at, null, 'nothing changed');
      assert.equal((await quick.get('/v1/listings', { key: victim.key })).status, 200);
    } finally {
      await quick.close();
    }
  });
});
