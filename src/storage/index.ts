import { createAccountsRepository } from './accounts.js';
import { createAuditRepository } from './audit.js';
import { PgChangeWatcher, SqliteChangeWatcher, type BroadcastResult, type ChangeWatcher, type WatcherHooks } from './changes.js';
import { checkReads, openDatabase, openWebhooksSqlite, webhooksSqliteFile, type DatabaseOptions, type Dialect } from './database.js';
import { createFeedRepository } from './feed.js';
import { createFormsRepository } from './forms.js';
import { createKeysRepository } from './keys.js';
import { createListingsRepository } from './listings.js';
import { migrateToLatest, missingWebhooksFile } from './migrate.js';
import type { ListenerHealth } from './pg-notifications.js';
import { createOriginsRepository } from './origins.js';
import { createWebhooksRepository } from './webhooks.js';
import { createSessionsRepository, createSignInFailuresRepository } from './sessions.js';
import { createUsageRepository } from './usage.js';
import { createUsersRepository } from './users.js';
import { createWriter, isRetryable } from './write.js';
import { runReadPathStatements } from './read-check.js';

export type { Account } from './accounts.js';
export type { ApiKeyRecord } from './keys.js';
export type { ImportCounts, ImportSession, IndexRow, IndexRowWithPlace, OrderPosition, ServedListingRow, StagedListing, TenantCount } from './listings.js';
export { LISTING_DATA_COLUMNS } from './listings.js';
export { compareD9, expiredAt, isActiveInTenant, isVisibleRow } from './visibility.js';
export type { AllowedOrigin } from './origins.js';
export type { AttemptRecord, PendingMessage, WebhookAttempt, WebhookEndpoint } from './webhooks.js';
export type { AuditEntry } from './audit.js';
export type { FormUse } from './forms.js';
export type { DashboardSession, SignInFailure } from './sessions.js';
export type { DashboardUser } from './users.js';
export type { BucketCount, FailedRequest, FailureFilter, FailureGroup, UsageBatch, UsageRow } from './usage.js';
export { FAILED_REQUESTS_KEPT, groupKey } from './usage.js';
export type { AccountKind } from './schema.js';
export type { Dialect } from './database.js';
export { StoreBusyError } from './write.js';
export { isDatabaseError } from './database-errors.js';
export type { Expiry, LastChange } from './feed.js';
export type { BroadcastResult, ChangeWatcher } from './changes.js';
export type { ListenerHealth } from './pg-notifications.js';

/**
 * The storage capability: one query layer (Kysely) over SQLite or PostgreSQL, as repositories of
 * named queries. Nothing outside this folder builds SQL.
 */
