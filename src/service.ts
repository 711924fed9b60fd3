import { LastUsedTracker } from './auth/last-used.js';
import type { Config } from './config/index.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, startLogFlush, type Logger } from './core/logger.js';
import { createDashboard } from './dashboard/index.js';
import { buildApp } from './http/app.js';
import { createReads } from './http/v1/reads.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import { MemoryRateLimiter } from './ratelimit/sliding-window.js';
import { startResilientRateLimiter } from './ratelimit/resilient.js';
import { openStore } from './storage/index.js';

/**
 * The composition root: config in, a running (not yet listening) service out. `serve`, the tests
 * and the benchmark all build the service here, so they run the same thing.
 */
export interface ServiceOptions {
  clock?: Clock;
  logger?: Logger;
}

export async function createService(config: Config, options: ServiceOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? (await createLogger(config.logLevel, { batched: true }));
  const stopLogFlush = startLogFlush(logger);
  const store = openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    listenForChanges: true,
    onProblem: (error) => logger.warn({ err: error }, 'database change listener problem; caches are bypassed until it reconnects'),
  });
  await store.migrate();
  await store.start();

  // REDIS_URL: limits shared by every instance, falling back to in-process ones while Redis is away.
  // Redis's own TIME is the clock unless a test injected one.
  const limiter: RateLimiter = config.redisUrl
    ? await startResilientRateLimiter(config.redisUrl, { logger, fallbackClock: clock, sharedClock: options.clock, prefix: config.redisKeyPrefix })
    : new MemoryRateLimiter(clock);
  const lastUsed = new LastUsedTracker((times) => store.keys.recordLastUsed(times), clock, (error) =>
    logger.warn({ err: error }, 'could not record key last-used times; will retry'),
  );
  lastUsed.start();

  const app = await buildApp({
    logger,
    trustProxy: config.trustProxy,
    data: createReads(store, clock, { ttlMs: config.readCacheTtlMs }),
    limiter,
    clock,
    countries: config.countries,
    apiDomain: config.apiDomain,
    defaultRateLimit: config.rateLimitPerMinute,
    onKeyUsed: (key) => lastUsed.touch(key.id),
    checkReady: () => store.ping(),
  });

  // The developer dashboard (src/dashboard) on DASHBOARD_PORT, unless it is `off`: same store, so
  // its key and origin writes reach the API's caches at once (D4). Listens after the API, closes first.
  const apiPort = () => {
    const address = app.server.address();
    return typeof address === 'object' && address !== null ? address.port : undefined;
  };
  const dashboard = config.dashboardPort === null ? undefined : await createDashboard({ store, config, clock, logger, apiPort });

  return {
    app,
    store,
    logger,
    dashboard,
    async listen(): Promise<string> {
      const address = await app.listen({ port: config.port, host: config.host });
      await dashboard?.listen();
      return address;
    },
    /** Graceful: stop accepting, let in-flight requests finish, then flush and close. */
    async close(): Promise<void> {
      await dashboard?.close();
      await app.close();
      await lastUsed.stop();
      await limiter.close?.();
      await store.close();
      await stopLogFlush();
    },
  };
}

export type Service = Awaited<ReturnType<typeof createService>>;
