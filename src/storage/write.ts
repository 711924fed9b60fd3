import { sql, type Kysely } from '#kysely';
import { yieldToEventLoop } from '../core/event-loop.js';
import { ChangeRecorder, type CommittedChanges } from './changes.js';
import { isPostgres, type Dialect } from './database.js';
import type { Database } from './schema.js';

/**
 * A write did not get its turn within DATABASE_BUSY_TIMEOUT_MS: another writer (an import being
 * swapped in, typically) held the database the whole time. Nothing was written.
 */
export class StoreBusyError extends Error {
  constructor(waitedMs: number) {
    super(`the database stayed busy with another write for ${Math.round(waitedMs / 1000)} s (an import being applied?); nothing was written, try again`);
    this.name = 'StoreBusyError';
  }
}

/**
 * Inside a write: no other write that takes the same `name` runs beside this one until it ends.
 * A count-then-insert under a cap needs it (keys per account and country, webhook endpoints):
 * SQLite's write lock serialises every write already (BEGIN IMMEDIATE); PostgreSQL's read
 * committed would let two transactions each count what was committed before either inserted, so
 * there a transaction-scoped advisory lock on the name's hash does it.
 */
export async function serialiseOn(tx: Kysely<Database>, name: string): Promise<void> {
  if (isPostgres(tx)) await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(tx);
}

export type WriteFn<T> = (tx: Kysely<Database>, changes: ChangeRecorder) => Promise<T>;

export interface WriterOptions {
  dialect: Dialect;
  /** How long a write waits for its turn before failing with StoreBusyError. */
  busyTimeoutMs: number;
  /** Called after each committed write with what it changed (the process's own change watcher). */
  onCommitted?: (changes: CommittedChanges) => void;
}

/**
 * Every write of the store goes through here: one transaction, its changes recorded in it
 * (changes.ts). On SQLite the transaction takes the write lock up front (BEGIN IMMEDIATE) and, when
 * another process holds it, fails at once (busy_timeout 0) and is tried again after a short,
 * growing, jittered pause, so the event loop never waits for a lock and reads go on meanwhile. On
 * PostgreSQL row locks wait in the server; deadlocks and serialisation failures are retried.
 */
export function createWriter(db: Kysely<Database>, options: WriterOptions) {
  /** One attempt on a connection held for the whole transaction. */
  const attempt = async <T>(conn: Kysely<Database>, fn: WriteFn<T>): Promise<{ result: T; changes: CommittedChanges }> => {
    await sql.raw(options.dialect === 'sqlite' ? 'begin immediate' : 'begin').execute(conn);
    try {
      const recorder = new ChangeRecorder(conn, options.dialect);
      const result = await fn(conn, recorder);
      await sql`commit`.execute(conn);
      return { result, changes: recorder.committed };
    } catch (error) {
      await sql`rollback`.execute(conn).catch(() => undefined);
      throw error;
    }
  };

  /** Attempts until committed, a non-contention error, or the busy timeout; `acquire` gives the connection of each attempt. */
  const retrying = async <T>(acquire: <R>(use: (conn: Kysely<Database>) => Promise<R>) => Promise<R>, fn: WriteFn<T>): Promise<T> => {
    const started = Date.now();
    for (let tries = 0; ; tries++) {
      try {
        // SQLite's driver is synchronous and Kysely chains its statements with promises: without
        // a turn of the event loop here, a loop of writes (a prune, a flush in batches) would run
        // every transaction in one turn and hold requests and timers for all of them (175,000
        // changes pruned: 1.9 s with no turn at all). With it, the loop is held one transaction at
        // a time. Before taking the connection, so that reads waiting for it go first.
        await yieldToEventLoop();
        const { result, changes } = await acquire((conn) => attempt(conn, fn));
        options.onCommitted?.(changes);
        return result;
      } catch (error) {
        if (!isRetryable(error)) throw error;
        const waited = Date.now() - started;
        if (waited >= options.busyTimeoutMs) throw new StoreBusyError(waited);
        // Between attempts the connection is given back, so this process's reads go on meanwhile.
        const pause = Math.min(200, 2 * 2 ** tries);
        await new Promise((resolve) => setTimeout(resolve, pause / 2 + Math.random() * (pause / 2)));
      }
    }
  };

  return Object.assign(<T>(fn: WriteFn<T>): Promise<T> => retrying((use) => db.connection().execute(use), fn), {
    /** The same, on a connection the caller holds already (an import's, which has its temporary table). */
    on: <T>(conn: Kysely<Database>, fn: WriteFn<T>): Promise<T> => retrying((use) => use(conn), fn),
  });
}

export type Write = ReturnType<typeof createWriter>;

/**
 * A write found that another one changed what it had read, in a way the database does not report
 * by itself (an import's swap: storage/listings.ts). Like a serialisation failure: rolled back and
 * done again.
 */
export class ConcurrentWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConcurrentWriteError';
  }
}

/** Lock contention, not a fault: SQLite busy or locked, PostgreSQL deadlock or serialisation failure, a ConcurrentWriteError. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ConcurrentWriteError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('SQLITE_BUSY') || code === 'SQLITE_LOCKED' || code === '40P01' || code === '40001';
}
