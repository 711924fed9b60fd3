import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { webhooksSqliteFile } from '../../src/storage/database.js';
import { openStore, type Store, type WebhookEndpoint } from '../../src/storage/index.js';
import { mainMigrator, webhooksFileMigrator } from '../../src/storage/migrate.js';
import { addWebhook } from '../../src/webhooks/endpoints.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { startTestServer, TestClock, type TestServer } from '../support/server.js';
import { holdWriteLock } from '../support/sqlite-lock.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/**
 * Issue 43, on SQLite: the webhook delivery state (leases, kept messages, positions, attempts) is
 * in a file of its own beside the main one, with its own write lock, so that a delivery is written
 * (D24: before it is sent) and sent while an import's swap holds the main file's write lock for
 * seconds. Real SQLite files, a real lock held by another process, a real receiver; the deliverer
 * is driven by `tick()` and the injected clock.
 */
const sqliteOnly = { skip: TEST_STORE !== 'sqlite' ? 'SQLite only: PostgreSQL keeps one database' : false };
const id = (n: number) => `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const fileOf = (url: string) => url.slice('file:'.length);

/** Whether another connection can take `file`'s write lock right now (without waiting for it). */
function writeLockFree(file: string): boolean {
  const conn = new BetterSqlite3(file, { timeout: 0 });
  try {
    conn.exec('BEGIN IMMEDIATE');
    conn.exec('ROLLBACK');
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return false;
    throw error;
  } finally {
    conn.close();
  }
}

describe('webhooks: the delivery state in its own SQLite file (issue 43)', sqliteOnly, () => {
  let server: TestServer;
  let receiver: Receiver;
  let accountId: string;

  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_PRIVATE: '1', METRICS_PORT: '0' }, new TestClock(Date.now()), { manualWebhooks: true });
  });
  after(async () => {
    await server?.close();
  });
  beforeEach(async () => {
    receiver = await startReceiver();
    accountId = await server.createAccount();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('is the main file\'s path followed by .webhooks.sqlite; in-memory and PostgreSQL have none', () => {
    assert.equal(webhooksSqliteFile('file:/srv/data/listings.db'), '/srv/data/listings.db.webhooks.sqlite');
    assert.equal(webhooksSqliteFile('file::memory:'), undefined);
    assert.equal(webhooksSqliteFile('postgres://db/listings'), undefined);
    assert.ok(existsSync(webhooksSqliteFile(server.databaseUrl)!));
  });

  it('while another process holds the main file\'s write lock (an import\'s swap), a change is leased, kept, sent and recorded at once', async () => {
    const store = server.service.store;
    const mainFile = fileOf(server.databaseUrl);
    const endpoint = await addWebhook(store, server.clock.now, { accountId, country: 'sg', url: receiver.url });
    await server.addListings(accountId, [{ id: id(1) }]);
    // What the receiver can see when the message arrives: the kept message, read from the
    // webhooks file by a connection of its own (D24: written before it is sent).
    let keptWhenSent: unknown;
    receiver.answerWith(() => {
      const reader = new BetterSqlite3(webhooksSqliteFile(server.databaseUrl)!, { readonly: true });
      try {
        keptWhenSent = reader.prepare('SELECT message_id, lease_owner IS NOT NULL AS leased FROM webhook_endpoints WHERE id = ?').get(endpoint.id);
      } finally {
        reader.close();
      }
      return 204;
    });

    const lock = await holdWriteLock(mainFile);
    try {
      assert.equal(writeLockFree(mainFile), false, 'the main file\'s write lock is held (a write there waits for the import)');
      const started = Date.now();
      await server.service.webhooks.tick();
      const took = Date.now() - started;
      assert.equal(receiver.received.length, 1, 'sent while the main file is locked');
      assert.ok(took < 2000, `the delivery took ${took} ms with the main file locked; it must not wait for the lock`);
      const [message] = receiver.received;
      assert.deepEqual(keptWhenSent, { message_id: message!.headers['webhook-id'], leased: 1 }, 'the message was kept, under the lease, before it was sent');
      const [attempt] = await store.webhooks.attempts(endpoint.id, 10);
      assert.equal(attempt!.status, 204, 'the attempt is recorded while the main file is still locked');
      const after = await store.webhooks.get(endpoint.id);
      assert.deepEqual([after!.message_id, after!.lease_owner, after!.position !== endpoint.position], [null, null, true], 'delivered: position moved, lease given back');
      assert.equal(writeLockFree(mainFile), false, 'the lock was held throughout');
    } finally {
      await lock.release();
    }
  });

  it('the main file has no webhook table; the webhooks file has nothing else', async () => {
    const tables = (file: string) => {
      const conn = new BetterSqlite3(file, { readonly: true });
      try {
        return conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'webhook%' ORDER BY name").all();
      } finally {
        conn.close();
      }
    };
    assert.deepEqual(tables(fileOf(server.databaseUrl)), []);
    assert.deepEqual(tables(webhooksSqliteFile(server.databaseUrl)!), [{ name: 'webhook_attempts' }, { name: 'webhook_endpoints' }]);
  });
});

describe('migration 016: the webhook rows move to their own file exactly once, and back (issue 43)', sqliteOnly, () => {
  let database: TestDatabase;
  let store: Store;

  beforeEach(async () => {
    database = await createTestDatabase('sqlite');
    store = openStore(database.url);
  });
  afterEach(async () => {
    await store.close();
    await database.drop();
  });

  const endpointRow = (n: number): WebhookEndpoint => ({
    id: id(100 + n), account_id: id(1), country: 'sg', url: `https://example.com/hook/${n}`, secret: `whsec_${n}`, previous_secret: null,
    previous_secret_until: null, enabled: 1, created_at: '2026-12-01T00:00:00.000Z', position: `position-${n}`, failing_since: null,
    next_attempt_at: null, message_id: n === 0 ? 'msg_kept' : null, message_at: n === 0 ? '2026-12-01T00:00:01.000Z' : null,
    message_type: n === 0 ? 'listings.changed' : null, message_body: n === 0 ? '{"kept":true}' : null, message_ids: n === 0 ? 3 : null,
    message_end: n === 0 ? 'end-0' : null, attempt: n, lease_owner: null, lease_until: null, replay_from: null, replay_until: null,
    message_replay: 0, only_change: n === 1 ? 'removed' : null, only_usage_types: null,
  });
  const attemptRow = (n: number) => ({
    id: id(1000 + n), endpoint_id: id(100 + (n % 3)), at: `2026-12-01T00:00:${String(n % 60).padStart(2, '0')}.000Z`, message_id: `msg_${n}`,
    message_type: 'listings.changed', ids: 1, attempt: 1, status: 204, error: null, duration_ms: 5, replay: 0,
  });
  const endpoints = [0, 1, 2].map(endpointRow);
  // More than a page of the copy (200 rows).
  const attempts = Array.from({ length: 450 }, (_, n) => attemptRow(n));
  const mainTables = async () =>
    (await store.db.introspection.getTables()).map((t) => t.name).filter((name) => name.startsWith('webhook')).sort();
  const sorted = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => a.id.localeCompare(b.id));

  /** `store.migrate()` from 015: what it applied up to 016 (the later migrations follow it). */
  const migrateFrom015 = async () => (await store.migrate()).filter((name) => name < '017');

  /** A database as 015 left it, its webhook rows in the main file. */
  const at015 = async () => {
    await webhooksFileMigrator(store.webhooksDb).migrateToLatest();
    const { error } = await mainMigrator(store.db, store.webhooksDb).migrateTo('015_location_search');
    assert.equal(error, undefined);
    await store.db.insertInto('webhook_endpoints').values(endpoints).execute();
    for (let i = 0; i < attempts.length; i += 100) await store.db.insertInto('webhook_attempts').values(attempts.slice(i, i + 100)).execute();
  };

  it('up: every row, kept message included, in the webhooks file; none left in the main file; down: back', async () => {
    await at015();
    assert.deepEqual(await migrateFrom015(), ['016_webhooks_own_file']);
    assert.deepEqual(await mainTables(), []);
    assert.deepEqual(sorted(await store.webhooksDb.selectFrom('webhook_endpoints').selectAll().execute()), endpoints);
    assert.deepEqual(sorted(await store.webhooksDb.selectFrom('webhook_attempts').selectAll().execute()), attempts);
    // What the dashboard and the CLI read, through the store.
    assert.equal((await store.webhooks.listForAccount(id(1))).length, 3);
    assert.equal((await store.webhooks.attempts(id(100), 1000)).length, 150);
    assert.deepEqual(await store.migrate(), [], 'once');

    const { error } = await mainMigrator(store.db, store.webhooksDb).migrateTo('015_location_search');
    assert.equal(error, undefined);
    assert.deepEqual(await mainTables(), ['webhook_attempts', 'webhook_endpoints']);
    assert.deepEqual(sorted(await store.db.selectFrom('webhook_endpoints').selectAll().execute()), endpoints);
    assert.deepEqual(sorted(await store.db.selectFrom('webhook_attempts').selectAll().execute()), attempts);
    const indexes = (await store.db.selectFrom('sqlite_master' as never).select('name' as never).where('type' as never, '=', 'index' as never).execute())
      .map((r) => (r as { name: string }).name);
    assert.ok(indexes.includes('webhook_endpoints_account') && indexes.includes('webhook_attempts_endpoint'), 'the indexes made again');

    // And up again, after rows changed in the main file meanwhile: the main file's rows win.
    await store.db.deleteFrom('webhook_attempts').where('endpoint_id', '=', id(102)).execute();
    assert.deepEqual(await migrateFrom015(), ['016_webhooks_own_file']);
    assert.deepEqual(sorted(await store.webhooksDb.selectFrom('webhook_attempts').selectAll().execute()), attempts.filter((a) => a.endpoint_id !== id(102)));
  });

  it('a run that stopped after copying, before dropping (a crash): the next one copies again, nothing twice', async () => {
    await at015();
    // What such a run leaves: the copy committed in the webhooks file, stale by now, and the main file as it was.
    await store.webhooksDb.insertInto('webhook_endpoints').values([endpointRow(0), endpointRow(7)]).execute();
    await store.db.updateTable('webhook_endpoints').set({ position: 'moved-on' }).where('id', '=', id(100)).execute();
    assert.deepEqual(await migrateFrom015(), ['016_webhooks_own_file']);
    const moved = sorted(await store.webhooksDb.selectFrom('webhook_endpoints').selectAll().execute());
    assert.deepEqual(moved.map((e) => [e.id, e.position]), [[id(100), 'moved-on'], [id(101), 'position-1'], [id(102), 'position-2']]);
    assert.equal((await store.webhooksDb.selectFrom('webhook_attempts').selectAll().execute()).length, attempts.length);
  });

  it('a run that stopped after dropping, before recording (a crash): the next one finds nothing to move and keeps the rows', async () => {
    await at015();
    // Up to 016 only: the crash is 016's, the migrations after it not run yet.
    assert.equal((await mainMigrator(store.db, store.webhooksDb).migrateTo('016_webhooks_own_file')).error, undefined);
    await store.db.deleteFrom('kysely_migration' as never).where('name' as never, '=', '016_webhooks_own_file' as never).execute();
    assert.deepEqual(await migrateFrom015(), ['016_webhooks_own_file']);
    assert.equal((await store.webhooksDb.selectFrom('webhook_endpoints').selectAll().execute()).length, 3);
    assert.equal((await store.webhooksDb.selectFrom('webhook_attempts').selectAll().execute()).length, attempts.length);
  });

  it('a webhooks file lost after the move: migrate refuses, naming it, rather than forget every endpoint', async () => {
    await at015();
    await store.migrate();
    await store.close();
    const file = webhooksSqliteFile(database.url)!;
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    store = openStore(database.url);
    await assert.rejects(store.migrate(), (error: Error) => error.message.includes(file) && /missing or empty/.test(error.message));
  });
});
