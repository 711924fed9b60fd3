/**
 * The shared store (D14 across instances): the algorithm of limiter.ts, kept in Redis.
 *
 * Redis form: each API key has one hash, `<prefix><key id>`, whose fields are Unix epoch seconds
 * and whose values are the requests admitted in that second (at most 60 live fields, the same 60
 * one-second counters as the in-process ring). A Lua script (EVALSHA, falling back to EVAL when
 * Redis answers NOSCRIPT, e.g. after a restart) takes the decisions of one turn of the event loop
 * together, in the order they were asked, atomically, so no two instances can both take the last
 * unit. For each decision it reads the key's hash (once per call), sums the fields of seconds n-59..n
 * (n = the current second), and if the sum is below the limit it deletes fields older than the
 * window, increments field n and renews the key's TTL (default 120 s, safely more than the 60 s
 * window; an idle key simply expires); Remaining, Reset and Retry-After (also D29's `t`) are
 * computed exactly as `decide()` does, so the same sequence gives the same answers as MemoryRateLimiter. A refused
 * request writes nothing (D5). The current second comes from Redis's own `TIME` inside the
 * script, so instances whose clocks disagree still share one window (D14 "to within one second").
 * Tests may inject a clock instead: its milliseconds are then passed to the script as an argument
 * and `TIME` is not used.
 *
 * Why one call per turn: requests that arrive together are handled in one turn (up to one per
 * connection), and one EVALSHA each cost this process a socket write per request and Redis a read,
 * a script run and a reply per request; one call for all of them costs one of each. DataLoader
 * collects them (its public `batchScheduleFn`, at the end of the turn's I/O). ioredis's
 * auto-pipelining does not: it flushes on `process.nextTick`, which runs after each request's own
 * callback, so each request still went alone (and measured slower). docs/design/rate-limit-window.md
 * has the figures.
 */
import { createHash } from 'node:crypto';
import DataLoader from 'dataloader';
import type { Redis, RedisOptions } from 'ioredis';
import type { Clock } from '../core/clock.js';
import { WINDOW_SECONDS, type RateLimitDecision, type RateLimiter } from './limiter.js';

/**
 * One call decides for several requests, in order. KEYS[i] the hash of request i's key (a key may
 * come several times); ARGV[1] now in ms, or '' for Redis TIME; ARGV[2] the TTL in seconds; then
 * per request i: ARGV[2i+1] the limit, ARGV[2i+2] 'consume', or 'peek' to write nothing (D21's
 * free 304, as `inspect()` in limiter.ts). Returns, per request, {allowed 0/1, remaining,
 * resetAt, retryAfter, second}, flat.
 */
export const RATE_LIMIT_SCRIPT = `
local window = ${WINDOW_SECONDS}
local ttl = tonumber(ARGV[2])
local second
if ARGV[1] == '' then
  second = tonumber(redis.call('TIME')[1])
else
  second = math.floor(tonumber(ARGV[1]) / 1000)
end
local first = second - window + 1

-- Each key's hash is read once per call, and its writes made once at the end: the decisions of a
-- call are taken against this in-memory state, in order, exactly as if each were a call of its own.
local states = {}
local function stateOf(key)
  local st = states[key]
  if st ~= nil then return st end
  st = {used = 0, latest = nil, counts = {}, stale = {}, admitted = 0}
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do
    local s = tonumber(flat[i])
    local c = tonumber(flat[i + 1])
    if s < first then
      st.stale[#st.stale + 1] = flat[i]
    else
      st.used = st.used + c
      st.counts[s] = c
    end
    if c > 0 and (st.latest == nil or s > st.latest) then st.latest = s end
  end
  states[key] = st
  return st
end

-- Seconds until a request is admitted, for a window holding used >= limit: drop the oldest seconds
-- until there is room (limiter.ts secondsUntilAdmitted).
local function untilAdmitted(st, used, limit)
  local dropped = 0
  for k = 1, window do
    dropped = dropped + (st.counts[second - window + k] or 0)
    if used - dropped < limit then return k end
  end
  return window
end

local function decide(key, limit, mode)
  local st = stateOf(key)
  local used = st.used
  if mode == 'peek' and used < limit then
    local reset = second
    if used > 0 then reset = st.latest + window end
    return {1, limit - used, reset, 0, second}
  end
  if used < limit and mode ~= 'peek' then
    st.used = used + 1
    st.counts[second] = (st.counts[second] or 0) + 1
    if st.latest == nil or second > st.latest then st.latest = second end
    st.admitted = st.admitted + 1
    local remaining = limit - used - 1
    local retry = 0
    if remaining == 0 then retry = untilAdmitted(st, used + 1, limit) end
    return {1, remaining, second + window, retry, second}
  end
  local latest = st.latest
  if latest == nil then latest = second end
  return {0, 0, latest + window, untilAdmitted(st, used, limit), second}
end

local out = {}
for i = 1, #KEYS do
  local decision = decide(KEYS[i], tonumber(ARGV[2 * i + 1]), ARGV[2 * i + 2])
  for j = 1, 5 do out[#out + 1] = decision[j] end
end
-- A refused request writes nothing (D5): only keys that admitted are written.
for key, st in pairs(states) do
  if st.admitted > 0 then
    if #st.stale > 0 then redis.call('HDEL', key, unpack(st.stale)) end
    redis.call('HINCRBY', key, tostring(second), st.admitted)
    redis.call('EXPIRE', key, ttl)
  end
end
return out
`;

