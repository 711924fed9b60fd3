/**
 * The shared store (D14 across instances): the algorithm of sliding-window.ts, kept in Redis.
 *
 * Redis form: each API key has one hash, `<prefix><key id>`, whose fields are Unix epoch seconds
 * and whose values are the requests admitted in that second (at most 60 live fields, the same 60
 * one-second counters as the in-process ring). One Lua script per request (EVALSHA, falling back
 * to EVAL when Redis answers NOSCRIPT, e.g. after a restart) does everything atomically, so no two
 * instances can both take the last unit: it reads the hash, sums the fields of seconds n-59..n
 * (n = the current second), and if the sum is below the limit it deletes fields older than the
 * window, increments field n and renews the key's TTL (default 120 s, safely more than the 60 s
 * window; an idle key simply expires); Remaining, Reset and Retry-After are computed exactly as
 * `decide()` does, so the same sequence gives the same answers as MemoryRateLimiter. A refused
 * request writes nothing (D5). The current second comes from Redis's own `TIME` inside the
 * script, so instances whose clocks disagree still share one window (D14 "to within one second").
 * Tests may inject a clock instead: its milliseconds are then passed to the script as an argument
 * and `TIME` is not used.
 */
import { createHash } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import type { Clock } from '../core/clock.js';
import { WINDOW_SECONDS, type RateLimitDecision, type RateLimiter } from './limiter.js';

/**
 * KEYS[1] the key's hash; ARGV[1] the limit; ARGV[2] now in ms, or '' for Redis TIME; ARGV[3] the
 * TTL in seconds; ARGV[4] 'peek' to write nothing (D21's free 304, as `inspect()` in
 * sliding-window.ts). Returns {allowed 0/1, remaining, resetAt, retryAfter, second}.
 */
export const RATE_LIMIT_SCRIPT = `
local window = ${WINDOW_SECONDS}
local limit = tonumber(ARGV[1])
local second
if ARGV[2] == '' then
  second = tonumber(redis.call('TIME')[1])
else
  second = math.floor(tonumber(ARGV[2]) / 1000)
end
local first = second - window + 1
local flat = redis.call('HGETALL', KEYS[1])
local used = 0
local latest = nil
local counts = {}
local stale = {}
for i = 1, #flat, 2 do
  local s = tonumber(flat[i])
  local c = tonumber(flat[i + 1])
  if s < first then
    stale[#stale + 1] = flat[i]
  else
    used = used + c
    counts[s] = c
  end
  if c > 0 and (latest == nil or s > latest) then latest = s end
end
if ARGV[4] == 'peek' and used < limit then
  local reset = second
  if used > 0 then reset = latest + window end
  return {1, limit - used, reset, 0, second}
end
if used < limit and ARGV[4] ~= 'peek' then
  if #stale > 0 then redis.call('HDEL', KEYS[1], unpack(stale)) end
  redis.call('HINCRBY', KEYS[1], tostring(second), 1)
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
  return {1, limit - used - 1, second + window, 0, second}
end
local dropped = 0
local retry = window
for k = 1, window do
  dropped = dropped + (counts[second - window + k] or 0)
  if used - dropped < limit then
    retry = k
    break
  end
end
if latest == nil then latest = second end
return {0, 0, latest + window, retry, second}
`;

const SCRIPT_SHA = createHash('sha1').update(RATE_LIMIT_SCRIPT).digest('hex');

export interface RedisRateLimiterOptions {
  /** Prepended to the key id (REDIS_KEY_PREFIX). */
  prefix: string;
  /** Tests only: take "now" from this clock (passed to the script) instead of Redis `TIME`. */
  clock?: Clock;
  /** Expiry of a key's hash after its last admitted request; at least the window. Default 120 s. */
  ttlSeconds?: number;
}

/**
 * Connection options for a limiter's client: every command fails at once instead of queueing
 * while Redis is away, and the client keeps reconnecting in the background (the resilient wrapper
 * answers from memory meanwhile).
 */
export function failFastRedisOptions(): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 500,
    retryStrategy: (times: number) => Math.min(100 * times, 1000),
    // A failover's READONLY reply is a connection problem, not a limiter answer: reconnect.
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
  };
}

/** The store shared by every instance; `consume` rejects when Redis does not answer. */
export class RedisRateLimiter implements RateLimiter {
  readonly prefix: string;
  private readonly ttlSeconds: string;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisRateLimiterOptions,
  ) {
    this.prefix = options.prefix;
    this.ttlSeconds = String(Math.max(WINDOW_SECONDS + 1, options.ttlSeconds ?? 120));
  }

  /** The Redis key holding `keyId`'s counters. */
  keyFor(keyId: string): string {
    return `${this.prefix}${keyId}`;
  }

  consume(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.run(keyId, limit, 'consume');
  }

  peek(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.run(keyId, limit, 'peek');
  }

  private async run(keyId: string, limit: number, mode: 'consume' | 'peek'): Promise<RateLimitDecision> {
    const args = [String(limit), this.options.clock ? String(Math.floor(this.options.clock())) : '', this.ttlSeconds, mode];
    const key = this.keyFor(keyId);
    let reply: unknown;
    try {
      reply = await this.redis.evalsha(SCRIPT_SHA, 1, key, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      // Not in this server's script cache yet (first use, or Redis restarted): send the source,
      // which also caches it for the next EVALSHA.
      reply = await this.redis.eval(RATE_LIMIT_SCRIPT, 1, key, ...args);
    }
    if (!Array.isArray(reply) || reply.length < 4) throw new Error('unexpected reply from the rate-limit script');
    const [allowed, remaining, resetAt, retryAfter] = reply.map(Number) as [number, number, number, number];
    return { allowed: allowed === 1, limit, remaining, resetAt, retryAfter };
  }
}
