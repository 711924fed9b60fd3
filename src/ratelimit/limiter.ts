import type { Clock } from '../core/clock.js';

/**
 * The rate-limit capability's public surface, its algorithm and the in-process store (the embedded
 * default, `MemoryRateLimiter` below); a shared store (Redis, redis.ts) implements the same
 * interface with the same maths so that D14 holds across instances.
 */
export interface RateLimitDecision {
  allowed: boolean;
  /** The per-minute ceiling applied (X-RateLimit-Limit). */
  limit: number;
  /** How many more requests would be admitted right now; 0 on a refusal (D15). */
  remaining: number;
  /** Unix epoch seconds at which the full limit is available again; never in the past (D15). */
  resetAt: number;
  /**
   * Whole seconds after which a request is admitted if none is sent meanwhile: 0 when one would be
   * now (Remaining > 0), else >= 1, on a refusal (Retry-After) and on the admission that took the
   * last request of the window alike (D15, D29's `t`).
   */
  retryAfter: number;
}

export interface RateLimiter {
  /** Counts one request for `keyId` if it is admitted under `limit` per rolling minute (D14, D5). */
  consume(keyId: string, limit: number): Promise<RateLimitDecision> | RateLimitDecision;
  /**
   * The state without counting anything: for a free answer (D21, a 304), whose Remaining says how
   * many requests would be admitted now without taking one. `allowed`: whether one would be.
   */
  peek(keyId: string, limit: number): Promise<RateLimitDecision> | RateLimitDecision;
  close?(): Promise<void>;
  /**
   * False while limits meant to be shared by every process (Redis) are kept by this process alone
   * (ratelimit/resilient.ts); true or absent otherwise.
   */
  readonly isShared?: boolean;
}

/** The window of D14, in whole seconds. */
export const WINDOW_SECONDS = 60;

/** D29: the name of the one quota policy, in `RateLimit-Policy` and `RateLimit`: each key has its own. */
export const POLICY_NAME = 'key';

/**
 * The response headers of D15 for a decision, and with them D29's IETF fields
 * (draft-ietf-httpapi-ratelimit-headers, structured fields), which say the same:
 * `RateLimit-Policy: "key";q=<Limit>;w=60` and `RateLimit: "key";r=<Remaining>;t=<seconds until a
 * request is admitted, 0 when one is now>` (`t` equals Retry-After on a 429). A free answer (a
 * D21 304) never carries Retry-After: it was answered.
 */
export function rateLimitHeaders(d: RateLimitDecision, free = false): Record<string, string> {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(d.limit),
    'x-ratelimit-remaining': String(d.remaining),
    'x-ratelimit-reset': String(d.resetAt),
    'ratelimit-policy': `"${POLICY_NAME}";q=${d.limit};w=${WINDOW_SECONDS}`,
    'ratelimit': `"${POLICY_NAME}";r=${d.remaining};t=${d.retryAfter}`,
  };
  if (!d.allowed && !free) headers['retry-after'] = String(d.retryAfter);
  return headers;
}

/**
 * The algorithm (D14, D15), used by every store:
 *
 * Each key has 60 counters, one per wall-clock second (a ring indexed by `second % 60`, each slot
 * remembering which second it holds). A request in second `n` is admitted when the counters of
 * seconds n-59..n add up to less than the limit, and then increments second n's counter. So every
 * 60 consecutive whole seconds admit at most `limit` requests: the D14 promise for any rolling
 * 60-second window, to within one second. A full burst of `limit` is admitted at once, and unlike a
 * fixed window (which admits up to 2 x limit across a boundary) no boundary lets more through.
 *
 * - Remaining = limit - (sum of the window after this request); 0 on a refusal.
 * - Reset = (the latest second with a count) + 60: when every counted request has left the window
 *   and the full limit is back.
 * - Retry-After = the smallest k >= 1 such that, at second n+k, the seconds still in the window
 *   (n+k-59..n) hold fewer than `limit`: drop the oldest seconds one at a time until there is room.
 *   A request k seconds later (in ms) falls in second >= n+k, so it is admitted (D15). The same
 *   wait is computed for the admitted request that leaves Remaining at 0 (D29's `t`); any other
 *   admitted request has 0: the next one would be admitted now.
 *
 * Refused requests are not counted (D5), so a client retrying too early is never locked out.
 * Memory is 60 counters per active key whatever its limit.
 */
