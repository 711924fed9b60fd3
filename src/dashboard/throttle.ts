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
  const wait = (times: string[], limit: number, now: number): number => {
    if (times.length < limit) return 0;
    // The attempt is allowed again once all but limit-1 of these have left the window.
    const freeing = Date.parse(times[times.length - limit]!) + WINDOW_MS;
    return Math.max(0, freeing - now);
  };
  return {
    /** 0 when a sign-in may be tried now, else the milliseconds to wait. */
    async retryAfterMs(email: string, ip: string): Promise<number> {
      const now = clock();
      const since = new Date(now - WINDOW_MS).toISOString();
      const [byEmail, byAddress] = await Promise.all([store.signInFailures.since({ email }, since), store.signInFailures.since({ ip }, since)]);
      return Math.max(wait(byEmail, PER_EMAIL, now), wait(byAddress, PER_ADDRESS, now));
    },
    async failed(email: string, ip: string): Promise<void> {
      const now = clock();
      await store.signInFailures.record({ id: randomUUID(), email, ip, at: new Date(now).toISOString() });
      await store.signInFailures.deleteBefore(new Date(now - 24 * 60 * 60 * 1000).toISOString());
    },
    async succeeded(email: string): Promise<void> {
      await store.signInFailures.clearEmail(email);
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
