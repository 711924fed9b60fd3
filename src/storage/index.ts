import { createAccountsRepository } from './accounts.js';
import { createAuditRepository } from './audit.js';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { CHANGES_CHANNEL, PostgresChangeFeed } from './change-feed.js';
import { openDatabase, ping, type DatabaseOptions, type Dialect } from './database.js';
import { createFormsRepository } from './forms.js';
import { createKeysRepository } from './keys.js';
import { createListingsRepository } from './listings.js';
import { migrateToLatest } from './migrate.js';
import { createOriginsRepository } from './origins.js';
import { createSessionsRepository, createSignInFailuresRepository } from './sessions.js';
import { createUsersRepository } from './users.js';

export type { Account } from './accounts.js';
export type { ApiKeyRecord } from './keys.js';
export type { ListingRow, Visibility } from './listings.js';
export type { AllowedOrigin } from './origins.js';
export type { AuditEntry } from './audit.js';
export type { FormUse } from './forms.js';
export type { DashboardSession, SignInFailure } from './sessions.js';
export type { DashboardUser } from './users.js';
export type { AccountKind } from './schema.js';
export type { Dialect } from './database.js';

/**
 * The storage capability: one query layer (Kysely) over SQLite or PostgreSQL, as repositories of
 * named queries. Nothing outside this folder builds SQL.
 */
export interface StoreOptions extends DatabaseOptions {
  /**
   * PostgreSQL: listen for other processes' writes (LISTEN/NOTIFY), for a long-running server
   * whose caches must see them (D4). One-shot tools leave it off.
   */
  listenForChanges?: boolean;
  onProblem?: (error: unknown) => void;
}

export function openStore(url: string, options: StoreOptions = {}) {
  const { db, dialect, dataVersion } = openDatabase(url, options);
  const feed = dialect === 'postgres' && options.listenForChanges ? new PostgresChangeFeed(url, options.onProblem) : undefined;
  // Writes made through this store (the dashboard, the demo) are counted here; other processes'
  // writes show in SQLite's data_version, or arrive by NOTIFY on PostgreSQL. Together they version
  // every cache of stored data.
  let localWrites = 0;
  let memo: number | undefined;
  const changed = async (): Promise<void> => {
    localWrites++;
    memo = undefined;
    if (dialect === 'postgres') await sql`select pg_notify(${CHANGES_CHANNEL}, '')`.execute(db);
  };
  return {
    dialect: dialect as Dialect,
    accounts: createAccountsRepository(db, changed),
    listings: createListingsRepository(db, changed),
    keys: createKeysRepository(db, changed),
    origins: createOriginsRepository(db, changed),
    // The dashboard's own tables (members, sessions, audit log, failed sign-ins, used forms). The
    // API never reads them, so their writes leave the change version alone: moving it would only
    // empty the API's caches. Key and origin changes made in the dashboard go through `keys` and `origins`.
    users: createUsersRepository(db),
    sessions: createSessionsRepository(db),
    signInFailures: createSignInFailuresRepository(db),
    audit: createAuditRepository(db),
    forms: createFormsRepository(db),
    /**
     * Changes whenever stored data may have changed, here or (SQLite) in another process. Caches
     * compare it on every read and drop what they hold when it moved (D4: revocation is seen by
     * the very next request). For PostgreSQL, remote changes arrive by NOTIFY instead.
     */
    changeVersion(): number {
      // Read once per turn of the event loop and reused until the next: reading data_version costs
      // as much as a small query. Still exact for D4: a request sent after a change was committed
      // cannot be in the same batch of I/O as a request read before the commit, and this
      // process's own writes reset the memo at once.
      if (memo === undefined) {
        memo = localWrites + (dataVersion?.() ?? 0) + (feed?.version() ?? 0);
        setImmediate(() => {
          memo = undefined;
        });
      }
      return memo;
    },
    /** Records a write made outside the repositories (tests, tools). */
    markChanged: changed,
    /** Starts the PostgreSQL change listener, if asked for. */
    start: async (): Promise<void> => feed?.start(),
    /**
     * PostgreSQL: sends a marker notification and waits until it comes back through LISTEN, so a
     * command that changed keys or origins returns only once the change has been broadcast to
     * every listening instance (D4). Needs a store opened with listenForChanges.
     */
    async broadcastSettled(timeoutMs = 2000): Promise<boolean> {
      if (feed === undefined) return true;
      const marker = randomUUID();
      const arrived = feed.waitFor(marker, timeoutMs);
      await sql`select pg_notify(${CHANGES_CHANNEL}, ${marker})`.execute(db);
      return arrived;
    },
    migrate: () => migrateToLatest(db),
    ping: () => ping(db),
    close: async (): Promise<void> => {
      await feed?.close();
      await db.destroy();
    },
    /** For tests and tools that need raw access (e.g. to simulate a fault); not for request code. */
    db,
  };
}

export type Store = ReturnType<typeof openStore>;
