import { mkdirSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, sql, type DatabaseConnection, type Driver, type SqliteDatabase, type TransactionSettings } from '#kysely';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { TurnBudget } from '../core/turn-budget.js';
import { ErrorMarkingDriver } from './database-errors.js';
import type { Database } from './schema.js';

/**
 * The drivers are loaded by the branch that uses them: a SQLite command never loads `pg` (~40 ms)
 * and a PostgreSQL server never loads the native SQLite addon. Both are CommonJS, so a synchronous
 * require keeps openDatabase synchronous.
 */
const require = createRequire(import.meta.url);

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseOptions {
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL statement timeout, so a stuck query cannot hang a request. 0: none of ours (the
   * server's own `statement_timeout`, if it has one, applies), for work that is not a request
   * (an import, whose statements grow with its file).
   */
  statementTimeoutMs?: number;
  /**
   * SQLite: create the file (and its folder) when it does not exist (the default), or fail
   * instead. The CLI creates one only for `migrate`, `serve` and `demo` (src/cli/database-file.ts):
   * any other command on a missing file would work on a new, empty database that no server uses.
   */
  createIfMissing?: boolean;
}

export interface OpenDatabase {
  db: Kysely<Database>;
  dialect: Dialect;
  /** SQLite only: the connection itself, for the change watcher's prepared statements (changes.ts). */
  sqlite?: BetterSqlite3.Database;
  /** SQLite in a file: the file this process opened, for the readiness check (`checkReads`). */
  sqliteFile?: SqliteFile;
}

/**
 * Opens `file:PATH` as embedded SQLite (creating the file and its folder unless createIfMissing
 * is false) or `postgres://` as PostgreSQL.
 */
export function openDatabase(url: string, options: DatabaseOptions = {}): OpenDatabase {
  if (url.startsWith('file:')) return openSqlite(url, options.createIfMissing ?? true);
  return openPostgres(url, options);
}

/**
 * The absolute path of the SQLite file a `file:PATH` URL names (a relative PATH is relative to the
 * current folder), or undefined for PostgreSQL and `file::memory:`. The one place that resolves
 * it, so that what the CLI checks is the file openDatabase opens.
 */
export function sqliteFile(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = url.slice('file:'.length);
  return path === ':memory:' ? undefined : resolve(path);
}

/**
 * The SQLite file of the webhook delivery state (issue 43): the main file's path followed by
 * `.webhooks.sqlite` (`data/listings.db` keeps it in `data/listings.db.webhooks.sqlite`), or
 * undefined for PostgreSQL (one database) and `file::memory:` (an in-memory one of its own).
 * The deliverer writes there, under that file's own write lock, so that a delivery never waits for
 * a write to the main file (an import's swap holds it for seconds). The two files are one database:
 * copied, moved, backed up and restored together.
 */
export function webhooksSqliteFile(url: string): string | undefined {
  const main = sqliteFile(url);
  return main === undefined ? undefined : `${main}${WEBHOOKS_FILE_SUFFIX}`;
}

export const WEBHOOKS_FILE_SUFFIX = '.webhooks.sqlite';

/**
 * SQLite only: the webhook delivery state's database (webhooksSqliteFile), on a connection of its
 * own; created when missing (the main file, opened first, says whether there is a database here).
 */
export function openWebhooksSqlite(url: string): OpenDatabase {
  const file = webhooksSqliteFile(url);
  return openSqlite(file === undefined ? 'file::memory:' : `file:${file}`, true);
}

function openSqlite(url: string, createIfMissing: boolean): OpenDatabase {
  const file = sqliteFile(url) ?? ':memory:';
  if (file !== ':memory:' && createIfMissing) mkdirSync(dirname(file), { recursive: true });
  const Sqlite = require('better-sqlite3') as typeof BetterSqlite3;
  const sqlite = new Sqlite(file, { fileMustExist: file !== ':memory:' && !createIfMissing });
  // A new database gets pages of SQLITE_PAGE_SIZE; an existing one keeps its own (the page size
  // is fixed once the file is written, and this statement then does nothing). It comes first:
  // journal_mode writes the file's header. The connection's temporary database, made later,
  // gets them too (an import stages rows of about 2.3 KB there: storage/listings.ts).
  sqlite.pragma(`page_size = ${SQLITE_PAGE_SIZE}`);
  // WAL: readers never wait for the writer, nor the writer for readers. busy_timeout 0: a writer
  // that finds the lock taken fails at once instead of waiting for it synchronously, which would
  // freeze the event loop; writes wait their turn asynchronously instead (write.ts).
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 0');
  sqlite.pragma('foreign_keys = ON');
  return {
    db: new Kysely<Database>({ dialect: new TurnSharingSqliteDialect({ database: withStatementCache(sqlite) }) }),
    dialect: 'sqlite',
    sqlite,
    sqliteFile: file === ':memory:' ? undefined : new SqliteFile(file),
  };
}

/**
 * The page size of a new SQLite database. A listing row is about 2 KB (its columns and its JSON,
 * migration 009), so SQLite's default 4 KB pages hold one or two and leave a quarter of the file
 * empty; 16 KB pages hold eight. An import writes, logs and checkpoints a quarter fewer bytes in
 * four times fewer pages: a 100,000-line import took 6.3-7.0 s instead of 7.4-8.5 s, and a
 * database of 76,000 listings is 16% smaller (213 MB instead of 253).
 */
export const SQLITE_PAGE_SIZE = 16_384;

/**
 * How long statements may hold one turn of the event loop before the next ones wait for a later
 * turn (core/turn-budget.ts). A window is overrun by at most one statement (or transaction), a
 * turn can hold two windows, and it also parses and answers what arrived. 1 ms rather than 3: the
 * cold requests of a burst are answered over more turns, each shorter, and the ones answered are
 * written out sooner. Two servers side by side on the scale bench's data, caches off, wrk rounds
 * taking them in turn: 24,000-24,600 list pages of 20 a second against 17,800-18,300, details
 * 17,700-18,400 against 14,200-14,500; the mixed cold load's event-loop delay p99 6.0-6.8 ms
 * against 8.4-9.3 (2 ms: 6.9-8.4).
 */
export const SQLITE_TURN_BUDGET_MS = 1;

/**
 * SQLite with every statement (or transaction) taking its share of the turn, its errors marked as
 * the database's (database-errors.ts): from taking the
 * connection to giving it back is one step of the TurnBudget. The wait is before the connection is
 * taken, so no one waits for the budget while holding it.
 */
class TurnSharingSqliteDialect extends SqliteDialect {
  private readonly budget = new TurnBudget(SQLITE_TURN_BUDGET_MS);

  override createDriver(): Driver {
    const driver = super.createDriver();
    const budget = this.budget;
    return new ErrorMarkingDriver({
      init: () => driver.init(),
      async acquireConnection(): Promise<DatabaseConnection> {
        await budget.take();
        try {
          return await driver.acquireConnection();
        } catch (error) {
          budget.done();
          throw error;
        }
      },
      beginTransaction: (connection: DatabaseConnection, settings: TransactionSettings) => driver.beginTransaction(connection, settings),
      commitTransaction: (connection: DatabaseConnection) => driver.commitTransaction(connection),
      rollbackTransaction: (connection: DatabaseConnection) => driver.rollbackTransaction(connection),
      savepoint: driver.savepoint?.bind(driver),
      rollbackToSavepoint: driver.rollbackToSavepoint?.bind(driver),
      releaseSavepoint: driver.releaseSavepoint?.bind(driver),
      async releaseConnection(connection: DatabaseConnection): Promise<void> {
        try {
          await driver.releaseConnection(connection);
        } finally {
          budget.done();
        }
      },
      destroy: () => driver.destroy(),
    });
  }
}

/** PostgreSQL, its errors marked as the database's (database-errors.ts). */
class ErrorMarkingPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return new ErrorMarkingDriver(super.createDriver());
  }
}

