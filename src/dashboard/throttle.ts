import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { Store } from '../storage/index.js';

/**
 * Throttled sign-in: at most PER_EMAIL failed attempts per email address, and PER_ADDRESS per client
 * address, in any WINDOW_MS. Past that, sign-in for that email (or from that address) is refused
 * without checking the password until the oldest failure leaves the window, so guessing is slowed
 * to a few attempts per quarter hour and the owner is never locked out for long. Failures are
 * stored in the database, so the limit holds across instances. A successful sign-in clears the
 * email's failures. Unknown emails count like known ones (no hint about which exist).
 */
export const WINDOW_MS = 15 * 60 * 1000;
export const PER_EMAIL = 5;
export const PER_ADDRESS = 20;

export function createSignInThrottle(store: Store, clock: Clock) {
  /** Milliseconds until the next attempt is allowed, given failure times in the window; 0 when allowed. */
  const wait = (times: readonly string[], limit: number, now: number): number => {
    if (times.length < limit) return 0;
    // The attempt is allowed again once all but limit-1 of these have left the window.
    const freeing = Date.parse(times[times.length - limit]!) + WINDOW_MS;
    return Math.max(0, freeing - now);
  };
  return {
    /**
     * Reserves an attempt before the password is checked (issue 8, item 7): atomically, so that
     * parallel attempts cannot all pass a check that each read before any failure was written.
     * The attempt counts as a failure from now on unless `succeeded` takes it back.
     */
    async reserve(email: string, ip: string): Promise<{ attemptId: string } | { retryAfterMs: number }> {
      const now = clock();
      const attemptId = randomUUID();
      const outcome = await store.signInFailures.reserve(
        { id: attemptId, email, ip, at: new Date(now).toISOString() },
        new Date(now - WINDOW_MS).toISOString(),
        (byEmail, byAddress) => Math.max(wait(byEmail, PER_EMAIL, now), wait(byAddress, PER_ADDRESS, now)),
      );
      return outcome.reserved ? { attemptId } : { retryAfterMs: outcome.waitMs };
    },
    /** The reserved attempt failed: it stays counted. Old failures are forgotten now and then. */
    async failed(): Promise<void> {
      await store.signInFailures.deleteBefore(new Date(clock() - 24 * 60 * 60 * 1000).toISOString());
    },
    /** The password was right: the attempt and the email's earlier failures no longer count. */
    async succeeded(email: string, attemptId: string): Promise<void> {
      await store.signInFailures.release(attemptId);
      await store.signInFailures.clearEmail(email);
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
