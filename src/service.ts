import { pino, type Logger } from 'pino';
import { LastUsedTracker } from './auth/last-used.js';
import type { Config } from './config/index.js';
import { systemClock, type Clock } from './core/clock.js';
import { buildApp } from './http/app.js';
import { createReads } from './http/v1/reads.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import { MemoryRateLimiter } from './ratelimit/sliding-window.js';
import { openStore } from './storage/index.js';

/**
 * The composition root: config in, a running (not yet listening) service out. `serve`, the tests
 * and the benchmark all build the service here, so they run the same thing.
 */
export interface ServiceOptions {
  clock?: Clock;
  logger?: Logger;
}

export function createLogger(level: Config['logLevel']): Logger {
  return pino({
    level,
    // Defence in depth for D20: the request log line never carries headers, but nothing that
    // looks like a credential may reach a log even by accident.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
  });
}

export async function createService(config: Config, options: ServiceOptions = {}) {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = openStore(config.databaseUrl, {
    poolSize: config.databasePoolSize,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    listenForChanges: true,
    onProblem: (error) => logger.warn({ err: error }, 'database change listener problem; caches are bypassed until it reconnects'),
  });
  await store.migrate();
  await store.start();

  const limiter: RateLimiter = new MemoryRateLimiter(clock);
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

  return {
    app,
    store,
    logger,
    async listen(): Promise<string> {
      return app.listen({ port: config.port, host: config.host });
    },
    /** Graceful: stop accepting, let in-flight requests finish, then flush and close. */
    async close(): Promise<void> {
      await app.close();
      await lastUsed.stop();
      await limiter.close?.();
      await store.close();
    },
  };
}

export type Service = Awaited<ReturnType<typeof createService>>;