/**
 * Kysely asks the driver to prepare every statement it runs, and preparing costs about twice what
 * running a one-row lookup does (~20 us against ~10 us). The queries of the read path are few and
 * repeated, so prepared statements are kept by their SQL text, least recently used dropped first.
 * Reusing one is safe: Kysely runs one statement at a time on the connection, and SQLite prepares
 * a statement again by itself when the schema it was made for changes.
 */
function withStatementCache(sqlite: BetterSqlite3.Database): SqliteDatabase {
  const statements = new LRUCache<string, BetterSqlite3.Statement>({ max: 500 });
  return {
    prepare(text) {
      let statement = statements.get(text);
      if (statement === undefined) {
        statement = sqlite.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  };
}

function openPostgres(url: string, options: DatabaseOptions): OpenDatabase {
  const { Pool } = require('pg') as typeof pg;
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
  const pool = new Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Bounded failure when the database is away: connecting, the server-side statement, and the
    // wait for an answer on a connection that went silent are all capped; the last a second
    // after the server would have cancelled the statement, so that its own error comes first.
    connectionTimeoutMillis: 2000,
    ...(statementTimeoutMs > 0
      ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 1000 }
      : // No limit on a statement, so none on the wait for its answer either: a connection whose
        // server went away without a word is found out by TCP keepalive instead.
        { keepAlive: true, keepAliveInitialDelayMillis: 10_000 }),
  });
  // A connection that is lost (the server restarted or failed over, an administrator ended it)
  // emits 'error' on its client. The pool listens to its idle clients and drops them; a client
  // checked out (a query or a transaction in progress, or between two statements) is left with no
  // listener, and an 'error' event with no listener ends the process (issue 40 item 1). The
  // statement in progress fails with the error itself, a client that lost its connection is not
  // put back in the pool, and the outage is told by the readiness check (http/readiness.ts), so
  // the events need no handling here beyond being heard.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return { db: new Kysely<Database>({ dialect: new ErrorMarkingPostgresDialect({ pool }) }), dialect: 'postgres' };
}

