import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Config } from './config/index.js';
import { systemClock, type Clock, type Sleep } from './core/clock.js';
import { createLogger, startLogFlush, type Logger } from './core/logger.js';
import { createDashboard, type Dashboard } from './dashboard/index.js';
import { buildApp } from './http/app.js';
import { createWebhookDeliverer, type WebhookDeliverer } from './webhooks/deliverer.js';
import type { SendOptions } from './webhooks/send.js';
import { drainServer } from './http/drain.js';
import { Readiness, type ReadinessOptions } from './http/readiness.js';
import { messageOf, OutageLog, type OutageMessages } from './core/outage-log.js';
import { recentlyReadTenants, warmUp, type WarmUpResult } from './readmodel/warm-up.js';
import { ConnectionKeys } from './auth/connection-keys.js';
import { createReadModel, type ListingReads } from './readmodel/index.js';
import { MemoryRateLimiter, type RateLimiter } from './ratelimit/limiter.js';
import { openStore, type Store } from './storage/index.js';
import { LastUsedTracker, UsageCounter } from './usage/index.js';
import type { CompletionObserver } from './http/request-log.js';
import type { Metrics } from './metrics/index.js';

const MIB = 1024 * 1024;
import type { FastifyInstance } from 'fastify';

/**
 * The composition root: config in, a running (not yet listening) service out. `serve`, the tests
 * and the benchmark all build the service here, so they run the same thing.
 */
export interface ServiceOptions {
  clock?: Clock;
  /** Tests: the dashboard's sign-in delays follow their clock (dashboard/throttle.ts). */
  sleep?: Sleep;
  logger?: Logger;
  /**
   * A worker of `serve --workers`: with METRICS_PORT set, its metrics are summed by the primary,
   * which listens on METRICS_PORT (src/cli/serve.ts); the worker does not listen for scrapes.
   */
  clusterWorker?: boolean;
  /** Tests: the readiness check's monotonic clock and time limit (http/readiness.ts). */
  readiness?: Pick<ReadinessOptions, 'now' | 'timeoutMs'>;
  /** Tests: webhook deliveries happen only when the test calls `webhooks.tick()`, not on a timer. */
  manualWebhooks?: boolean;
  /** Names this instance in webhook leases (tests run two in one process). */
  instanceId?: string;
  /** Tests: how webhook host names are resolved, by deliveries and test events alike (not the system's resolver). */
  webhookResolve?: SendOptions['resolve'];
}