const SCRIPT_SHA = createHash('sha1').update(RATE_LIMIT_SCRIPT).digest('hex');

export interface RedisRateLimiterOptions {
  /** Prepended to the key id (REDIS_KEY_PREFIX). */
  prefix: string;
  /** Tests only: take "now" from this clock (passed to the script) instead of Redis `TIME`. */
  clock?: Clock;
  /** Expiry of a key's hash after its last admitted request; at least the window. Default 120 s. */
  ttlSeconds?: number;
  /** Wraps each script call, e.g. to bound its time (resilient.ts): one bound per call, not per request. */
  bound?: <T>(call: Promise<T>) => Promise<T>;
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

interface Asked {
  keyId: string;
  limit: number;
  mode: 'consume' | 'peek';
}

/** The most decisions one script call takes: bounds how long Redis runs one script. */
const MAX_DECISIONS_PER_CALL = 500;

/** The store shared by every instance; a decision rejects when Redis does not answer. */
export class RedisRateLimiter implements RateLimiter {
  readonly prefix: string;
  private readonly ttlSeconds: string;
  private readonly decisions: DataLoader<Asked, RateLimitDecision>;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisRateLimiterOptions,
  ) {
    this.prefix = options.prefix;
    this.ttlSeconds = String(Math.max(WINDOW_SECONDS + 1, options.ttlSeconds ?? 120));
    // cache: false, so that every request is its own decision, the same key's included.
    this.decisions = new DataLoader((asked) => this.decide(asked), {
      cache: false,
      maxBatchSize: MAX_DECISIONS_PER_CALL,
      batchScheduleFn: (run) => setImmediate(run),
    });
  }

  /** The Redis key holding `keyId`'s counters. */
  keyFor(keyId: string): string {
    return `${this.prefix}${keyId}`;
  }

  consume(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.decisions.load({ keyId, limit, mode: 'consume' });
  }

  peek(keyId: string, limit: number): Promise<RateLimitDecision> {
    return this.decisions.load({ keyId, limit, mode: 'peek' });
  }

  private async decide(asked: readonly Asked[]): Promise<RateLimitDecision[]> {
    const keys = asked.map((a) => this.keyFor(a.keyId));
    const args = [this.options.clock ? String(Math.floor(this.options.clock())) : '', this.ttlSeconds, ...asked.flatMap((a) => [String(a.limit), a.mode])];
    const bound = this.options.bound ?? ((call) => call);
    let reply: unknown;
    try {
      reply = await bound(this.redis.evalsha(SCRIPT_SHA, keys.length, ...keys, ...args));
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      // Not in this server's script cache yet (first use, or Redis restarted): send the source,
      // which also caches it for the next EVALSHA.
      reply = await bound(this.redis.eval(RATE_LIMIT_SCRIPT, keys.length, ...keys, ...args));
    }
    if (!Array.isArray(reply) || reply.length !== asked.length * 5) throw new Error('unexpected reply from the rate-limit script');
    return asked.map((a, i) => {
      const [allowed, remaining, resetAt, retryAfter] = reply.slice(i * 5, i * 5 + 4).map(Number) as [number, number, number, number];
      return { allowed: allowed === 1, limit: a.limit, remaining, resetAt, retryAfter };
    });
  }
}
