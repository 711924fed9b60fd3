import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/storage/index.js';
import { issueKey } from '../../src/auth/keys.js';
import { createMigratedTestDatabase, TEST_STORE } from '../support/database.js';

/**
 * The suite's own support (test/support/database.ts): on PostgreSQL an ended world's database is
 * emptied and taken again by the next world instead of being dropped. The next world must find it
 * exactly as a fresh copy of the template, or not get it at all.
 */
const skip = TEST_STORE === 'postgres' ? false : 'the PostgreSQL run only: SQLite worlds are file copies';

/** Every table's rows, and the change sequence's next value, as one comparable value. */
async function contents(url: string): Promise<Record<string, unknown>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = (await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)).rows.map((r) => r.name);
    const found: Record<string, unknown> = {};
    for (const table of tables) found[table] = (await client.query(`SELECT * FROM "${table}" ORDER BY 1`)).rows;
    found.sequence = (await client.query(`SELECT nextval('listing_changes_seq_seq') AS next`)).rows;
    return found;
  } finally {
    await client.end();
  }
}

describe('PostgreSQL test databases are taken again only as the template left them', { skip }, () => {
  it('a used database comes back empty, with the rows and sequences its migrations made, and it is the one given back', async () => {
    const fresh = await createMigratedTestDatabase();
    const template = await contents(fresh.url);
    // contents() moved the sequence on: the database given back must have it reset too.
    const used = fresh;
    const store = openStore(used.url, { listenForChanges: false });
    await store.start();
    const accountId = randomUUID();
    await store.accounts.create({ id: accountId, name: 'Used Ltd', kind: 'organisation', created_at: new Date().toISOString() });
    await issueKey(store, { accountId, country: 'sg', label: 'used', now: new Date() });
    await store.close();
    await used.drop();

    const next = await createMigratedTestDatabase();
    try {
      assert.equal(next.url, used.url, 'the ended world\'s database was taken again');
      assert.deepEqual(await contents(next.url), template);
    } finally {
      await next.drop();
    }
  });

  it('a database whose schema a test changed, or that is still connected to, is dropped, not taken again', async () => {
    const altered = await createMigratedTestDatabase();
    const client = new pg.Client({ connectionString: altered.url });
    await client.connect();
    await client.query('ALTER TABLE listings RENAME TO listings_moved_away');
    await client.end();
    await altered.drop();

    const held = await createMigratedTestDatabase();
    assert.notEqual(held.url, altered.url);
    const holder = new pg.Client({ connectionString: held.url });
    await holder.connect();
    holder.on('error', () => {}); // the drop ends this connection (WITH FORCE)
    await held.drop();

    const next = await createMigratedTestDatabase();
    try {
      assert.notEqual(next.url, altered.url);
      assert.notEqual(next.url, held.url);
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      const names = (await admin.query<{ datname: string }>(`SELECT datname FROM pg_database`)).rows.map((r) => r.datname);
      await admin.end();
      for (const url of [altered.url, held.url]) assert.ok(!names.includes(new URL(url).pathname.slice(1)), `${url} is dropped`);
    } finally {
      await next.drop();
      await holder.end().catch(() => {});
    }
  });
});