export async function createService(config: Config, options: ServiceOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? (await createLogger(config.logLevel, { batched: true }));
  const basics: Basics = { config, clock, logger };
  const stopLogFlush = startLogFlush(logger);
  const { store, readiness } = await openStorage(basics, options.readiness);
  const outageLog = (messages: OutageMessages) => partOfDatabaseOutages(readiness, new OutageLog(logger, messages));
  const limiter = await startRateLimiter(basics, options.clock);
  const lastUsed = startLastUsedTracker(store, clock, outageLog({ lost: 'could not record key last-used times; will retry', back: 'key last-used times are recorded again' }));
  const pruneTimer = startHistoryPruning(basics, store, outageLog({ lost: 'could not prune the change history; will try again', back: 'the change history is pruned again' }));

  // Index builds are told to the metrics, made next (they read the read model's counts).
  const told: { indexBuilt?: (ms: number) => void } = {};
  const reads = createReadModel(store, clock, {
    cacheTtlMs: config.readCacheTtlMs,
    maxBodyBytes: config.readCacheMaxMb * MIB,
    maxIndexBytes: config.readModelMaxMb * MIB,
    onIndexBuilt: (ms) => told.indexBuilt?.(ms),
  });
  // Before the dashboard, which counts into them.
  const { metricsModule, metrics } = await loadMetrics(config, reads, readiness, limiter, options.clusterWorker);
  if (metrics !== undefined) told.indexBuilt = (ms) => metrics.indexBuilt(ms);
  // The developer dashboard (src/dashboard), unless DASHBOARD_PORT is `off`: on the API's port for
  // its own host name (the default), or on a port of its own. Same store, so its key and origin
  // writes reach the API's caches at once (D4).
  let apiServer: Server | undefined = undefined;
  const apiPort = () => portOf(apiServer);
  const dashboard = config.dashboardPort === 'off' ? undefined : await createDashboard({
    store, config, clock, sleep: options.sleep, logger, apiPort, metrics: metrics?.dashboard,
    lastUsedOf: (id) => lastUsed.peek(id), webhookResolve: options.webhookResolve,
  });
  const usage = startUsageCounter(basics, store, outageLog({ lost: 'could not record usage counts; will retry', back: 'usage counts are recorded again' }));
  const completion = [usage, metrics].filter((observer) => observer !== undefined);
  const app = await buildApi(basics, { store, reads, limiter, readiness, lastUsed, dashboard, completion });
  apiServer = app.server;
  const webhooks = createWebhooks(basics, store, metrics, options, outageLog({ lost: 'webhook delivery: cannot read the endpoints; will retry', back: 'webhook delivery: reading the endpoints again' }));
  const warmUp = createWarmUp(basics, store, reads, readiness);
  const parts: ServiceParts = {
    ...basics,
    options, stopLogFlush, readiness, store, limiter, lastUsed, pruneTimer,
    metricsModule, metrics, dashboard, usage, app, webhooks, warmUp,
  };

  return {
    app,
    store,
    logger,
    dashboard,
    /** The read path's data (keys, origins, listings) and its counters. */
    reads,
    /** The API's port once listening (PORT=0 picks one). */
    apiPort,
    /** Buffered last-used times of keys (flushed every 10 s and at shutdown). */
    lastUsed,
    /** Usage per key and failed requests, counted in memory (flushed every USAGE_FLUSH_INTERVAL_MS and at shutdown); undefined with USAGE_COUNTING=off. */
    usage,
    /** The Prometheus metrics of this process; undefined without METRICS_PORT. */
    metrics,
    /** What GET /readyz answers, and why (http/readiness.ts). */
    readiness,
    /** Webhook delivery (D24): started by `listen()`; tests drive it with `tick()`. */
    webhooks,
    /** The warm-up started by `listen()`: resolves when it has ended (undefined when WARMUP_TIMEOUT_MS=0). */
    warmedUp: (): Promise<WarmUpResult | undefined> => warmUp.ended(),
    /** The port GET /metrics listens on (METRICS_PORT=0 picks one), once listening; undefined in a worker. */
    metricsPort: (): number | undefined => portOf(parts.metricsServer),
    /** Listens, and warms up: see `listen` below. */
    listen: (): Promise<string> => listen(parts),
    /** Graceful, within SHUTDOWN_TIMEOUT_MS: see `shutDown` below. */
    close: (): Promise<void> => shutDown(parts),
  };
}

/** What every step of `createService` is given. */
interface Basics {
  config: Config;
  clock: Clock;
  logger: Logger;
}

/** What `listen()` starts and `close()` stops. */
interface ServiceParts extends Basics {
  options: ServiceOptions;
  stopLogFlush: () => Promise<void>;
  readiness: Readiness;
  store: Store;
  limiter: RateLimiter;
  lastUsed: LastUsedTracker;
  pruneTimer: NodeJS.Timeout;
  metricsModule: MetricsModule | undefined;
  metrics: Metrics | undefined;
  dashboard: Dashboard | undefined;
  usage: UsageCounter | undefined;
  app: FastifyInstance;
  webhooks: WebhookDeliverer;
  warmUp: WarmUp;
  /** Set by `listen()`: GET /metrics, unless this is a worker or METRICS_PORT is off. */
  metricsServer?: Server;
}

type MetricsModule = typeof import('./metrics/index.js');

function portOf(server: Server | undefined): number | undefined {
  const address = server?.address();
  return typeof address === 'object' && address !== null ? address.port : undefined;
}

/** The readiness check, and the store: migrated, and listening for other instances' changes. */
async function openStorage({ config, logger }: Basics, readinessOptions: ServiceOptions['readiness']) {
  // Issue 30 items 4 and 5: each dependency's outage is logged once when it begins (a warning with
  // the error's message) and once when it ends (core/outage-log.ts). The database's own is logged
  // by the readiness check (http/readiness.ts), which is also what says whether the database is
  // away; what else fails because of it (the change listener, the background writes, requests)
  // is part of that outage and logs at debug level.
  const readiness = new Readiness({ checkDatabase: () => store.checkReads(), logger, ...readinessOptions });
  const listenerHealth = partOfDatabaseOutages(
    readiness,
    new OutageLog(logger, {
      lost: 'database change listener lost: key and origin caches are off, and listing versions are read from the database before each read, until it reconnects',
      still: 'database change listener still away',
      back: 'database change listener reconnected: caches are on again',
    }),
  );
  const store = openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    busyTimeoutMs: config.databaseBusyTimeoutMs,
    listenForChanges: true,
    // Every command's change reaches this instance's caches before the command returns (D4).
    instanceId: randomUUID(),
    listenerHealth,
    // Anything else: an acknowledgement not sent, versions not read again after a reconnection.
    onProblem: (error) => logger.warn({ error: messageOf(error) }, 'database change listener problem'),
  });
  await store.migrate();
  await store.start();
  return { store, readiness };
}