export interface StoreOptions extends DatabaseOptions {
  /**
   * PostgreSQL: listen for other processes' writes (LISTEN/NOTIFY), for a long-running server
   * whose caches must see them (D4), and for commands that wait for their changes to reach every
   * instance (broadcastSettled). One-shot tools leave it off.
   */
  listenForChanges?: boolean;
  /**
   * PostgreSQL: this process serves the API and caches what it reads, so every command's change
   * must reach it before the command returns (D4): its listener is named by this id in
   * pg_stat_activity and acknowledges each command's marker. Needs listenForChanges.
   */
  instanceId?: string;
  onProblem?: (error: unknown) => void;
  /**
   * PostgreSQL: told of the change listener's connection (each loss and failed reconnection, each
   * time it listens), e.g. an OutageLog. Without it, its failures go to onProblem.
   */
  listenerHealth?: ListenerHealth;
  /** Tests: observe and pace the PostgreSQL watcher (storage/changes.ts WatcherHooks). */
  watcherHooks?: WatcherHooks;
  /** How long a write waits for another writer before failing (DATABASE_BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number;
}

export function openStore(url: string, options: StoreOptions = {}) {
  const { db, dialect, sqlite, sqliteFile } = openDatabase(url, options);
  const onProblem = options.onProblem ?? (() => {});
  const pgWatcher = dialect === 'postgres' && options.listenForChanges ? new PgChangeWatcher(db, url, onProblem, options.instanceId, options.listenerHealth, options.watcherHooks) : undefined;
  const watcher: ChangeWatcher | undefined = sqlite !== undefined ? new SqliteChangeWatcher(sqlite) : pgWatcher;
  const write = createWriter(db, {
    dialect,
    busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
    onCommitted: (changes) => watcher?.applyLocal(changes),
  });
  // SQLite: the webhook delivery state in a file of its own, on a connection of its own, with its
  // own write lock (storage/database.ts webhooksSqliteFile), so that no delivery waits for a
  // write to the main file. Its writes record no change (the API never reads these tables).
  const webhooksDb = sqlite !== undefined ? openWebhooksSqlite(url).db : undefined;
  const webhooksWrite = webhooksDb !== undefined ? createWriter(webhooksDb, { dialect, busyTimeoutMs: options.busyTimeoutMs ?? 10_000 }) : write;
  const readPath = {
    listings: createListingsRepository(db, write, sqlite),
    feed: createFeedRepository(db, write),
    keys: createKeysRepository(db, write),
    origins: createOriginsRepository(db, write),
  };
  return {
    dialect: dialect as Dialect,
    accounts: createAccountsRepository(db, write),
    listings: readPath.listings,
    /** The change feed's queries (D22). */
    feed: readPath.feed,
    keys: readPath.keys,
    origins: readPath.origins,
    // The dashboard's own tables (members, sessions, audit log, failed sign-ins, used forms). The
    // API never reads them, so their writes record no change: that would only empty its caches.
    users: createUsersRepository(db, write),
    sessions: createSessionsRepository(db, write),
    signInFailures: createSignInFailuresRepository(db, write),
    audit: createAuditRepository(db, write),
    forms: createFormsRepository(db, write),
    /** Usage per key and the failed-request ring (src/usage): written in batches, read by the dashboard; no change recorded. */
    usage: createUsageRepository(db, write),
    /**
     * Webhook endpoints, their delivery state and attempts (D24): no change recorded either. On
     * SQLite in a file of their own beside the main one (webhooksDb).
     */
    webhooks: createWebhooksRepository(webhooksDb ?? db, webhooksWrite),
    /** The versions of keys and origins (D4) and of each tenant's listings, kept current (changes.ts). */
    changes: watcher ?? inert,
    /** One write transaction with its changes recorded, waiting its turn without blocking (write.ts). */
    write,
    /** Starts following other processes' changes. */
    start: async (): Promise<void> => watcher?.start(),
    /**
     * PostgreSQL: returns once this process's committed changes have been applied by every serving
     * instance listening now, each saying so (changes.ts, broadcast), or after timeoutMs; a command
     * that changed keys or origins returns only then (D4). Needs a store opened with listenForChanges.
     */
    async broadcastSettled(timeoutMs = 2000): Promise<BroadcastResult> {
      return pgWatcher === undefined ? { settled: true, instances: 0, unconfirmed: 0 } : pgWatcher.broadcast(timeoutMs);
    },
    /** Applies pending migrations; waits its turn like any write when another process holds the database. */
    migrate: async (): Promise<string[]> => {
      const started = Date.now();
      for (;;) {
        try {
          const missing = webhooksDb !== undefined && (await missingWebhooksFile(db, webhooksDb));
          if (missing) {
            throw new Error(`the webhooks file ${webhooksSqliteFile(url) ?? ''} is missing or empty, but this database keeps its webhooks there (migration 016)`
              + ': restore it with the main file it was backed up with (the two are one database); to start over without any webhook endpoint instead,'
              + ` delete the row '016_webhooks_own_file' from the main file's kysely_migration table`);
          }
          return await migrateToLatest(db, webhooksDb);
        } catch (error) {
          if (!isRetryable(error) || Date.now() - started > (options.busyTimeoutMs ?? 10_000)) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 30));
        }
      }
    },
    /**
     * Readiness (issue 30 item 4): resolves when the database can serve the API's reads (a row of
     * each table they read, and the read path's own statements: read-check.ts; on SQLite, the file
     * at its path is the one open and can be read); otherwise throws an error saying why. Cheap;
     * the caller bounds it in time (http/readiness.ts).
     */
    checkReads: async (): Promise<void> => {
      await checkReads(db, sqliteFile);
      await runReadPathStatements(readPath);
    },
    close: async (): Promise<void> => {
      await watcher?.close();
      await db.destroy();
      await webhooksDb?.destroy();
    },
    /** For tests and tools that need raw access (e.g. to simulate a fault); not for request code. */
    db,
    /** The same, for the webhook tables: the webhooks file's database on SQLite, `db` on PostgreSQL. */
    webhooksDb: webhooksDb ?? db,
  };
}

/** The watcher of a store opened without one (one-shot tools on PostgreSQL): nothing is cached there. */
const inert: ChangeWatcher = {
  authVersion: () => 0,
  tenantVersion: () => 0,
  knownVersion: () => 0,
  currentVersion: () => 0,
  caughtUp: async () => {},
  applyLocal: () => {},
  start: async () => {},
  close: async () => {},
};

export type Store = ReturnType<typeof openStore>;
