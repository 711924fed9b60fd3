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
  /**
   * This instance's reservations, one at a time per email and per address. A burst of attempts
   * (150 at once for one email) would otherwise start one database transaction each, every one
   * queued behind the email's lock (storage/sessions.ts) while holding a pool connection, and
   * those waiting longest for a connection would fail with 500. Queued here instead, each finds
   * the failures committed before it and is refused without a lock (429).
   */
  const queues = new Map<string, Promise<unknown>>();
  function oneAtATime<T>(keys: readonly string[], run: () => Promise<T>): Promise<T> {
    const result = Promise.all(keys.map((key) => queues.get(key))).then(run);
    const settled = result.catch(() => undefined);
    for (const key of keys) queues.set(key, settled);
    void settled.then(() => {
      for (const key of keys) if (queues.get(key) === settled) queues.delete(key);
    });
    return result;
  }

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
    reserve(email: string, ip: string): Promise<{ attemptId: string } | { retryAfterMs: number }> {
      return oneAtATime([`email ${email}`, `address ${ip}`], () => reserveNow(email, ip));
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

  /** The reservation itself (storage/sessions.ts), once this instance's earlier ones for the same email or address are done. */
  async function reserveNow(email: string, ip: string): Promise<{ attemptId: string } | { retryAfterMs: number }> {
    const now = clock();
    const attemptId = randomUUID();
    const outcome = await store.signInFailures.reserve(
      { id: attemptId, email, ip, at: new Date(now).toISOString() },
      new Date(now - WINDOW_MS).toISOString(),
      (byEmail, byAddress) => Math.max(wait(byEmail, PER_EMAIL, now), wait(byAddress, PER_ADDRESS, now)),
    );
    return outcome.reserved ? { attemptId } : { retryAfterMs: outcome.waitMs };
  }
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