export function decide(window: SecondCounters, second: number, limit: number): RateLimitDecision {
  const used = window.sumSince(second - WINDOW_SECONDS + 1);
  if (used < limit) {
    window.add(second);
    const remaining = limit - used - 1;
    // The request that took the last one: how long until the next is admitted (D29's `t`).
    const retryAfter = remaining > 0 ? 0 : secondsUntilAdmitted(window, second, used + 1, limit);
    return { allowed: true, limit, remaining, resetAt: second + WINDOW_SECONDS, retryAfter };
  }
  const retryAfter = secondsUntilAdmitted(window, second, used, limit);
  return { allowed: false, limit, remaining: 0, resetAt: window.latestSecond() + WINDOW_SECONDS, retryAfter };
}

/** Retry-After for a window of `used` >= `limit` at `second`: drop the oldest seconds until there is room. */
function secondsUntilAdmitted(window: SecondCounters, second: number, used: number, limit: number): number {
  let dropped = 0;
  for (let k = 1; k <= WINDOW_SECONDS; k++) {
    dropped += window.countAt(second - WINDOW_SECONDS + k);
    if (used - dropped < limit) return k;
  }
  return WINDOW_SECONDS;
}

/**
 * The same state without counting (D21's free 304): Remaining is what would be admitted now;
 * Reset is when the full limit is back (now, when nothing is counted). `allowed` says whether a
 * request would be admitted.
 */
export function inspect(window: SecondCounters, second: number, limit: number): RateLimitDecision {
  const used = window.sumSince(second - WINDOW_SECONDS + 1);
  const latest = window.latestSecond();
  const resetAt = used === 0 ? second : latest + WINDOW_SECONDS;
  if (used < limit) return { allowed: true, limit, remaining: limit - used, resetAt, retryAfter: 0 };
  return { ...decide(window, second, limit), allowed: false };
}

/** Sixty per-second counters in a ring. */
export class SecondCounters {
  private readonly seconds = new Float64Array(WINDOW_SECONDS).fill(-Infinity);
  private readonly counts = new Uint32Array(WINDOW_SECONDS);

  countAt(second: number): number {
    const slot = second % WINDOW_SECONDS;
    return this.seconds[slot] === second ? this.counts[slot]! : 0;
  }

  sumSince(firstSecond: number): number {
    let sum = 0;
    for (let i = 0; i < WINDOW_SECONDS; i++) if (this.seconds[i]! >= firstSecond) sum += this.counts[i]!;
    return sum;
  }

  add(second: number): void {
    const slot = second % WINDOW_SECONDS;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.counts[slot] = 0;
    }
    this.counts[slot]!++;
  }

  latestSecond(): number {
    let latest = -Infinity;
    for (let i = 0; i < WINDOW_SECONDS; i++) if (this.counts[i]! > 0 && this.seconds[i]! > latest) latest = this.seconds[i]!;
    return latest;
  }
}

/** The in-process store: exact for one process (the embedded default and the Redis fallback). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, SecondCounters>();
  private lastSweep = 0;

  constructor(private readonly clock: Clock) {}

  consume(keyId: string, limit: number): RateLimitDecision {
    const second = Math.floor(this.clock() / 1000);
    this.sweep(second);
    let window = this.windows.get(keyId);
    if (window === undefined) {
      window = new SecondCounters();
      this.windows.set(keyId, window);
    }
    return decide(window, second, limit);
  }

  peek(keyId: string, limit: number): RateLimitDecision {
    const second = Math.floor(this.clock() / 1000);
    return inspect(this.windows.get(keyId) ?? new SecondCounters(), second, limit);
  }

  /** How many keys' windows are held: what the memory follows (the sweep below keeps it to the active keys). */
  get keysHeld(): number {
    return this.windows.size;
  }

  /** Forgets keys idle for a whole window, once a window, so memory follows the active keys. */
  private sweep(second: number): void {
    if (second - this.lastSweep < WINDOW_SECONDS) return;
    this.lastSweep = second;
    for (const [keyId, window] of this.windows) {
      if (window.latestSecond() <= second - WINDOW_SECONDS) this.windows.delete(keyId);
    }
  }
}
