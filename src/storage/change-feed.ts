import { createRequire } from 'node:module';
import type pg from 'pg';

/** `pg` is loaded when the feed first connects, not when this module is (see database.ts). */
const require = createRequire(import.meta.url);

/** The PostgreSQL channel on which every write through a store is announced. */
export const CHANGES_CHANNEL = 'listings_api_changes';

/**
 * PostgreSQL's side of Store.changeVersion: other instances' writes arrive by LISTEN/NOTIFY (D4
 * across instances). A counter moves on every notification and on every (re)connection, since
 * anything may have changed while the listener was away; while it is down the version moves on
 * every read, which turns the caches off rather than let them serve something stale.
 */
export class PostgresChangeFeed {
  private notifications = 0;
  private client: pg.Client | undefined;
  private connected = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<(payload: string) => void>();

  constructor(private readonly url: string, private readonly onProblem: (error: unknown) => void = () => {}) {}

  async start(): Promise<void> {
    await this.connect().catch((error: unknown) => {
      this.onProblem(error);
      this.scheduleReconnect();
    });
  }

  version(): number {
    if (!this.connected) this.notifications++;
    return this.notifications;
  }

  /** Resolves when a notification with this payload has come back through LISTEN (or after timeoutMs). */
  waitFor(payload: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(done);
        resolve(false);
      }, timeoutMs);
      const done = (received: string) => {
        if (received !== payload) return;
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(true);
      };
      this.waiters.add(done);
    });
  }

  private async connect(): Promise<void> {
    const { Client } = require('pg') as typeof pg;
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 2000 });
    client.on('notification', (message) => {
      this.notifications++;
      for (const waiter of this.waiters) waiter(message.payload ?? '');
    });
    client.on('error', (error) => {
      this.onProblem(error);
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    this.connected = true;
    this.notifications++;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.connected = false;
    this.notifications++;
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
    this.connected = false;
    await client?.end().catch(() => {});
  }
}
