import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { assertError } from '../http/helpers.js';
import { runCli, startCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { httpCall } from '../support/server.js';
import { until, within } from '../support/until.js';
import { CHANGES_CHANNEL } from '../../src/storage/pg-notifications.js';

const stores = (['sqlite', 'postgres'] as const).filter((s) => s === 'sqlite' || process.env.TEST_DATABASE_URL);

for (const store of stores) {
  describe(`revocation and origin changes across instances on ${store} (D4)`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    const servers: ServerProcess[] = [];
    let accountId: string;
    let keyId: string;
    let key: string;

    before(async () => {
      database = await createTestDatabase(store);
      env = { DATABASE_URL: database.url };
      accountId = runCli(['account', 'create', '--name', 'Org', '--json'], env).json.id;
      const created = runCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'web', '--json'], env).json;
      keyId = created.id;
      key = created.key;
      assert.equal(runCli(['origin', 'add', '--account', accountId, '--country', 'sg', 'https://shop.example', '--json'], env).status, 0);
      servers.push(await startServerProcess(env), await startServerProcess(env));
    });
    after(async () => {
      for (const s of servers) await s.stop();
      await database.drop();
    });

    const call = (s: ServerProcess, origin?: string) =>
      httpCall(s.port, '/v1/listings', { key, headers: origin ? { origin } : {} });

    it('an origin removed by the CLI is refused by every instance on its next request', async () => {
      for (const s of servers) {
        // Twice each, so that any cache is warm.
        assert.equal((await call(s, 'https://shop.example')).status, 200);
        assert.equal((await call(s, 'https://shop.example')).status, 200);
      }
      const removed = runCli(['origin', 'remove', '--account', accountId, '--country', 'sg', 'https://shop.example'], env);
      assert.equal(removed.status, 0, removed.stderr);
      for (const s of servers) {
        const res = await call(s, 'https://shop.example');
        assert.equal(res.status, 403);
        assert.equal(res.json.error, 'origin_not_allowed');
      }
    });

    it('listings imported by the CLI are seen by every instance on its next request, each tenant apart', async () => {
      // A second tenant, read by both instances, whose caches must survive the other tenant's import.
      const other = runCli(['account', 'create', '--name', 'Other', '--json'], env).json.id;
      const otherKey = runCli(['key', 'create', '--account', other, '--country', 'sg', '--label', 'o', '--json'], env).json.key;
      const dir = mkdtempSync(join(tmpdir(), 'cross-import-'));
      const line = (owner: string, title: string, id = randomUUID()) => JSON.stringify({
        id, owner_account_id: owner, country: 'sg', building_id: randomUUID(), usage_types: ['Office'], currency: 'SGD', status: 'active', url: 'https://www.example.com/l', title,
      });
      try {
        writeFileSync(join(dir, 'other.ndjson'), line(other, 'Other 1'));
        assert.equal(runCli(['import', join(dir, 'other.ndjson')], env).status, 0);
        const before = await Promise.all(servers.map((s) => httpCall(s.port, '/v1/listings', { key: otherKey })));
        for (const res of before) assert.equal(res.json.total, 1);
        for (const s of servers) assert.equal((await httpCall(s.port, '/v1/listings', { key })).json.total, 0);

        const id = randomUUID();
        writeFileSync(join(dir, 'mine.ndjson'), line(accountId, 'Mine 1', id));
        const imported = runCli(['import', join(dir, 'mine.ndjson'), '--json'], env);
        assert.equal(imported.status, 0, imported.stderr);
        for (const s of servers) {
          const list = await httpCall(s.port, '/v1/listings', { key });
          assert.equal(list.json.total, 1, 'the import is seen at once');
          assert.equal((await httpCall(s.port, `/v1/listings/${id}`, { key })).json.title, 'Mine 1');
          assert.equal((await httpCall(s.port, '/v1/listings', { key: otherKey })).body, before[0]!.body, 'the other tenant is unchanged');
        }
        writeFileSync(join(dir, 'leased.ndjson'), JSON.stringify({ ...JSON.parse(line(accountId, 'Mine 1', id)), status: 'leased' }));
        assert.equal(runCli(['import', join(dir, 'leased.ndjson')], env).status, 0);
        for (const s of servers) assert.equal((await httpCall(s.port, `/v1/listings/${id}`, { key })).status, 404, 'leased: gone at once');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('a key revoked by the CLI is refused by every instance on its next request', async () => {
      for (const s of servers) {
        assert.equal((await call(s)).status, 200);
        assert.equal((await call(s)).status, 200);
      }
      const revoked = runCli(['key', 'revoke', keyId], env);
      assert.equal(revoked.status, 0, revoked.stderr);
      for (const s of servers) {
        const res = await call(s);
        assert.equal(res.status, 401);
        assert.equal(res.json.error, 'unauthorized');
      }
    });

    it('stop gracefully on SIGTERM (exit 0)', async () => {
      for (const s of servers.splice(0)) assert.equal(await s.stop(), 0);
    });
  });
}

/**
 * D4 on PostgreSQL rests on each command waiting until every running instance has confirmed that
 * it applied the command's change (storage/changes.ts, broadcast). A stopped process (SIGSTOP)
 * stands for an instance that is overloaded or paused.
 */
if (process.env.TEST_DATABASE_URL) {
  describe('a command waits until every running instance has applied its change (D4, PostgreSQL)', () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    let accountId: string;
    let a: ServerProcess;
    let b: ServerProcess;

    before(async () => {
      database = await createTestDatabase('postgres');
      env = { DATABASE_URL: database.url };
      accountId = runCli(['account', 'create', '--name', 'Org', '--json'], env).json.id;
      [a, b] = [await startServerProcess(env), await startServerProcess(env)];
    });
    after(async () => {
      for (const s of [a, b]) {
        s.child.kill('SIGCONT');
        await s.stop();
      }
      await database.drop();
    });

    /** A new key, answered 200 twice by each instance, so that each has it cached. */
    async function cachedKey(): Promise<{ id: string; key: string }> {
      const created = runCli(['key', 'create', '--account', accountId, '--country', 'sg', '--label', 'k', '--json'], env).json;
      for (const s of [a, b]) {
        for (let i = 0; i < 2; i++) assert.equal((await httpCall(s.port, '/v1/listings', { key: created.key })).status, 200);
      }
      return created;
    }
    const refusedEverywhere = async (key: string) => {
      for (const s of [a, b]) assertError(await httpCall(s.port, '/v1/listings', { key }), 401, 'unauthorized');
    };
    async function whenRevokedInDatabase(id: string): Promise<void> {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        await until(async () => (await client.query('select revoked_at from api_keys where id = $1', [id])).rows[0]?.revoked_at !== null, { what: 'the revoke to be committed' });
      } finally {
        await client.end();
      }
    }

    it('with every instance running, the command returns with nothing on stderr, and both refuse the key', async () => {
      const { id, key } = await cachedKey();
      const revoked = runCli(['key', 'revoke', id], env);
      assert.equal(revoked.status, 0, revoked.stderr);
      assert.equal(revoked.stderr, '');
      await refusedEverywhere(key);
    });

    /** Resolves at the first acknowledgement of a command's marker on the changes channel (an instance has applied the change). */
    async function firstAcknowledgement(): Promise<{ acknowledged: Promise<string>; end: () => Promise<void> }> {
      const listener = new pg.Client({ connectionString: database.url });
      await listener.connect();
      await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
      const acknowledged = new Promise<string>((resolve) => listener.on('notification', (m) => m.payload?.startsWith('ack ') && resolve(m.payload)));
      return { acknowledged, end: () => listener.end() };
    }

    it('a stalled instance holds the command back until it has resumed and applied the change', async () => {
      const { id, key } = await cachedKey();
      b.child.kill('SIGSTOP');
      const listener = await firstAcknowledgement();
      try {
        const revoking = startCli(['key', 'revoke', id], env);
        // A has confirmed the change: B's confirmation is all the command has left to wait for.
        await within(listener.acknowledged, 20_000, "the running instance's acknowledgement");
        await whenRevokedInDatabase(id);
        // Real time is the point: B stays stopped for a second after A confirmed; a command that did
        // not wait for B would have exited by then (it only closes its connections), one that waits exits after.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const resumedAt = Date.now();
        b.child.kill('SIGCONT');
        const result = await revoking;
        assert.equal(result.status, 0, result.stderr);
        assert.equal(result.stderr, '', 'confirmed by both, once B was back');
        assert.ok(result.exitedAt >= resumedAt, 'the command waited for the stalled instance');
      } finally {
        b.child.kill('SIGCONT');
        await listener.end();
      }
      await refusedEverywhere(key);
    });

    it('an instance that stays stalled holds the command for at most 5 s: it exits 0 and says so in one line on stderr', async () => {
      const { id, key } = await cachedKey();
      b.child.kill('SIGSTOP');
      try {
        const started = Date.now();
        const result = await startCli(['key', 'revoke', id], env);
        // It waited its 5 s, and not much longer (a generous bound: start-up and exit on a busy machine).
        assert.ok(result.exitedAt - started >= 5000 && result.exitedAt - started < 15_000, `${result.exitedAt - started} ms`);
        assert.equal(result.status, 0, 'the change is saved');
        assert.equal(result.stderr, 'warning: the change is saved, but 1 of 2 running instances did not confirm it within 5 s; they apply it once they read their notifications\n');
        assertError(await httpCall(a.port, '/v1/listings', { key }), 401, 'unauthorized');
      } finally {
        b.child.kill('SIGCONT');
      }
      // Back, B catches up: the next command returns once it has (every command confirms), and B refuses the key.
      const listed = runCli(['key', 'list', '--account', accountId, '--json'], env);
      assert.equal(listed.status, 0, listed.stderr);
      assert.equal(listed.stderr, '');
      await refusedEverywhere(key);
    });
  });
}
