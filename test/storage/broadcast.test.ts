import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { sql } from '#kysely';
import { tenantKey, tenantOf, type Tenant } from '../../src/core/tenant.js';
import { issueKey } from '../../src/auth/keys.js';
import { INSTANCE_APPLICATION_NAME } from '../../src/storage/pg-notifications.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { until } from '../support/until.js';

/**
 * D4 across processes: a command's broadcastSettled returns once every serving instance has
 * applied its changes and said so. That a stalled instance holds a real command back is
 * test/ops/cross-instance.test.ts's; here, which instances are waited for.
 */
describe(`broadcastSettled on ${TEST_STORE} (D4)`, () => {
  let database: TestDatabase;
  let command: Store;
  const instances: Store[] = [];

  const openInstance = async (id: string) => {
    const store = openStore(database.url, { listenForChanges: true, instanceId: id });
    await store.start();
    instances.push(store);
    return store;
  };

  before(async () => {
    database = await createTestDatabase();
    command = openStore(database.url, { listenForChanges: true });
    await command.migrate();
    await command.start();
  });
  after(async () => {
    for (const store of instances) await store.close();
    await command.close();
    await database.drop();
  });

  if (TEST_STORE === 'sqlite') {
    it('SQLite: settled at once, with no instance to wait for (each reads the file\'s version before its requests)', async () => {
      await openInstance(randomUUID());
      assert.deepEqual(await command.broadcastSettled(), { settled: true, instances: 0, unconfirmed: 0 });
    });
    return;
  }

  it('with no serving instance, settled once its own marker is back', async () => {
    assert.deepEqual(await command.broadcastSettled(), { settled: true, instances: 0, unconfirmed: 0 });
  });

  it("every serving instance's listener is named by its id, and each acknowledges; a command's listener is not waited for", async () => {
    const ids = [randomUUID(), randomUUID()];
    for (const id of ids) await openInstance(id);
    const { rows } = await sql<{ name: string }>`select application_name as name from pg_stat_activity where datname = current_database() and application_name like ${`${INSTANCE_APPLICATION_NAME}%`}`.execute(command.db);
    assert.deepEqual(rows.map((row) => row.name).sort(), ids.map((id) => INSTANCE_APPLICATION_NAME + id).sort());
    assert.ok(rows.every((row) => Buffer.byteLength(row.name) <= 63), 'within NAMEDATALEN');
    assert.deepEqual(await command.broadcastSettled(), { settled: true, instances: 2, unconfirmed: 0 });
  });

  it('an instance acknowledges after it has applied every change before the marker: a key write is seen by its auth version', async () => {
    const instance = instances[0]!;
    const before = instance.changes.authVersion();
    const accountId = randomUUID();
    await command.accounts.create({ id: accountId, name: 'Org', kind: 'organisation', created_at: new Date().toISOString() });
    await issueKey(command, { accountId, country: 'sg', label: 'k', now: new Date() });
    assert.ok((await command.broadcastSettled()).settled);
    assert.notEqual(instance.changes.authVersion(), before, 'the change reached the instance before the command returned');
  });

  it('an application_name in DATABASE_URL does not hide an instance: it is named once it listens', async () => {
    const url = new URL(database.url);
    url.searchParams.set('application_name', 'listings-prod');
    const named = openStore(url.toString(), { listenForChanges: true, instanceId: randomUUID() });
    await named.start();
    try {
      assert.deepEqual(await command.broadcastSettled(), { settled: true, instances: 3, unconfirmed: 0 });
    } finally {
      await named.close();
    }
  });

  it("a '*' notification (too many tenants to name) that arrives while the versions are being read again is followed by another read: once settled, no version is stale", async () => {
    const owner = randomUUID();
    // An instance whose answer to its read of the versions is held until the test says, as on a busy
    // instance: the database answered from the moment the query ran. Paced by its hooks, never by time.
    let hold = false;
    let readHeld!: () => void;
    const versionsReadHeld = new Promise<void>((resolve) => (readHeld = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const notified: Array<(payload: string) => void> = [];
    const instance = openStore(database.url, {
      listenForChanges: true,
      instanceId: randomUUID(),
      watcherHooks: {
        versionsRead: async () => {
          if (!hold) return;
          hold = false;
          readHeld();
          await released;
        },
        notified: (payload) => notified.shift()?.(payload),
      },
    });
    await instance.start();
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const nextStar = () => new Promise<void>((resolve) => notified.push((payload) => (payload.includes('"*"') ? resolve() : undefined)));
      const commitWithStar = (statement: string) => client.query(`begin; ${statement}; select pg_notify('listings_api_changes', '{"tenants":"*"}'); commit`);
      hold = true;
      await commitWithStar(`insert into tenant_versions (owner_account_id, country, version, pruned_seq) values ('${owner}', 'sg', 10, 0)`);
      await versionsReadHeld; // its read of the versions has run (it saw 10), its answer not yet handled
      const secondHeard = nextStar();
      await commitWithStar(`update tenant_versions set version = 20 where owner_account_id = '${owner}'`);
      await secondHeard; // the second '*' has been handled while the first read's answer is held
      release();
      assert.ok((await command.broadcastSettled()).settled);
      await instance.changes.caughtUp();
      assert.equal(instance.changes.tenantVersion(tenantKey(owner, 'sg')), 20);
    } finally {
      release();
      await client.end();
      await instance.close();
    }
  });

  it('its listener away: each read sees every commit made before it, by its own tenant; under steady reads, versions are exact again once it is back (issue 40 item 1)', async () => {
    const id = randomUUID();
    const instance = openStore(database.url, { listenForChanges: true, instanceId: id });
    await instance.start();
    const tenants = Array.from({ length: 3 }, () => tenantOf(randomUUID(), 'sg'));
    const bump = (tenant: Tenant, version: number) =>
      sql`insert into tenant_versions (owner_account_id, country, version, pruned_seq) values (${tenant.ownerAccountId}, 'sg', ${version}, 0)
          on conflict (owner_account_id, country) do update set version = excluded.version`.execute(command.db);
    let reading = true;
    const reads = (async () => {
      // Steady traffic: every tenant read in every turn, as a busy instance would.
      while (reading) {
        await Promise.all(tenants.map((t) => instance.changes.currentVersion(t)));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    try {
      assert.ok(tenants.every((t) => instance.changes.knownVersion(t) !== undefined), 'exact while it listens');
      await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${INSTANCE_APPLICATION_NAME + id}`.execute(command.db);
      await until(() => instance.changes.knownVersion(tenants[0]!) === undefined, { what: 'the listener to be seen away' });
      // Commits while it is away: no notification reaches it, and a read made after each sees it.
      for (const [i, tenant] of tenants.entries()) {
        await bump(tenant, 1000 + i);
        assert.equal(await instance.changes.currentVersion(tenant), 1000 + i);
      }
      await until(() => tenants.every((t) => instance.changes.knownVersion(t) !== undefined), { what: 'versions exact again despite the steady reads', timeoutMs: 10_000 });
      assert.deepEqual(tenants.map((t) => instance.changes.knownVersion(t)), [1000, 1001, 1002]);
      // And notifications are followed again.
      await bump(tenants[0]!, 2000);
      await command.changes.caughtUp();
      await sql`select pg_notify('listings_api_changes', ${JSON.stringify({ tenants: [[tenants[0]!.ownerAccountId, 'sg', 2000]] })})`.execute(command.db);
      await until(() => instance.changes.knownVersion(tenants[0]!) === 2000, { what: 'the notification' });
    } finally {
      reading = false;
      await reads;
      await instance.close();
    }
  });

  it('an instance that has stopped is no longer waited for', async () => {
    await instances.pop()!.close();
    assert.deepEqual(await command.broadcastSettled(), { settled: true, instances: 1, unconfirmed: 0 });
  });
});