/**
 * An outage of something that needs the database: its first failure is logged once the
 * database has been checked, as part of the database's outage or as one of its own. PostgreSQL's
 * change listener, for one, is often the first to see the database go.
 */
function partOfDatabaseOutages(readiness: Readiness, log: OutageLog) {
  let successes = 0;
  return {
    failed(error: unknown): void {
      if (log.down) return log.failed(error);
      const seen = successes;
      readiness.explainsFailure().then(
        // Unless it succeeded again meanwhile.
        (partOf) => successes === seen && log.failed(error, partOf),
        () => successes === seen && log.failed(error),
      );
    },
    succeeded(): void {
      successes++;
      log.succeeded();
    },
  };
}

type DatabaseOutageLog = ReturnType<typeof partOfDatabaseOutages>;

async function startRateLimiter({ config, clock, logger }: Basics, sharedClock: Clock | undefined): Promise<RateLimiter> {
  // REDIS_URL: limits shared by every instance, falling back to in-process ones while Redis is away.
  // Redis's own TIME is the clock unless a test injected one. Loaded only then: ioredis is about
  // 8 MB of resident memory that a single-process deployment never uses (as `pg` for SQLite).
  return config.redisUrl
    ? await (await import('./ratelimit/resilient.js')).startResilientRateLimiter(config.redisUrl, { logger, fallbackClock: clock, sharedClock, prefix: config.redisKeyPrefix })
    : new MemoryRateLimiter(clock);
}

function startLastUsedTracker(store: Store, clock: Clock, lastUsedLog: DatabaseOutageLog): LastUsedTracker {
  const lastUsed = new LastUsedTracker(
    async (times) => {
      await store.keys.recordLastUsed(times);
      lastUsedLog.succeeded();
    },
    clock,
    (error) => lastUsedLog.failed(error),
  );
  lastUsed.start();
  return lastUsed;
}

/**
 * The change feed keeps CHANGE_HISTORY_DAYS of history (D22: at least 30 days); every instance
 * prunes older changes hourly, in small transactions (pruning twice is harmless).
 */
function startHistoryPruning({ config, clock, logger }: Basics, store: Store, pruneLog: DatabaseOutageLog): NodeJS.Timeout {
  const pruneHistory = async () => {
    try {
      const before = new Date(clock() - config.changeHistoryDays * 86_400_000).toISOString();
      const pruned = await store.feed.prune(before);
      // D24: webhook attempts are kept 7 days.
      await store.webhooks.pruneAttempts(new Date(clock() - 7 * 86_400_000).toISOString());
      pruneLog.succeeded();
      if (pruned > 0) logger.info({ pruned, before }, 'pruned the change history');
    } catch (error) {
      pruneLog.failed(error);
    }
  };
  const pruneTimer = setInterval(() => void pruneHistory(), 60 * 60_000);
  pruneTimer.unref();
  return pruneTimer;
}

/** The Prometheus metrics (METRICS_PORT): prom-client is loaded only when they are on. */
async function loadMetrics(config: Config, reads: ListingReads, readiness: Readiness, limiter: RateLimiter, clusterWorker: boolean | undefined) {
  const metricsModule = config.metricsPort === 'off' ? undefined : await import('./metrics/index.js');
  const metrics =
    metricsModule === undefined
      ? undefined
      : new metricsModule.Metrics(() => reads.stats(), async () => (await readiness.state()).ready, () => limiter.isShared !== false);
  if (metrics !== undefined && clusterWorker) metrics.reportToPrimary();
  return { metricsModule, metrics };
}

