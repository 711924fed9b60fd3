import { createRequire } from 'node:module';
import type pg from 'pg';

/** `pg` is loaded when the feed first connects, not when this module is (see database.ts). */
const require = createRequire(import.meta.url);

/** The PostgreSQL channel on which every change-tracked write is announced (see changes.ts). */
export const CHANGES_CHANNEL = 'listings_api_changes';

/**
 * A LISTEN connection to PostgreSQL for one process: other instances' writes arrive as
 * notifications on CHANGES_CHANNEL. It reconnects by itself; `onState` says when it is
 * listening and when it is not (anything may have changed while it was away).
 */
export class PgNotifications {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<(payload: string) => void>();
  listening = false;

  constructor(
    private readonly url: string,
    private readonly handlers: { onNotification(payload: string): void; onState(listening: boolean): void; onProblem(error: unknown): void },
  ) {}

  async start(): Promise<void> {
    await this.connect().catch((error: unknown) => {
      this.handlers.onProblem(error);
      this.scheduleReconnect();
    });
  }

  /** Resolves true when a notification with this payload has come back through LISTEN (false after timeoutMs). */
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
      const payload = message.payload ?? '';
      this.handlers.onNotification(payload);
      for (const waiter of this.waiters) waiter(payload);
    });
    client.on('error', (error) => {
      this.handlers.onProblem(error);
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
    this.listening = true;
    this.handlers.onState(true);
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.listening = false;
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
