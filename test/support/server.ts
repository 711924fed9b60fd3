import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { issueKey } from '../../src/auth/keys.js';
import { servingLogger, type BatchOutput } from '../../src/core/logger.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import type { Country } from '../../src/core/countries.js';
import { createService, type Service, type ServiceOptions } from '../../src/service.js';
import type { AccountKind } from '../../src/storage/index.js';
import { createMigratedTestDatabase } from './database.js';

/** A clock tests move by hand (inject, never sleep). */
export class TestClock {
  constructor(public ms = Date.parse('2026-11-22T10:00:00.000Z')) {}
  /** Waits in progress on this clock: when each ends, and what ends it. */
  private readonly sleepers: Array<{ until: number; wake: () => void }> = [];
  /** Tests waiting for a number of sleepers (untilSleeping). */
  private readonly watchers: Array<{ count: number; resolve: () => void }> = [];
  readonly now = (): number => this.ms;
  /** The server's waits (the sign-in throttle's delays): they end when advance() moves this clock past them. */
  readonly sleep = (ms: number): Promise<void> => new Promise((wake) => {
    this.sleepers.push({ until: this.ms + ms, wake });
    for (const watcher of this.watchers.splice(0)) {
      if (this.sleepers.length >= watcher.count) watcher.resolve();
      else this.watchers.push(watcher);
    }
  });
  /** How long each wait in progress has still to go, in ms. */
  sleeping(): number[] {
    return this.sleepers.map((s) => s.until - this.ms);
  }
  /** Resolves once at least `count` waits are in progress. */
  untilSleeping(count = 1): Promise<void> {
    if (this.sleepers.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ count, resolve }));
  }
  advance(ms: number): void {
    this.ms += ms;
    for (let i = this.sleepers.length - 1; i >= 0; i--) {
      if (this.sleepers[i]!.until <= this.ms) this.sleepers.splice(i, 1)[0]!.wake();
    }
  }
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: any;
  /** The client side's port of the connection it came on: equal for two answers of one keep-alive connection. */
  connectionPort: number | undefined;
}

export interface RequestOptions {
  method?: string;
  /** Host header; defaults to the sg host `api.localhost`. */
  host?: string;
  key?: string;
  headers?: Record<string, string>;
  /** A keep-alive agent, to send requests on one connection; by default each request has a connection of its own. */
  agent?: Agent;
  /** The address to connect from (any of 127.0.0.0/8 on Linux): another visitor, or a proxy's peer address for TRUST_PROXY tests. */
  localAddress?: string;
  /** A request body. */
  body?: string;
}

/** One HTTP request to a listening server, with full control of the Host header. */
export function httpCall(port: number, path: string, options: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { host: options.host ?? 'api.localhost', ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, agent: options.agent ?? false, localAddress: options.localAddress }, (res) => {
      const connectionPort = res.socket?.localPort;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = body === '' ? undefined : JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json, connectionPort });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Log lines the server wrote, parsed, for D19/D20 tests. */
export class LogCapture extends Writable {
  readonly lines: Array<Record<string, unknown>> = [];
  readonly raw: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      this.raw.push(line);
      this.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    done();
  }

  /**
   * An output for the serving processes' logger (core/logger.ts `servingLogger`: a TurnBatch,
   * whose request lines are written from a template, not by pino) in front of this capture, for
   * the tests of the log lines themselves. Request lines arrive at the end of their turn: read
   * them with `logLinesOf`.
   */
  output(): BatchOutput {
    return {
      write: (text: string) => this.write(text),
      flush: (done?: (error?: Error) => void) => done?.(),
      flushSync: () => {},
    };
  }
}

export interface TestServer {
  port: number;
  /** The developer dashboard's port (DASHBOARD_PORT defaults to 0 here: a free port); undefined when DASHBOARD_PORT=off. */
  dashboardPort: number | undefined;
  service: Service;
  clock: TestClock;
  logs: LogCapture;
  config: Config;
  dir: string;
  databaseUrl: string;
  get(path: string, options?: RequestOptions): Promise<TestResponse>;
  createAccount(kind?: AccountKind, id?: string): Promise<string>;
  createKey(accountId: string, country?: Country, label?: string): Promise<{ id: string; key: string }>;
  /** Registers a browser origin (already normalised) for an account in a country (default sg). */
  allowOrigin(accountId: string, origin: string, country?: Country): Promise<void>;
  /** Inserts listings for an owner; fields override a valid default listing. */
  addListings(ownerAccountId: string, listings: Array<Record<string, unknown>>): Promise<void>;
  close(): Promise<void>;
}