/**
 * The tables the API's read path reads: keys and origins (D4), the listings, and the change
 * tracking that keeps its caches and indexes exact (changes.ts). Not the dashboard's nor usage's:
 * the API answers without them.
 */
export const API_READ_TABLES = ['api_keys', 'allowed_origins', 'listings', 'listing_changes', 'tenant_versions', 'tenant_listing_counts', 'store_versions'] as const;

/**
 * One statement that reads a row of each of those tables (a scalar subquery each, valid on both
 * engines): it fails when one is missing or its first pages cannot be read, and costs a few page
 * reads. `select 1` alone answered while every list request failed (issue 30 item 4). The change
 * log is read from its newest end, by its primary key: pruning deletes its oldest rows, which a
 * scan from the start would step over one by one until PostgreSQL's vacuum removed them.
 */
const READS_CHECK = `select ${API_READ_TABLES.map((table) => `(select 1 from ${table}${table === 'listing_changes' ? ' order by seq desc' : ''} limit 1) as ${table}`).join(', ')}`;

/**
 * Readiness (issue 30 item 4): resolves when the database can serve the API's reads, on the
 * connections the API uses; on SQLite also when the file this process opened is still the one at
 * its path and can be read (SqliteFile). Throws an error that says what is wrong otherwise.
 */
export async function checkReads(db: Kysely<Database>, sqliteFile?: SqliteFile): Promise<void> {
  await sql.raw(READS_CHECK).execute(db);
  await sqliteFile?.check();
}

/**
 * The SQLite file a process opened. The serving connection answers from its page cache, and in
 * WAL mode it trusts that cache for as long as the write-ahead log says nothing changed: a file
 * replaced, truncated or overwritten under it goes unseen until it next reads from disk (and a
 * file moved away or deleted is read for ever from the inode it holds, while the CLI writes to a
 * new file at the path). So the check looks at the path itself.
 */
export class SqliteFile {
  private readonly dev: number;
  private readonly ino: number;

  constructor(readonly path: string) {
    const opened = statSync(path);
    this.dev = opened.dev;
    this.ino = opened.ino;
  }

  async check(): Promise<void> {
    let now;
    try {
      now = await stat(this.path);
    } catch (error) {
      throw new Error(`the database file ${this.path} cannot be found (${(error as { code?: string }).code ?? 'stat failed'})`, { cause: error });
    }
    if (now.dev !== this.dev || now.ino !== this.ino) {
      throw new Error(`the database file ${this.path} was replaced since this process opened it; restart the process to serve the new file`);
    }
    // A connection of its own, opened for this check only, reads the header and the schema from
    // the file and a page of each table, without waiting for any lock (timeout 0).
    const Sqlite = require('better-sqlite3') as typeof BetterSqlite3;
    let probe: BetterSqlite3.Database | undefined;
    try {
      probe = new Sqlite(this.path, { readonly: true, fileMustExist: true, timeout: 0 });
      probe.prepare(READS_CHECK).get();
    } catch (error) {
      // Locked by a writer at this instant (a checkpoint, say): the file is there and readable.
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return;
      throw error;
    } finally {
      probe?.close();
    }
  }
}

/** Which engine a Kysely instance (or a transaction of one) runs on, for the few statements that differ. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
