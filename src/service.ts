import { destination, pino, type Logger } from 'pino';
import { LastUsedTracker } from './auth/last-used.js';
import type { Config } from './config/index.js';
import { systemClock, type Clock } from './core/clock.js';
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

/**
 * The pino logger. `batched` (the serving processes): request lines go to stdout in batches of up
 * to 4 KB instead of one write each, flushed every second and on shutdown (createService);
 * otherwise (a cluster primary, which logs rarely) every line is written at once.
 */
export function createLogger(level: Config['logLevel'], { batched = false } = {}): Logger {
  return pino(
    {
      level,
      // Defence in depth for D20: the request log line never carries headers, but nothing that
      // looks like a credential may reach a log even by accident.
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
      // Warnings and errors, and the rare info line outside the request log (state changes such as
      // "Redis is back"), are not left waiting in the batch.
      hooks: batched
        ? {
            logMethod(args, method, level) {
              method.apply(this, args);
              if (level >= 40 || args[args.length - 1] !== 'request') this.flush();
            },
          }
        : {},
    },
    batched ? destination({ dest: 1, minLength: 4096, sync: false }) : destination({ dest: 1, sync: true }),
  );
}

export async function createService(config: Config, options: ServiceOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel, { batched: true });
  // The log is written in batches; this bounds how long a line may wait in the batch.
  const logFlush = setInterval(() => logger.flush(), 1000);
  logFlush.unref();
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
      clearInterval(logFlush);
      await new Promise<void>((resolve) => logger.flush(() => resolve()));
    },
  };
}

export type Service = Awaited<ReturnType<typeof createService>>;