let counter = 0;

/** Import lines as a stream, for `importListings` in the storage suites. */
export function ndjsonStream(lines: ReadonlyArray<Record<string, unknown>>): Readable {
  return Readable.from(lines.map((l) => JSON.stringify(l)).join('\n'));
}

/** A fresh listing line with every required field, for `addListings` and import tests. */
export function listingLine(ownerAccountId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  const n = counter.toString(16).padStart(12, '0');
  return {
    id: `00000000-0000-4000-8000-${n}`.replace(/^00000000/, Math.floor(Math.random() * 0xffffffff).toString(16).padStart(8, '0')),
    owner_account_id: ownerAccountId,
    country: 'sg',
    building_id: '11111111-1111-4111-8111-111111111111',
    title: `Listing ${counter}`,
    size_sqft: 1000,
    usage_types: ['Office'],
    price: 5.5,
    currency: 'SGD',
    status: 'active',
    url: `https://www.example.com/listings/${counter}`,
    created_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

/**
 * Starts the real service on a fresh database, listening on a free port, with
 * an injected clock and captured logs. The database is the suite's store (support/database.ts):
 * SQLite, or a fresh PostgreSQL database when the runner asks for it; already migrated (a copy of
 * a template migrated once per process), unless `env.DATABASE_URL` names one of the test's own.
 */
export async function startTestServer(
  env: Record<string, string> = {},
  clock = new TestClock(),
  options: { servingLogger?: boolean; readiness?: ServiceOptions['readiness']; manualWebhooks?: boolean; webhookResolve?: ServiceOptions['webhookResolve'] } = {},
): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'listings-test-'));
  const database = env.DATABASE_URL === undefined ? await createMigratedTestDatabase() : undefined;
  const databaseUrl = env.DATABASE_URL ?? database!.url;
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DASHBOARD_PORT: '0', ...env, DATABASE_URL: databaseUrl });
  const logs = new LogCapture();
  // At LOG_LEVEL (info unless `env` says otherwise), as the serving process.
  const logger = options.servingLogger ? servingLogger(config.logLevel, logs.output()) : pino({ level: config.logLevel }, logs);
  const { readiness, manualWebhooks, webhookResolve } = options;
  const service = await createService(config, { clock: clock.now, sleep: clock.sleep, logger, readiness, manualWebhooks, webhookResolve });
  await service.listen();
  // Ready, as a load balancer would wait for: the warm-up (issue 30 item 4) has ended.
  await service.warmedUp();
  const address = service.app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const { store } = service;
  const { importListings } = await import('../../src/import/import.js');
  const { Readable } = await import('node:stream');
  let closing: Promise<void> | undefined;

  return {
    port,
    dashboardPort: service.dashboard?.port(),
    service,
    clock,
    logs,
    config,
    dir,
    databaseUrl,
    get: (path, options) => httpCall(port, path, options),
    async createAccount(kind = 'organisation', id = crypto.randomUUID()) {
      await store.accounts.create({ id, name: `Account ${id.slice(0, 8)}`, kind, created_at: new Date(clock.now()).toISOString() });
      return id;
    },
    // Key and origin writes return once their change has come back through LISTEN (PostgreSQL), as
    // the CLI's and the dashboard's do: until then the echo of this process's own change is still
    // on its way, and moves the auth version (D4) under the next requests.
    async createKey(accountId, country = 'sg', label = 'test') {
      const issued = await issueKey(store, { accountId, country, label, now: new Date(clock.now()) });
      await store.broadcastSettled();
      return issued;
    },
    async allowOrigin(accountId, origin, country = 'sg') {
      await store.origins.add({ account_id: accountId, country, origin, created_at: new Date(clock.now()).toISOString() });
      await store.broadcastSettled();
    },
    async addListings(ownerAccountId, listings) {
      const lines = listings.map((l) => JSON.stringify(listingLine(ownerAccountId, l))).join('\n');
      await importListings(store, Readable.from(lines), new Date(clock.now()));
      // As the CLI does: return once the change has been broadcast to every instance (PostgreSQL).
      await store.broadcastSettled();
    },
    // Once, however often it is called: a test that closes its server itself, and then the fixture.
    close() {
      closing ??= (async () => {
        await service.close();
        await database?.drop();
        rmSync(dir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
