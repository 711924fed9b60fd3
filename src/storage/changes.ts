import { randomUUID } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely } from '#kysely';
import DataLoader from 'dataloader';
import { tenantKey, type Tenant, type TenantKey } from '../core/tenant.js';
import type { Dialect } from './database.js';
import { acknowledgement, CHANGES_CHANNEL, INSTANCE_APPLICATION_NAME, PgNotifications, type ListenerHealth } from './pg-notifications.js';
import type { Database } from './schema.js';

/**
 * Change tracking (migration 004): what a process needs to know to keep its caches and its
 * in-memory listing indexes exact, at the cost of a write's own transaction and, per reader, a
 * look at small tables only when something was committed.
 *
 * - Listings are versioned per tenant: the (owning account, country) set one key sees (D1). A
 *   write appends one `listing_changes` row per listing per tenant it touched, and sets the
 *   tenant's version to the sequence of its last change. A write to one tenant moves no other
 *   tenant's version, so no other tenant's caches are dropped.
 * - Keys and origins move the `auth` counter (D4: their caches are dropped by those writes only).
 *
 * Writers: a ChangeRecorder inside the write's transaction. Readers: a ChangeWatcher per process,
 * which learns of other processes' commits from SQLite's `data_version` or PostgreSQL's
 * LISTEN/NOTIFY, and of its own at once.
 */

/** What a committed write changed, applied to the writing process's own watcher at once. */
export interface CommittedChanges {
  auth: boolean;
  /** Tenants whose version moved, with their new version. */
  tenants: Map<TenantKey, number>;
}

/** An arbitrary, fixed key of the advisory lock that serialises change-log writers on PostgreSQL. */
const CHANGE_LOG_LOCK = 7_310_450_221;
/** NOTIFY payloads are limited to 8000 bytes: past this, receivers are told to re-read every version. */
const MAX_PAYLOAD = 7000;

/** Records a write transaction's changes in that same transaction. */
export class ChangeRecorder {
  readonly committed: CommittedChanges = { auth: false, tenants: new Map() };

