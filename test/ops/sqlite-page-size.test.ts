import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type BetterSqlite3 from 'better-sqlite3';
import { sql } from '#kysely';
import { importListings } from '../../src/import/import.js';
import { SQLITE_PAGE_SIZE } from '../../src/storage/database.js';
import { openStore } from '../../src/storage/index.js';
import { listingLine, ndjsonStream } from '../support/server.js';

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

/**
 * storage/database.ts: a new SQLite file gets SQLITE_PAGE_SIZE pages; an existing one keeps its
 * own. The connection's temporary database, where an import stages its lines, gets them in either.
 */
describe('SQLite page size', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'page-size-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const pragmas = (file: string) => {
    const db = new Sqlite(file, { readonly: true });
    try {
      return { pageSize: db.pragma('page_size', { simple: true }), journalMode: db.pragma('journal_mode', { simple: true }) };
    } finally {
      db.close();
    }
  };

  /** Migrates, imports two listings, and reads them back through a store on `file`. */
  async function useStore(file: string): Promise<void> {
    const store = openStore(`file:${file}`);
    try {
      await store.migrate();
      const owner = randomUUID();
      await store.accounts.create({ id: owner, name: 'Org', kind: 'organisation', created_at: new Date().toISOString() });
      assert.deepEqual(
        await importListings(store, ndjsonStream([listingLine(owner), listingLine(owner)]), new Date()),
        { inserted: 2, updated: 0, unchanged: 0 },
      );
      assert.equal((await store.db.selectFrom('listings').select('id').execute()).length, 2);
      // The import staged its lines in the connection's temporary database, with pages of that size too.
      const temp = await sql<{ page_size: number }>`pragma temp.page_size`.execute(store.db);
      assert.equal(temp.rows[0]?.page_size, SQLITE_PAGE_SIZE, 'the staging table\'s pages');
    } finally {
      await store.close();
    }
  }

  it(`a new database file gets ${SQLITE_PAGE_SIZE}-byte pages, in WAL mode`, async () => {
    const file = join(dir, 'new.db');
    await useStore(file);
    assert.deepEqual(pragmas(file), { pageSize: SQLITE_PAGE_SIZE, journalMode: 'wal' });
  });

  it('a database made with 4 KB pages (by an earlier release) keeps them, and works as before', async () => {
    const file = join(dir, 'old.db');
    const old = new Sqlite(file);
    old.pragma('page_size = 4096');
    old.pragma('journal_mode = WAL');
    old.exec('create table earlier (x integer)');
    old.close();
    await useStore(file);
    assert.deepEqual(pragmas(file), { pageSize: 4096, journalMode: 'wal' });
  });
});
