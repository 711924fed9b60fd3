import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { LastUsedTracker } from './auth/last-used.js';
import type { Config } from './config/index.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, startLogFlush, type Logger } from './core/logger.js';
import { createDashboard } from './dashboard/index.js';
import { buildApp } from './http/app.js';
import { drainServer } from './http/drain.js';
import { NotReady } from './http/health.js';
import { ConnectionKeys } from './auth/connection-keys.js';
import { createReadModel } from './readmodel/index.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import { MemoryRateLimiter } from './ratelimit/sliding-window.js';
import { openStore } from './storage/index.js';
import { UsageCounter } from './usage/index.js';
import type { RequestCompleted } from './http/request-log.js';

/**
 * The composition root: config in, a running (not yet listening) service out. `serve`, the tests
 * and the benchmark all build the service here, so they run the same thing.
 */
export interface ServiceOptions {
  clock?: Clock;
  logger?: Logger;
  /**
   * A worker of `serve --workers`: with METRICS_PORT set, its metrics are summed by the primary,
   * which listens on METRICS_PORT (src/cli/serve.ts); the worker does not listen for scrapes.
   */
  clusterWorker?: boolean;
}

export async function createService(config: Config, options: ServiceOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? (await createLogger(config.logLevel, { batched: true }));
  const stopLogFlush = startLogFlush(logger);
  const store = openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    busyTimeoutMs: config.databaseBusyTimeoutMs,
    listenForChanges: true,
    // Every command's change reaches this instance's caches before the command returns (D4).
    instanceId: randomUUID(),
    onProblem: (error) => logger.warn({ err: error }, 'database change listener problem; caches are bypassed until it reconnects'),
  });
  await store.migrate();
  await store.start();

  // REDIS_URL: limits shared by every instance, falling back to in-process ones while Redis is away.
  // Redis's own TIME is the clock unless a test injected one. Loaded only then: ioredis is about
  // 8 MB of resident memory that a single-process deployment never uses (as `pg` for SQLite).
  const limiter: RateLimiter = config.redisUrl
    ? await (await import('./ratelimit/resilient.js')).startResilientRateLimiter(config.redisUrl, { logger, fallbackClock: clock, sharedClock: options.clock, prefix: config.redisKeyPrefix })
    : new MemoryRateLimiter(clock);
  const lastUsed = new LastUsedTracker((times) => store.keys.recordLastUsed(times), clock, (error) =>
    logger.warn({ err: error }, 'could not record key last-used times; will retry'),
  );
  lastUsed.start();

  // The change feed keeps CHANGE_HISTORY_DAYS of history (D22: at least 30 days); every instance
  // prunes older changes hourly, in small transactions (pruning twice is harmless).
  const pruneHistory = async () => {
    try {
      const before = new Date(clock() - config.changeHistoryDays * 86_400_000).toISOString();
      const pruned = await store.feed.prune(before);
      if (pruned > 0) logger.info({ pruned, before }, 'pruned the change history');
    } catch (error) {
      logger.warn({ err: error }, 'could not prune the change history; will try again');
    }
  };
  const pruneTimer = setInterval(() => void pruneHistory(), 60 * 60_000);
  pruneTimer.unref();

  // The developer dashboard (src/dashboard), unless DASHBOARD_PORT is `off`: on the API's port for
  // its own host name (the default), or on a port of its own. Same store, so its key and origin
  // writes reach the API's caches at once (D4).
  let apiServer: Server | undefined;
  const apiPort = () => {
    const address = apiServer?.address();
    return typeof address === 'object' && address !== null ? address.port : undefined;
  };

  let draining = false;
  const reads = createReadModel(store, clock, { cacheTtlMs: config.readCacheTtlMs, maxBodyBytes: config.readCacheMaxMb * 1024 * 1024 });
  // prom-client is loaded only when metrics are on. Before the dashboard, which counts into them.
  const metricsModule = config.metricsPort === 'off' ? undefined : await import('./metrics/index.js');
  const metrics = metricsModule === undefined ? undefined : new metricsModule.Metrics(() => reads.stats());
  if (metrics !== undefined && options.clusterWorker) metrics.reportToPrimary();
  const dashboard = config.dashboardPort === 'off' ? undefined : await createDashboard({ store, config, clock, logger, apiPort, metrics: metrics?.dashboard });

  // Issue 12: usage per key (counted in memory, written in small batches every USAGE_FLUSH_INTERVAL_MS)
  // and Prometheus metrics (METRICS_PORT). Both are told of each answer by the request log's one hook.
  const usage = config.usageCounting
    ? new UsageCounter({
        write: (batch) => store.usage.recordBatch(batch),
        prune: (before) => store.usage.pruneBuckets(before),
        findKeyByHash: reads.findKeyByHash,
        clock,
        intervalMs: config.usageFlushIntervalMs,
        onError: (error) => logger.warn({ err: error }, 'could not record usage counts; will retry'),
      })
    : undefined;
  usage?.start();
  let metricsServer: Server | undefined;
  const onRequestCompleted: RequestCompleted | undefined =
    usage !== undefined && metrics !== undefined
      ? (request, reply, route, elapsedMs) => {
          usage.requestCompleted(request, reply);
          metrics.requestCompleted(request, reply, route, elapsedMs);
        }
      : usage !== undefined
        ? (request, reply) => usage.requestCompleted(request, reply)
        : metrics !== undefined
          ? (request, reply, route, elapsedMs) => metrics.requestCompleted(request, reply, route, elapsedMs)
          : undefined;
  const app = await buildApp({
    logger,
    trustProxy: config.trustProxy,
    reads,
    limiter,
    countries: config.countries,
    apiDomain: config.apiDomain,
    defaultRateLimit: config.rateLimitPerMinute,
    onKeyUsed: (key) => lastUsed.touch(key.id),
    connectionKeys: new ConnectionKeys({ clock, authVersion: () => store.changes.authVersion() }),
    // A draining instance says so, so that a load balancer stops sending it requests.
    checkReady: async () => {
      if (draining) throw new NotReady('the instance is shutting down');
      await store.ping();
    },
    virtualHost: config.dashboardPort === 'shared' && dashboard !== undefined ? { name: config.dashboardHost, handler: dashboard.handler } : undefined,
    onRequestCompleted,
  });
  apiServer = app.server;

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
    /** The port GET /metrics listens on (METRICS_PORT=0 picks one), once listening; undefined in a worker. */
    metricsPort: (): number | undefined => {
      const address = metricsServer?.address();
      return typeof address === 'object' && address !== null ? address.port : undefined;
    },
    async listen(): Promise<string> {
      const address = await app.listen({ port: config.port, host: config.host });
      if (typeof config.dashboardPort === 'number') await dashboard?.listen();
      if (metricsModule !== undefined && metrics !== undefined && typeof config.metricsPort === 'number' && !options.clusterWorker) {
        metricsServer = await metricsModule.listenForScrapes(() => metrics.scrape(), config.metricsPort, config.host, (error) => logger.error({ err: error }, 'metrics scrape failed'));
      }
      return address;
    },
    /**
     * Graceful, within SHUTDOWN_TIMEOUT_MS (src/http/drain.ts): stop accepting, answer every
     * connection that was accepted with `Connection: close`, close idle keep-alive connections,
     * destroy what is still open at the deadline; then flush and close. The API's (and the
     * dashboard's) listeners are closed before the first await: a cluster worker relies on it
     * (src/cli/serve.ts).
     */
    async close(): Promise<void> {
      draining = true;
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const servers = [app.server, ...(typeof config.dashboardPort === 'number' && dashboard !== undefined ? [dashboard.app.server] : [])];
      const cut = (await Promise.all(servers.map((server) => drainServer(server, config.shutdownTimeoutMs)))).reduce((a, b) => a + b, 0);
      if (cut > 0) logger.warn({ connections: cut, timeout_ms: config.shutdownTimeoutMs }, 'shutdown: closed connections still open at the drain deadline');
      await dashboard?.close();
      await app.close();
      // Metrics last, so that the drain can be watched; within what is left of the same limit.
      if (metricsServer !== undefined) await drainServer(metricsServer, Math.max(0, deadline - Date.now()));
      clearInterval(pruneTimer);
      await lastUsed.stop();
      await usage?.stop();
      await limiter.close?.();
      await store.close();
      await stopLogFlush();
    },
  };
}

export type Service = Awaited<ReturnType<typeof createService>>;