  constructor(
    private readonly tx: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  /** A key or an origin changed (D4). */
  async recordAuth(): Promise<void> {
    await this.tx.updateTable('store_versions').set((eb) => ({ version: eb('version', '+', 1) })).where('name', '=', 'auth').execute();
    if (this.dialect === 'postgres') await sql`select pg_notify(${CHANGES_CHANNEL}, 'auth')`.execute(this.tx);
    this.committed.auth = true;
  }

  /**
   * Before appending listing changes: takes the change log's lock (SQLite's write lock, which
   * BEGIN IMMEDIATE holds already, serialises writers there) and returns the last sequence and the
   * time of the last change, so that sequence order is commit order and times never go backwards.
   */
  async beginListingChanges(now: string): Promise<{ before: number; at: string }> {
    if (this.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${CHANGE_LOG_LOCK})`.execute(this.tx);
    const last = await this.tx.selectFrom('listing_changes').select(['seq', 'at']).orderBy('seq', 'desc').limit(1).executeTakeFirst();
    const lastAt = last?.at ?? '';
    return { before: Number(last?.seq ?? 0), at: lastAt > now ? lastAt : now };
  }

  /**
   * After rows with sequence > `before` were appended to `listing_changes` and the listings
   * written, each stamped with its change (`change_seq`, the sequence of its row for the tenant
   * it is in now, unique since a write writes a listing once): moves the versions of the tenants
   * touched, and (PostgreSQL) tells the other instances which ones.
   */
  async finishListingChanges(before: number): Promise<void> {
    const tx = this.tx;
    const moved = await tx
      .selectFrom('listing_changes')
      .select(['owner_account_id', 'country', (eb) => eb.fn.max('seq').as('version')])
      .where('seq', '>', before)
      .groupBy(['owner_account_id', 'country'])
      .execute();
    if (moved.length === 0) return;
    for (let i = 0; i < moved.length; i += 500) {
      await tx
        .insertInto('tenant_versions')
        .values(moved.slice(i, i + 500).map((m) => ({ owner_account_id: m.owner_account_id, country: m.country, version: Number(m.version), pruned_seq: 0 })))
        .onConflict((oc) => oc.columns(['owner_account_id', 'country']).doUpdateSet((eb) => ({ version: eb.ref('excluded.version') })))
        .execute();
    }
    for (const m of moved) this.committed.tenants.set(tenantKey(m.owner_account_id, m.country), Number(m.version));
    if (this.dialect === 'postgres') {
      const list = JSON.stringify({ tenants: moved.map((m) => [m.owner_account_id, m.country, Number(m.version)]) });
      await sql`select pg_notify(${CHANGES_CHANNEL}, ${list.length <= MAX_PAYLOAD ? list : '{"tenants":"*"}'})`.execute(tx);
    }
  }
}

/** What broadcastSettled saw: `settled` when its marker came back and every serving instance acknowledged it in time. */
export interface BroadcastResult {
  settled: boolean;
  /** Serving instances listening when it was sent. */
  instances: number;
  /** Of those, the ones that had not acknowledged it when it stopped waiting. */
  unconfirmed: number;
}

/** A process's view of the versions, kept current. */
export interface ChangeWatcher {
  /** Moves whenever keys or origins may have changed (D4); caches of them are scoped by it. */
  authVersion(): number;
  /**
   * The tenant's last known version: the sequence of its last change, 0 if it never had a listing.
   * The same on every instance. By its key (`tenantKey`), which the read path makes once per API
   * key rather than once per request. It may be behind while `knownVersion` is undefined.
   */
  tenantVersion(tenant: TenantKey): number;
  /**
   * The tenant's version when this process knows it to reflect every commit made before now
   * (synchronously, as on nearly every request); undefined when it cannot be sure (PostgreSQL,
   * while the change listener is away or catching up), when `currentVersion` reads it.
   */
  knownVersion(tenant: Tenant): number | undefined;
  /** The tenant's version as of now: `knownVersion`, or else read from the database for this caller. */
  currentVersion(tenant: Tenant): number | Promise<number>;
  /** Resolves once versions are known again without a read per request (for start-up and tests). */
  caughtUp(): Promise<void>;
  /** This process's own commit: seen at once, not when a notification comes back. */
  applyLocal(changes: CommittedChanges): void;
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * SQLite: `PRAGMA data_version` changes when another connection (the CLI, another server) has
 * committed. It is read at most once per turn of the event loop (a request sent after a commit
 * cannot share a turn with one read before it, so D4 stays exact), and when it moved the two small
 * version tables are read: synchronously, with prepared statements, and only for what is newer.
 */
export class SqliteChangeWatcher implements ChangeWatcher {
  private statements: { dataVersion: BetterSqlite3.Statement; auth: BetterSqlite3.Statement; tenantsSince: BetterSqlite3.Statement } | undefined;
  private lastDataVersion = -1;
  private checkedThisTurn = false;
  private dirty = true;
  private authValue = 0;
  private maxSeen = 0;
  private readonly versions = new Map<TenantKey, number>();

  constructor(private readonly sqlite: BetterSqlite3.Database) {}

  /** Prepared on first use: the tables exist once the store is migrated. */
  private prepared() {
    return (this.statements ??= {
      dataVersion: this.sqlite.prepare('PRAGMA data_version').pluck(),
      auth: this.sqlite.prepare("select version from store_versions where name = 'auth'").pluck(),
      tenantsSince: this.sqlite.prepare('select owner_account_id, country, version from tenant_versions where version > ?').raw(),
    });
  }

  /** Nothing to start: versions are read on first use (the store may not be migrated yet). */
  async start(): Promise<void> {}

  authVersion(): number {
    this.sync();
    return this.authValue;
  }

  tenantVersion(tenant: TenantKey): number {
    this.sync();
    return this.versions.get(tenant) ?? 0;
  }

  knownVersion(tenant: Tenant): number {
    return this.tenantVersion(tenant.key);
  }

  currentVersion(tenant: Tenant): number {
    return this.tenantVersion(tenant.key);
  }

  async caughtUp(): Promise<void> {}

  applyLocal(changes: CommittedChanges): void {
    for (const [key, version] of changes.tenants) this.versions.set(key, Math.max(version, this.versions.get(key) ?? 0));
    // Our own commit does not move data_version for our connection: read the tables again now.
    this.dirty = true;
    this.checkedThisTurn = false;
  }

  async close(): Promise<void> {}

  private sync(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(() => {
      this.checkedThisTurn = false;
    });
    const statements = this.prepared();
    const dataVersion = statements.dataVersion.get() as number;
    if (dataVersion === this.lastDataVersion && !this.dirty) return;
    this.lastDataVersion = dataVersion;
    this.dirty = false;
    this.authValue = Number(statements.auth.get() ?? 0);
    for (const [owner, country, version] of statements.tenantsSince.all(this.maxSeen) as Array<[string, string, number]>) {
      this.versions.set(tenantKey(owner, country), Number(version));
      if (Number(version) > this.maxSeen) this.maxSeen = Number(version);
    }
  }
}

/**
 * Observation points of a PostgreSQL watcher, for tests that must order events the way a busy
 * instance would (instead of sleeping): `versionsRead` is awaited between a catch-up's read of the
 * versions and applying them; `notified` is called once a notification has been handled.
 */
export interface WatcherHooks {
  versionsRead?(): Promise<void>;
  notified?(payload: string): void;
}

/** How long a catch-up that failed while the listener stays up waits before it tries again. */
const CATCH_UP_RETRY_MS = 1000;
/** Tenants whose versions one statement reads, while versions are read per request. */
const TENANT_READ_BATCH = 500;

/**
 * PostgreSQL: writes NOTIFY which tenants moved (or `auth`); this process LISTENs. A notification
 * is applied synchronously as it arrives, so a revocation is refused by the next request (D4, as
 * the CLI and the dashboard wait for their notification to come back before they return).
 *
 * Versions are `exact` (known here at once) while the listener listens and has caught up with
 * what it missed. Otherwise (the listener away, reconnecting, or following up an over-long
 * notification) each read asks for its own tenant's version, in a statement that starts after
 * it asked: requests of one turn share one statement (DataLoader), each costs a primary-key
 * look-up per tenant (never a read of every tenant's version), and no request ever waits for
 * another's. The auth version then moves on every call, which turns the key and origin caches off.
 *
 * The catch-up after the listener (re)connects reads only the versions that moved since the last
 * one this process was sure of: sequences are given in commit order (the change log's lock) and
 * notifications arrive in commit order, so every change up to the highest version applied while
 * exact has been applied. It runs whatever the traffic, and versions are exact again as soon as
 * it has answered (issue 40 item 1: requests asking for versions must never keep it from ending).
 */
export class PgChangeWatcher implements ChangeWatcher {
  private readonly notifications: PgNotifications;
  private authEpoch = 0;
  private readonly versions = new Map<TenantKey, number>();
  /** Every change up to this version has been applied here (see above). */
  private caughtUpTo = 0;
  /** Catch-ups asked for, and answered: exact once the last one asked for has answered while listening. */
  private catchUpsAsked = 0;
  private catchUpsDone = 0;
  private catchingUp: Promise<void> | undefined;
  private catchUpRetry: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly tenantReads: DataLoader<Tenant, number, TenantKey>;

  /**
   * `instanceId`: given by a serving instance, whose caches must follow every change; its listener
   * is then named by it, and acknowledges each command's marker (broadcast).
   */
  constructor(
    private readonly db: Kysely<Database>,
    url: string,
    private readonly onProblem: (error: unknown) => void,
    instanceId?: string,
    health: ListenerHealth = { failed: onProblem, succeeded: () => {} },
    private readonly hooks: WatcherHooks = {},
  ) {
    this.tenantReads = new DataLoader((tenants) => this.readTenantVersions(tenants), { cache: false, maxBatchSize: TENANT_READ_BATCH });
    this.notifications = new PgNotifications(url, {
      onNotification: (payload) => {
        this.onNotification(payload);
        this.hooks.notified?.(payload);
      },
      onState: (listening) => {
        // Anything may have changed while the listener was away.
        this.authEpoch++;
        if (listening) this.catchUp();
      },
      onProblem,
      health,
    }, instanceId);
  }

  async start(): Promise<void> {
    await this.notifications.start();
    await this.caughtUp();
  }

  /** Resolves once the catch-ups asked for so far have answered (or failed: then reads go on per request). */
  async caughtUp(): Promise<void> {
    while (this.catchingUp !== undefined) await this.catchingUp;
  }

  private get exact(): boolean {
    return this.notifications.listening && this.catchUpsDone === this.catchUpsAsked;
  }

  /**
   * D4 across instances: sends a marker after this process's committed changes and waits until
   * it has come back through this process's LISTEN and every serving instance listening now has
   * acknowledged it, which each does once it has applied every notification before it. An
   * instance that starts listening later reads everything fresh; one whose listener drops turns
   * its key caches off until it is back. `unconfirmed` counts the instances that did not answer
   * within timeoutMs (a stalled or overloaded process).
   */
  async broadcast(timeoutMs: number): Promise<BroadcastResult> {
    const marker = randomUUID();
    const { rows } = await sql<{ name: string }>`
      select application_name as name from pg_stat_activity
      where datname = current_database() and application_name like ${`${INSTANCE_APPLICATION_NAME}%`}`.execute(this.db);
    const acknowledgements = rows.map((row) => acknowledgement(marker, row.name.slice(INSTANCE_APPLICATION_NAME.length)));
    const arrived = this.notifications.waitForAll([marker, ...acknowledgements], timeoutMs);
    await sql`select pg_notify(${CHANGES_CHANNEL}, ${marker})`.execute(this.db);
    const missing = await arrived;
    return { settled: missing.size === 0, instances: rows.length, unconfirmed: acknowledgements.filter((ack) => missing.has(ack)).length };
  }

  authVersion(): number {
    return this.notifications.listening ? this.authEpoch : ++this.authEpoch;
  }

  tenantVersion(tenant: TenantKey): number {
    return this.versions.get(tenant) ?? 0;
  }

  knownVersion(tenant: Tenant): number | undefined {
    return this.exact ? this.tenantVersion(tenant.key) : undefined;
  }

  currentVersion(tenant: Tenant): number | Promise<number> {
    return this.exact ? this.tenantVersion(tenant.key) : this.tenantReads.load(tenant);
  }

  applyLocal(changes: CommittedChanges): void {
    if (changes.auth) this.authEpoch++;
    for (const [key, version] of changes.tenants) this.apply(key, version);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.catchUpRetry);
    await this.notifications.close();
  }

  private apply(key: TenantKey, version: number): void {
    this.versions.set(key, Math.max(version, this.versions.get(key) ?? 0));
  }

  private onNotification(payload: string): void {
    if (payload === 'auth') {
      this.authEpoch++;
      return;
    }
    if (!payload.startsWith('{')) return; // a command's marker, or an instance's acknowledgement of one
    try {
      const { tenants } = JSON.parse(payload) as { tenants: Array<[string, string, number]> | '*' };
      if (tenants === '*') return this.catchUp();
      for (const [owner, country, version] of tenants) {
        this.apply(tenantKey(owner, country), version);
        // In commit order: while exact, every change up to this one has been applied.
        if (this.exact) this.caughtUpTo = Math.max(this.caughtUpTo, version);
      }
    } catch (error) {
      this.onProblem(error);
    }
  }

  /** Each tenant's version as of now (a statement that starts after the callers asked). */
  private async readTenantVersions(tenants: readonly Tenant[]): Promise<number[]> {
    const rows = await this.db
      .selectFrom('tenant_versions')
      .select(['owner_account_id', 'country', 'version'])
      .where((eb) => eb(eb.refTuple('owner_account_id', 'country'), 'in', tenants.map((t) => eb.tuple(t.ownerAccountId, t.country))))
      .execute();
    for (const row of rows) this.apply(tenantKey(row.owner_account_id, row.country), Number(row.version));
    return tenants.map((t) => this.tenantVersion(t.key));
  }

  /**
   * Reads the versions that moved since `caughtUpTo`, in a statement that starts after this call:
   * one asked for while one runs is answered by the next, since the running one's statement may
   * have run before the commit the caller must see. One runs at a time.
   */
  private catchUp(): void {
    this.catchUpsAsked++;
    clearTimeout(this.catchUpRetry);
    this.catchingUp ??= this.runCatchUps().finally(() => {
      this.catchingUp = undefined;
    });
  }

  private async runCatchUps(): Promise<void> {
    while (this.catchUpsDone < this.catchUpsAsked && !this.closed) {
      const asked = this.catchUpsAsked;
      try {
        const since = this.caughtUpTo;
        const rows = await this.db.selectFrom('tenant_versions').select(['owner_account_id', 'country', 'version']).where('version', '>', since).execute();
        await this.hooks.versionsRead?.();
        let highest = since;
        for (const row of rows) {
          this.apply(tenantKey(row.owner_account_id, row.country), Number(row.version));
          highest = Math.max(highest, Number(row.version));
        }
        this.caughtUpTo = Math.max(this.caughtUpTo, highest);
        this.catchUpsDone = asked;
      } catch (error) {
        // Reads go on per request meanwhile. A listener that drops asks again when it is back;
        // one that stays up (the statement alone failed) is retried here.
        this.onProblem(error);
        if (this.notifications.listening && !this.closed) {
          this.catchUpRetry = setTimeout(() => this.catchUp(), CATCH_UP_RETRY_MS);
          this.catchUpRetry.unref();
        }
        return;
      }
    }
  }
}
