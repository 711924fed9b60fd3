import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { OutageLog } from '../core/outage-log.js';
import type { RateLimitDecision, RateLimiter } from './limiter.js';
import { RedisRateLimiter, failFastRedisOptions } from './redis.js';
import { MemoryRateLimiter } from './limiter.js';

/**
 * The limiter `serve` uses when REDIS_URL is set: limits shared in Redis (redis.ts) while Redis
 * answers, and the in-process limiter (limiter.ts) while it does not, so a Redis outage
 * never turns into a 500 or a hung request.
 *
 * - Every Redis call is bounded by `timeoutMs` (default 100 ms); the client never queues a command
 *   while disconnected (it fails at once) and keeps reconnecting in the background.
 * - The first failure switches to the in-process limiter and logs ONE warning, with the error's
 *   message (core/outage-log.ts). While in fallback, requests are answered from memory at no extra
 *   latency; at most one request per `probeIntervalMs` (default 1 s), and only once the client has
 *   reconnected, tries Redis again, and so does a PING as soon as the client has reconnected
 *   (without traffic too). When one succeeds the limiter is back on Redis and logs one info line,
 *   with how long the outage lasted (issue 30 item 4).
 * - During a fallback each process limits on its own (the promise of D14 holds per process, not
 *   across processes: with `serve --workers N` a key may be admitted up to N times its limit);
 *   counts made in memory are not copied to Redis and vice versa. `isShared` says which it is
 *   (the `listings_rate_limit_fallback` gauge).
 */
export interface ResilientRateLimiterOptions {
  logger: Pick<Logger, 'warn' | 'info' | 'debug'>;
  /** Clock of the in-process fallback. */
  fallbackClock: Clock;
  /** Tests only: the Redis limiter's clock (else Redis `TIME`). */
  sharedClock?: Clock;
  prefix: string;
  timeoutMs?: number;
  probeIntervalMs?: number;
  /** How long `start()` waits for the first connection before starting in fallback. */
  connectWaitMs?: number;
}

class RedisTimeout extends Error {
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
    this.name = 'RedisTimeout';
  }
}

export class ResilientRateLimiter implements RateLimiter {
  readonly redis: Redis;
  readonly shared: RedisRateLimiter;
  private readonly local: MemoryRateLimiter;
  private readonly timeoutMs: number;
  private readonly probeIntervalMs: number;
  private usingRedis = true;
  private lastProbe = -Infinity;
  private closed = false;
  private readonly outage: OutageLog;

  constructor(url: string, private readonly options: ResilientRateLimiterOptions) {
    this.redis = new Redis(url, failFastRedisOptions());
    // Connection errors are handled by the state machine below (one warning per outage); without
    // a listener ioredis would print every reconnection failure.
    this.redis.on('error', (error: Error) => options.logger.debug({ err: error }, 'rate limiter: Redis connection error'));
    this.timeoutMs = options.timeoutMs ?? 100;
    // One bound per script call (the decisions of a turn), not one timer per request.
    this.shared = new RedisRateLimiter(this.redis, { prefix: options.prefix, clock: options.sharedClock, bound: (call) => this.withTimeout(call) });
    this.local = new MemoryRateLimiter(options.fallbackClock);
    this.probeIntervalMs = options.probeIntervalMs ?? 1000;
    this.outage = new OutageLog(options.logger, {
      lost: 'rate limiter: Redis is unreachable or slow; falling back to in-process limits (per process) until it is back',
      still: 'rate limiter: Redis still unavailable',
      back: 'rate limiter: Redis is back; limits are shared across instances again',
    });
    // Reconnected after an outage: try it at once, so that the way back (and its log line) does
    // not wait for a request.
    this.redis.on('ready', () => {
      if (!this.usingRedis && !this.closed) void this.ping();
    });
  }

  /** True while limits are shared through Redis, false while answered from memory. */
  get isShared(): boolean {
    return this.usingRedis;
  }

  /** Connects (bounded); when Redis is not there yet, starts in fallback and keeps trying. */
  async start(): Promise<void> {
    const waitMs = this.options.connectWaitMs ?? 1000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.redis.connect(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new RedisTimeout(waitMs)), waitMs);
        }),
      ]);
      this.options.logger.info('rate limiter: limits are shared through Redis');
    } catch (error) {
      this.fallBack(error);
      this.lastProbe = performance.now();
    } finally {
      clearTimeout(timer);
    }
  }

  consume(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.run(keyId, limit, 'consume');
  }

  peek(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.run(keyId, limit, 'peek');
  }

  private async run(keyId: string, limit: number, mode: 'consume' | 'peek'): Promise<RateLimitDecision> {
    const probing = !this.usingRedis && this.mayProbe();
    if (this.usingRedis || probing) {
      try {
        const decision = await this.shared[mode](keyId, limit);
        if (probing) this.backOnRedis();
        return decision;
      } catch (error) {
        if (this.usingRedis) this.fallBack(error);
        else this.outage.failed(error);
      }
    }
    return this.local[mode](keyId, limit);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.redis.status === 'ready') {
      try {
        await this.withTimeout(this.redis.quit());
        return;
      } catch {
        // fall through: drop the connection
      }
    }
    this.redis.disconnect();
  }

  private fallBack(error: unknown): void {
    if (this.closed) return;
    this.usingRedis = false;
    this.lastProbe = performance.now();
    this.outage.failed(error);
  }

  private backOnRedis(): void {
    if (this.usingRedis || this.closed) return;
    this.usingRedis = true;
    this.outage.succeeded();
  }

  /** While in fallback, on reconnection: a bounded PING; back on Redis when it answers. */
  private async ping(): Promise<void> {
    this.lastProbe = performance.now();
    try {
      await this.withTimeout(this.redis.ping());
      this.backOnRedis();
    } catch (error) {
      this.outage.failed(error);
    }
  }

  /** One probe per interval, and only when the client has a live connection to try. */
  private mayProbe(): boolean {
    if (this.closed || this.redis.status !== 'ready') return false;
    const now = performance.now();
    if (now - this.lastProbe < this.probeIntervalMs) return false;
    this.lastProbe = now;
    return true;
  }

  /**
   * Bounds a Redis call. When the timer fires, the verdict waits for the end of that turn of the
   * event loop (setImmediate runs after the I/O poll): if this process was busy (a burst of
   * requests, synchronous SQLite work) the reply may already be in the socket, unread, and a slow
   * process must not be mistaken for a slow Redis.
   */
  private async withTimeout<T>(promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let immediate: NodeJS.Immediate | undefined;
    try {
      return await Promise.race([
        promise,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            immediate = setImmediate(() => reject(new RedisTimeout(this.timeoutMs)));
          }, this.timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (immediate !== undefined) clearImmediate(immediate);
    }
  }
}

/** Builds and connects the limiter; never throws because of Redis. */
export async function startResilientRateLimiter(url: string, options: ResilientRateLimiterOptions): Promise<ResilientRateLimiter> {
  const limiter = new ResilientRateLimiter(url, options);
  await limiter.start();
  return limiter;
}
