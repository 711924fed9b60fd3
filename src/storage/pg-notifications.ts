import { createRequire } from 'node:module';
import type pg from 'pg';
import { UUID_PATTERN } from '../core/formats.js';

/** `pg` is loaded when the feed first connects, not when this module is (see database.ts). */
const require = createRequire(import.meta.url);

/** The PostgreSQL channel on which every change-tracked write is announced (see changes.ts). */
export const CHANGES_CHANNEL = 'listings_api_changes';

/**
 * The `application_name` of a serving instance's LISTEN connection, followed by its id: a command
 * finds every instance that caches keys and listings in `pg_stat_activity` (broadcastSettled).
 * At most 63 bytes in all (PostgreSQL's NAMEDATALEN).
 */
export const INSTANCE_APPLICATION_NAME = 'listings-api instance ';

/**
 * The payloads on CHANGES_CHANNEL besides the changes themselves (changes.ts): a command's marker,
 * a UUID, and a serving instance's acknowledgement of it, sent once every notification before the
 * marker has been applied. Older releases ignore both (neither starts with `{` nor is `auth`).
 */
const MARKER = new RegExp(UUID_PATTERN);
export const acknowledgement = (marker: string, instanceId: string): string => `ack ${marker} ${instanceId}`;

/**
 * Told of the LISTEN connection's health: `failed` for each loss of it and each failed attempt to
 * connect, `succeeded` each time it listens. core/outage-log.ts's OutageLog is one: a warning per
 * outage and a line when it is back, not a line per attempt.
 */
export interface ListenerHealth {
  failed(error: unknown): void;
  succeeded(): void;
}

/**
 * A LISTEN connection to PostgreSQL for one process: other instances' writes arrive as
 * notifications on CHANGES_CHANNEL. It reconnects by itself; `onState` says when it is
 * listening and when it is not (anything may have changed while it was away), `health` how the
 * connection fares, `onProblem` anything else that went wrong (an acknowledgement not sent).
 */
export class PgNotifications {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<(payload: string) => void>();
  listening = false;

  /**
   * `instanceId`: a serving instance's listener is named by it (INSTANCE_APPLICATION_NAME) and
   * acknowledges every marker; a command's listener is neither.
   */
  constructor(
    private readonly url: string,
    private readonly handlers: {
      onNotification(payload: string): void;
      onState(listening: boolean): void;
      onProblem(error: unknown): void;
      health: ListenerHealth;
    },
    private readonly instanceId?: string,
  ) {}

  async start(): Promise<void> {
    await this.connect().catch((error: unknown) => {
      if (this.closed) return;
      this.handlers.health.failed(error);
      this.scheduleReconnect();
    });
  }

  /**
   * Resolves once a notification with each of these payloads has come through LISTEN, or after
   * timeoutMs, with the payloads that have not (empty when all came). Start it before sending them.
   */
  waitForAll(payloads: Iterable<string>, timeoutMs: number): Promise<Set<string>> {
    const missing = new Set(payloads);
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(received);
        resolve(missing);
      };
      const timer = setTimeout(finish, timeoutMs);
      const received = (payload: string) => {
        if (missing.delete(payload) && missing.size === 0) finish();
      };
      this.waiters.add(received);
      if (missing.size === 0) finish();
    });
  }

  private async connect(): Promise<void> {
    const { Client } = require('pg') as typeof pg;
    // TCP keepalive: a listener whose server went away without a word (a failover, a dropped
    // route) is found dead and replaced, rather than listening to nothing.
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 2000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    client.on('notification', (message) => {
      const payload = message.payload ?? '';
      this.handlers.onNotification(payload);
      // Notifications are applied synchronously and in commit order, so when a command's marker
      // arrives every change committed before it has been applied here: say so (D4).
      if (this.instanceId !== undefined && MARKER.test(payload)) {
        client.query('select pg_notify($1, $2)', [CHANGES_CHANNEL, acknowledgement(payload, this.instanceId)]).catch(this.handlers.onProblem);
      }
      for (const waiter of this.waiters) waiter(payload);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the server closed the connection')));
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    if (this.instanceId !== undefined) {
      // Named only once it listens, so that a command waits for no instance that cannot hear it;
      // and set here, not in the connection's options, where an application_name in DATABASE_URL
      // would take precedence and hide the instance.
      await client.query("select set_config('application_name', $1, false)", [INSTANCE_APPLICATION_NAME + this.instanceId]);
    }
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    this.listening = true;
    this.handlers.health.succeeded();
    this.handlers.onState(true);
  }

  /** The listening connection failed or ended (both may be told: the first counts). */
  private lost(client: pg.Client, error: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.listening = false;
    this.handlers.health.failed(error);
    this.handlers.onState(false);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.start();
    }, 1000);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await client?.end().catch(() => {});
  }
}