/**
 * Issue 12: usage per key (counted in memory, written in small batches every USAGE_FLUSH_INTERVAL_MS)
 * and Prometheus metrics (METRICS_PORT). Both are told of each answer by the request log
 * (`CompletionObserver`, http/request-log.ts).
 */
function startUsageCounter({ config, clock }: Basics, store: Store, usageLog: DatabaseOutageLog): UsageCounter | undefined {
  const usage = config.usageCounting
    ? new UsageCounter({
        write: async (batch) => {
          await store.usage.recordBatch(batch);
          usageLog.succeeded();
        },
        prune: (before) => store.usage.pruneBuckets(before),
        clock,
        intervalMs: config.usageFlushIntervalMs,
        onError: (error) => usageLog.failed(error),
      })
    : undefined;
  usage?.start();
  return usage;
}

interface ApiParts {
  store: Store;
  reads: ListingReads;
  limiter: RateLimiter;
  readiness: Readiness;
  lastUsed: LastUsedTracker;
  dashboard: Dashboard | undefined;
  completion: readonly CompletionObserver[];
}

/** The API's Fastify app (http/app.ts), with the dashboard as a virtual host when it shares the API's port. */
function buildApi({ config, clock, logger }: Basics, parts: ApiParts): Promise<FastifyInstance> {
  const { store, reads, limiter, readiness, lastUsed, dashboard, completion } = parts;
  return buildApp({
    logger,
    trustProxy: config.trustProxy,
    reads,
    limiter,
    countries: config.countries,
    apiDomain: config.apiDomain,
    defaultRateLimit: config.rateLimitPerMinute,
    lastUsed,
    connectionKeys: new ConnectionKeys({ clock, versions: store.changes }),
    readiness,
    virtualHost: config.dashboardPort === 'shared' && dashboard !== undefined ? { name: config.dashboardHost, handler: dashboard.handler } : undefined,
    completion,
    deprecations: config.apiDeprecations,
  });
}

/** Webhook delivery (D24): every instance looks at the endpoints; one sends to each at a time. */
function createWebhooks(
  { config, clock, logger }: Basics,
  store: Store,
  metrics: Metrics | undefined,
  options: ServiceOptions,
  health: DatabaseOutageLog,
): WebhookDeliverer {
  const webhooks = createWebhookDeliverer({
    health,
    store,
    clock,
    logger,
    send: { allowPrivate: config.webhookAllowPrivate, resolve: options.webhookResolve },
    concurrency: config.webhookConcurrency,
    instanceId: options.instanceId,
    onAttempt: (outcome) => metrics?.webhookAttempt(outcome),
  });
  metrics?.watchWebhooks(() => {
    const at = webhooks.oldestUndeliveredAt();
    return at === undefined ? 0 : Math.max(0, (clock() - at) / 1000);
  });
  return webhooks;
}

/**
 * The warm-up (readmodel/warm-up.ts): the indexes of the tenants read in the last hour, built
 * before the process reports ready, within WARMUP_TIMEOUT_MS and WARMUP_MAX_LISTINGS.
 */
function createWarmUp({ config, clock, logger }: Basics, store: Store, reads: ListingReads, readiness: Readiness) {
  const stopWarmUp = new AbortController();
  let warming: Promise<WarmUpResult | undefined> = Promise.resolve(undefined);
  const warm = async (): Promise<WarmUpResult | undefined> => {
    if (config.warmupTimeoutMs === 0) return undefined;
    readiness.warmingUp('warming up');
    try {
      const result = await warmUp({
        recentTenants: () => recentlyReadTenants(store, clock(), config.countries),
        warm: (tenant) => reads.warm(tenant),
        maxListings: config.warmupMaxListings,
        timeoutMs: config.warmupTimeoutMs,
        signal: stopWarmUp.signal,
        onTenants: (tenants) => {
          if (tenants > 0) logger.info({ tenants }, 'warm-up: building the indexes of the tenants read in the last hour before reporting ready');
        },
      });
      logWarmUp(logger, result, config);
      return result;
    } finally {
      readiness.warmedUp();
    }
  };
  return {
    /** Starts it; resolves when it has ended. */
    start: (): Promise<WarmUpResult | undefined> => (warming = warm()),
    /** The last one started (undefined before the first). */
    ended: (): Promise<WarmUpResult | undefined> => warming,
    stop: (): void => stopWarmUp.abort(),
  };
}

type WarmUp = ReturnType<typeof createWarmUp>;

