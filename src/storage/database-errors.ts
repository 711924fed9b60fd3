import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from '#kysely';

/**
 * Which errors came from the database: a statement it refused, a connection it lost or could not
 * make, a pool that could not give one. A failed request whose error is one of these is logged as
 * the database's failure (`reason: database_unavailable`, http/app.ts), not as a fault of the
 * code, whatever the driver's error looks like (issue 40 item 10).
 */
const fromDatabase = new WeakSet<object>();

/** True when `error`, or an error it was caused by, came from the database. */
export function isDatabaseError(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (fromDatabase.has(e)) return true;
  }
  return false;
}

function mark(error: unknown): never {
  if (typeof error === 'object' && error !== null) fromDatabase.add(error);
  throw error;
}

/** Runs a driver call, marking its failure, thrown (SQLite's driver throws synchronously) or rejected. */
function tagged<T>(call: () => Promise<T>): Promise<T> {
  let promise: Promise<T>;
  try {
    promise = call();
  } catch (error) {
    return Promise.reject(error).catch(mark);
  }
  return promise.catch(mark);
}

/**
 * A Kysely driver whose every failure is marked as the database's (above). Connections are
 * handed out wrapped and given back to the driver as it made them.
 */
export class ErrorMarkingDriver implements Driver {
  private readonly made = new WeakMap<DatabaseConnection, DatabaseConnection>();

  constructor(private readonly driver: Driver) {}

  init(): Promise<void> {
    return tagged(() => this.driver.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await tagged(() => this.driver.acquireConnection());
    const wrapped: DatabaseConnection = {
      executeQuery: <R>(query: CompiledQuery): Promise<QueryResult<R>> => tagged(() => connection.executeQuery<R>(query)),
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
    this.made.set(wrapped, connection);
    return wrapped;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return tagged(() => this.driver.beginTransaction(this.original(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return tagged(() => this.driver.commitTransaction(this.original(connection)));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return tagged(() => this.driver.rollbackTransaction(this.original(connection)));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['savepoint']>>[2]): Promise<void> {
    return tagged(() => this.driver.savepoint!(this.original(connection), name, compile));
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['rollbackToSavepoint']>>[2]): Promise<void> {
    return tagged(() => this.driver.rollbackToSavepoint!(this.original(connection), name, compile));
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver['releaseSavepoint']>>[2]): Promise<void> {
    return tagged(() => this.driver.releaseSavepoint!(this.original(connection), name, compile));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.driver.releaseConnection(this.original(connection));
  }

  destroy(): Promise<void> {
    return this.driver.destroy();
  }

  private original(connection: DatabaseConnection): DatabaseConnection {
    return this.made.get(connection) ?? connection;
  }
}
