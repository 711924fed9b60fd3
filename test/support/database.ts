import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

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

/** A new, empty PostgreSQL database on the server of `adminUrl`, named `<prefix>_<random>`; drop() removes it. */
export async function createScratchPostgres(adminUrl: string, prefix: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