/**
 * Listens, and warms up (readmodel/warm-up.ts). One process warms while it listens: /readyz
 * answers 503 until it is done, /healthz 200, and requests are answered meanwhile (their
 * indexes built on demand, as without a warm-up). A worker of `serve --workers` warms BEFORE
 * it listens: the primary hands connections to every listening worker, ready or not, so a
 * worker started again after a crash takes none until it is warm while the others answer.
 */
async function listen(parts: ServiceParts): Promise<string> {
  const { config, options, logger, readiness, app, webhooks, dashboard, metricsModule, metrics } = parts;
  readiness.startMonitor();
  const warming = parts.warmUp.start();
  if (options.clusterWorker) await warming;
  const address = await app.listen({ port: config.port, host: config.host });
  if (!options.manualWebhooks) webhooks.start();
  if (typeof config.dashboardPort === 'number') await dashboard?.listen();
  if (metricsModule !== undefined && metrics !== undefined && typeof config.metricsPort === 'number' && !options.clusterWorker) {
    parts.metricsServer = await metricsModule.listenForScrapes(() => metrics.scrape(), config.metricsPort, config.host, (error) => logger.error({ err: error }, 'metrics scrape failed'));
  }
  return address;
}

/**
 * Graceful, within SHUTDOWN_TIMEOUT_MS (src/http/drain.ts): stop accepting, answer every
 * connection that was accepted with `Connection: close`, close idle keep-alive connections,
 * destroy what is still open at the deadline; then flush and close. The API's (and the
 * dashboard's) listeners are closed before the first await: a cluster worker relies on it
 * (src/cli/serve.ts).
 */
async function shutDown(parts: ServiceParts): Promise<void> {
  const { config, logger, readiness, app, dashboard } = parts;
  // A shutting-down instance says so, so that a load balancer stops sending it requests.
  readiness.shutDown();
  parts.warmUp.stop();
  const deadline = Date.now() + config.shutdownTimeoutMs;
  const servers = [app.server, ...(typeof config.dashboardPort === 'number' && dashboard !== undefined ? [dashboard.app.server] : [])];
  const cut = (await Promise.all(servers.map((server) => drainServer(server, config.shutdownTimeoutMs)))).reduce((a, b) => a + b, 0);
  if (cut > 0) logger.warn({ connections: cut, timeout_ms: config.shutdownTimeoutMs }, 'shutdown: closed connections still open at the drain deadline');
  await dashboard?.close();
  await app.close();
  // Metrics last, so that the drain can be watched; within what is left of the same limit.
  if (parts.metricsServer !== undefined) await drainServer(parts.metricsServer, Math.max(0, deadline - Date.now()));
  clearInterval(parts.pruneTimer);
  await parts.webhooks.stop();
  await parts.lastUsed.stop();
  await parts.usage?.stop();
  await parts.limiter.close?.();
  await parts.store.close();
  await parts.stopLogFlush();
}

export type Service = Awaited<ReturnType<typeof createService>>;

/** One line for the warm-up's end: how long it took and how far it got (issue 30 item 4). */
function logWarmUp(logger: Logger, result: WarmUpResult, config: Config): void {
  const fields = { tenants: result.tenants, warmed: result.warmed, listings: result.listings, ms: result.ms, stopped: result.stopped };
  const what = `${result.warmed} of ${result.tenants} tenants read in the last hour, ${result.listings} listings`;
  switch (result.stopped) {
    case 'done':
      logger.info(fields, result.tenants === 0 ? `warm-up: no tenant was read in the last hour (${result.ms} ms)` : `warm-up done in ${result.ms} ms: ${what}`);
      break;
    case 'listings':
      logger.info(fields, `warm-up stopped at WARMUP_MAX_LISTINGS=${config.warmupMaxListings} after ${result.ms} ms: ${what}; the others are built on their first request`);
      break;
    case 'time':
      logger.info(fields, `warm-up stopped at WARMUP_TIMEOUT_MS=${config.warmupTimeoutMs}: ${what}; the others are built on their first request`);
      break;
    case 'shutdown':
      logger.info(fields, `warm-up stopped by the shutdown after ${result.ms} ms`);
      break;
    case 'error':
      logger.warn({ ...fields, error: messageOf(result.error) }, `warm-up failed after ${result.ms} ms: ${what}; reporting ready without the rest (built on their first request)`);
      break;
  }
}
