/**
 * The rate-limit capability's public surface. The in-process store (sliding-window.ts) is the
 * embedded default; a shared store (Redis) implements the same interface with the same maths so
 * that D14 holds across instances.
 */
export interface RateLimitDecision {
  allowed: boolean;
  /** The per-minute ceiling applied (X-RateLimit-Limit). */
  limit: number;
  /** How many more requests would be admitted right now; 0 on a refusal (D15). */
  remaining: number;
  /** Unix epoch seconds at which the full limit is available again; never in the past (D15). */
  resetAt: number;
  /** On a refusal: whole seconds, >= 1, after which a request is admitted if none is sent meanwhile. */
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

/** The response headers of D15 for a decision. */
export function rateLimitHeaders(d: RateLimitDecision, free = false): Record<string, string> {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(d.limit),
    'x-ratelimit-remaining': String(d.remaining),
    'x-ratelimit-reset': String(d.resetAt),
  };
  if (!d.allowed && !free) headers['retry-after'] = String(d.retryAfter);
  return headers;
}
