import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../../src/storage/index.js';
import { isRunning } from './pids.js';

/**
 * Which store the suites run on: SQLite by default; PostgreSQL when the runner sets
 * TEST_STORE=postgres (scripts/run-tests.js does, when TEST_DATABASE_URL is set).
 */
export const TEST_STORE: 'sqlite' | 'postgres' = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

export interface TestDatabase {
  url: string;
  /** Removes the database (PostgreSQL) or its folder (SQLite). */
  drop(): Promise<void>;
}

/**
 * A fresh, empty database of the suite's store: an empty temp SQLite file (the CLI creates a
 * missing one only for migrate, serve and demo, with a notice: src/cli/database-file.ts), or a new
 * PostgreSQL database created from TEST_DATABASE_URL (its own database per test server, dropped
 * afterwards).
 */
export async function createTestDatabase(store = TEST_STORE): Promise<TestDatabase> {
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'listings-db-'));
    const file = join(dir, 'test.db');
    writeFileSync(file, '');
    return { url: `file:${file}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) throw new Error('TEST_STORE=postgres needs TEST_DATABASE_URL');
  return createScratchPostgres(admin, `listings_test_${process.pid}`);
}

/**
 * A fresh database of the suite's store with every migration applied, as a server's store finds it
 * after its first start: a copy of a template this process migrated once (issue 42: a fresh world
 * per test). Migrating a new database each time took about 20 ms on SQLite and, with creating and
 * dropping it, about 300 ms on PostgreSQL; a copy takes a few ms, and about 35 ms on PostgreSQL.
 * The service's own `store.migrate()` then finds nothing to apply.
 */
export async function createMigratedTestDatabase(store = TEST_STORE): Promise<TestDatabase> {
  if (store === 'sqlite') {
    const template = await (sqliteTemplate ??= migratedSqliteTemplate());
    const dir = mkdtempSync(join(tmpdir(), 'listings-db-'));
    // The main file and the webhooks file (storage/database.ts webhooksSqliteFile), checkpointed and
    // closed: no write-ahead log is left to copy, and a copy of one would go with its file anyway.
    for (const name of readdirSync(template.dir).filter((n) => !n.endsWith('-shm'))) copyFileSync(join(template.dir, name), join(dir, name));
    return { url: `file:${join(dir, SQLITE_NAME)}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) throw new Error('TEST_STORE=postgres needs TEST_DATABASE_URL');
  const template = await (postgresTemplate ??= migratedPostgresTemplate(admin));
  return createScratchPostgres(admin, `listings_test_${process.pid}`, template);
}

const SQLITE_NAME = 'test.db';
let sqliteTemplate: Promise<{ dir: string }> | undefined;
let postgresTemplate: Promise<string> | undefined;

/** An SQLite database migrated once per process, in a folder removed when the process exits. */
async function migratedSqliteTemplate(): Promise<{ dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'listings-template-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, SQLITE_NAME);
  writeFileSync(file, '');
  const store = openStore(`file:${file}`);
  try {
    await store.migrate();
  } finally {
    // Closing the last connection checkpoints the write-ahead log into the file and removes it.
    await store.close();
  }
  return { dir };
}

/**
 * A PostgreSQL database migrated once per process, `listings_template_<pid>`, to clone with
 * `CREATE DATABASE ... TEMPLATE` (which needs it to have no connection: the migrating store is
 * closed first, and nothing else connects to it). Dropped when the process's work is done; one left
 * by a process that was killed is dropped by the next one that makes its own.
 */
async function migratedPostgresTemplate(adminUrl: string): Promise<string> {
  const name = `listings_template_${process.pid}`;
  await dropTemplatesOfEndedProcesses(adminUrl);
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const store = openStore(url.toString(), { listenForChanges: false });
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
  // beforeExit comes when nothing is left to do, and again after this drop has been done.
  let dropped = false;
  process.on('beforeExit', () => {
    if (dropped) return;
    dropped = true;
    adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  });
  return name;
}

async function dropTemplatesOfEndedProcesses(adminUrl: string): Promise<void> {
  const names = await adminRows(adminUrl, `SELECT datname FROM pg_database WHERE datname LIKE 'listings\\_template\\_%'`);
  for (const name of names) {
    const pid = Number(name.slice('listings_template_'.length));
    if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/**
 * A new PostgreSQL database on the server of `adminUrl`, named `<prefix>_<random>`: empty, or a
 * copy of `template`; drop() removes it.
 */
export async function createScratchPostgres(adminUrl: string, prefix: string, template?: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY WAL_LOG`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * One connection per admin URL, kept for the process (connecting and ending one took 40-100 ms
 * of each database made and dropped). Its socket holds the process up only while a query is on
 * its way, so that a test file's process still ends when its tests have.
 */
const adminClients = new Map<string, Promise<pg.Client>>();
let adminQueue: Promise<unknown> = Promise.resolve();

async function adminClient(adminUrl: string): Promise<pg.Client> {
  let client = adminClients.get(adminUrl);
  if (client === undefined) {
    client = (async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      // A connection the server ended (a test that restarts it) is made again next time.
      c.on('error', () => adminClients.delete(adminUrl));
      c.on('end', () => adminClients.delete(adminUrl));
      return c;
    })();
    adminClients.set(adminUrl, client);
    client.catch(() => adminClients.delete(adminUrl));
  }
  return client;
}

/** The socket under a pg client (not in its types). */
const socketOf = (client: pg.Client) => (client as unknown as { connection: { stream: { ref(): void; unref(): void } } }).connection.stream;

async function adminRows(adminUrl: string, text: string): Promise<string[]> {
  const run = adminQueue.then(async () => {
    const client = await adminClient(adminUrl);
    socketOf(client).ref();
    try {
      return (await client.query<{ datname: string }>(text)).rows.map((r) => r.datname);
    } finally {
      socketOf(client).unref();
    }
  });
  adminQueue = run.catch(() => {});
  return run;
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  await adminRows(adminUrl, text);
}
