import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../../src/storage/index.js';
import { isRunning } from './pids.js';
import { until } from './until.js';

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
 * dropping it, about 300 ms on PostgreSQL; a copy takes a few ms on SQLite. On PostgreSQL a copy
 * still takes about 200 ms, so an ended world's database is emptied and taken again (`giveBack`).
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
  const spare = spareDatabases.pop();
  const name = spare ?? (await createScratchPostgres(admin, `listings_test_${process.pid}`, template.name)).name;
  return { url: databaseUrl(admin, name), drop: () => giveBack(admin, name, template) };
}

const SQLITE_NAME = 'test.db';
let sqliteTemplate: Promise<{ dir: string }> | undefined;
let postgresTemplate: Promise<PostgresTemplate> | undefined;

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
 * closed first, and nothing else connects to it), and what a world's database must be emptied back
 * to (`giveBack`). Dropped when the process's work is done, with the spare databases; any left by
 * a process that was killed are dropped by the next one that makes its own.
 */
async function migratedPostgresTemplate(adminUrl: string): Promise<PostgresTemplate> {
  const name = `listings_template_${process.pid}`;
  await dropDatabasesOfEndedProcesses(adminUrl);
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const store = openStore(databaseUrl(adminUrl, name), { listenForChanges: false });
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
  const template = await withClient(databaseUrl(adminUrl, name), readTemplate);
  // beforeExit comes when nothing is left to do, and again after these drops have been done.
  let dropped = false;
  process.on('beforeExit', () => {
    if (dropped) return;
    dropped = true;
    for (const db of [...spareDatabases.splice(0), name]) adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
  });
  return { name, ...template };
}

/**
 * A migrated database as the template has it: its schema (as a fingerprint), the rows its
 * migrations wrote (the auth version, the feed's secret), and its sequences' first values.
 */
interface PostgresTemplate {
  name: string;
  schema: string;
  /** Every table but the migrator's own, and the rows each held (JSON). */
  tables: Array<{ table: string; rows: string }>;
  sequences: Array<{ sequence: string; start: string }>;
}

/** The tables, indexes and columns (name, type, not null) of the public schema, as one hash. */
const SCHEMA_FINGERPRINT = `SELECT md5(string_agg(c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull, ',' ORDER BY c.relname, a.attnum)) AS schema
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped`;

async function readTemplate(client: pg.Client): Promise<Omit<PostgresTemplate, 'name'>> {
  const schema = (await client.query<{ schema: string }>(SCHEMA_FINGERPRINT)).rows[0]!.schema;
  const names = (await client.query<{ name: string }>(`SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely\\_migration%' ORDER BY 1`)).rows;
  const tables = [];
  for (const { name: table } of names) tables.push({ table, rows: (await client.query<{ rows: string }>(`SELECT coalesce(json_agg(t), '[]')::text AS rows FROM ${table} t`)).rows[0]!.rows });
  const sequences = (await client.query<{ sequence: string; start: string }>(`SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) AS sequence, start_value::text AS start FROM pg_sequences WHERE schemaname = 'public'`)).rows;
  return { schema, tables, sequences };
}

/**
 * PostgreSQL databases of this process's worlds that have ended, emptied back to the template's
 * state, for the next world to take: creating one from the template costs about 200 ms of the
 * machine's time (the copy is written through the write-ahead log), emptying one a few ms. A
 * world's database is given back only when nothing is connected to it any more and its schema is
 * still the template's (a test may drop or rename a table); otherwise it is dropped.
 */
const spareDatabases: string[] = [];

async function giveBack(adminUrl: string, name: string, template: PostgresTemplate): Promise<void> {
  const emptied = await withClient(databaseUrl(adminUrl, name), async (client) => {
    // A closed store's connections leave the server's list a moment after their sockets close.
    const alone = async () => (await client.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows[0]!.n === '0';
    if (!(await until(alone, { what: 'the last connection to leave', timeoutMs: 500 }).then(() => true, () => false))) return false;
    if ((await client.query<{ schema: string }>(SCHEMA_FINGERPRINT)).rows[0]!.schema !== template.schema) return false;
    // One round trip. Foreign keys are not checked while emptying and refilling (a superuser's session setting).
    const statements = ['BEGIN', 'SET LOCAL session_replication_role = replica'];
    for (const { table, rows } of template.tables) {
      statements.push(`DELETE FROM ${table}`);
      if (rows !== '[]') statements.push(`INSERT INTO ${table} SELECT * FROM json_populate_recordset(null::${table}, ${client.escapeLiteral(rows)})`);
    }
    for (const { sequence, start } of template.sequences) statements.push(`SELECT setval(${client.escapeLiteral(sequence)}, ${Number(start)}, false)`);
    await client.query([...statements, 'COMMIT'].join(';\n'));
    return true;
  }).catch(() => false);
  if (emptied) spareDatabases.push(name);
  else await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** Runs `fn` on a connection of its own to `url`, ended afterwards. */
async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The templates and worlds' databases (`listings_template_<pid>`, `listings_test_<pid>_...`) of processes that have ended. */
async function dropDatabasesOfEndedProcesses(adminUrl: string): Promise<void> {
  const names = await adminRows(adminUrl, `SELECT datname FROM pg_database WHERE datname LIKE 'listings\\_template\\_%' OR datname LIKE 'listings\\_test\\_%'`);
  for (const name of names) {
    const pid = Number(/^listings_(?:template|test)_(\d+)/.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

/**
 * A new PostgreSQL database on the server of `adminUrl`, named `<prefix>_<random>`: empty, or a
 * copy of `template`; drop() removes it.
 */
export async function createScratchPostgres(adminUrl: string, prefix: string, template?: string): Promise<TestDatabase & { name: string }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY WAL_LOG`);
  return {
    name,
    url: databaseUrl(adminUrl, name),
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * One connection per admin URL, kept for the process (connecting and ending one took 40-100 ms
 * of each database made and dropped), in a pool of one: it runs the admin statements one at a
 * time, makes the connection again after the server ended it (a test that restarts it), and, idle,
 * does not hold the process up (pg's `allowExitOnIdle`), so that a test file's process still ends
 * when its tests have.
 */
const adminPools = new Map<string, pg.Pool>();

function adminPool(adminUrl: string): pg.Pool {
  let pool = adminPools.get(adminUrl);
  if (pool === undefined) {
    pool = new pg.Pool({ connectionString: adminUrl, max: 1, idleTimeoutMillis: 0, allowExitOnIdle: true });
    // An idle connection the server ended: the pool drops it and connects again next time.
    pool.on('error', () => {});
    adminPools.set(adminUrl, pool);
  }
  return pool;
}

async function adminRows(adminUrl: string, text: string): Promise<string[]> {
  return (await adminPool(adminUrl).query<{ datname: string }>(text)).rows.map((r) => r.datname);
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  await adminRows(adminUrl, text);
}
