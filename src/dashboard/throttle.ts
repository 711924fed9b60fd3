import { randomUUID } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import { systemSleep, type Clock, type Sleep } from '../core/clock.js';
import type { Store } from '../storage/index.js';

/**
 * Throttled sign-in (issue 40 item 6; OWASP ASVS V2.2): guessing is slowed per client and per
 * account, and nobody can lock a member out from another address.
 *
 * - Per client and email: at most PER_EMAIL_AND_ADDRESS failed attempts in any WINDOW_MS; past
 *   that, that client's attempts for that email are refused (429) without checking the password
 *   until the oldest failure leaves the window.
 * - Per client, whatever the emails: at most PER_ADDRESS failures in WINDOW_MS, then 429.
 * - Per account (email), the side that must not lock the owner out: the failures of the window
 *   made from other clients never refuse an attempt; past SLOW_AFTER of them, each attempt is
 *   answered after a delay (accountDelayMs: 1 s, doubling, at most MAX_DELAY_MS). The owner's right
 *   password from a fresh address still signs in, at worst MAX_DELAY_MS later, and a guesser on
 *   many addresses pays that wait for every guess.
 *
 * The delay is a timer (the event loop goes on) and cannot pile up: a client (address) has at most
 * one delayed attempt at a time on a process, and a process at most MAX_WAITING; an attempt past
 * either bound is answered 429 at once, not counted as a failure, and holds nothing.
 *
 * A client is its address, except that an IPv6 address counts as its /64 (clientOf), whether or
 * not TRUST_PROXY is set: one subscriber or host is usually given a whole /64, and counting each
 * of its 2^64 addresses apart would give every guesser unlimited fresh clients. IPv4-mapped IPv6
 * addresses count as their IPv4 address.
 *
 * Failures are stored in the database, so the limits hold across instances. A right password
 * takes back its own attempt and the failures of that client for that email (a member's own typos);
 * the failures other clients made stay, so a guesser stays refused. Unknown emails count like
 * known ones (no hint about which exist).
 */
export const WINDOW_MS = 15 * 60 * 1000;
export const PER_EMAIL_AND_ADDRESS = 5;
export const PER_ADDRESS = 20;
/** Failures of an email from other clients in the window before its attempts are delayed. */
export const SLOW_AFTER = 5;
export const FIRST_DELAY_MS = 1000;
export const MAX_DELAY_MS = 10_000;
/** Delayed attempts one process holds at once. */
export const MAX_WAITING = 100;

/** The account side's delay of an attempt, given the email's failures in the window from other clients. */
export function accountDelayMs(failuresFromOthers: number): number {
  if (failuresFromOthers < SLOW_AFTER) return 0;
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(failuresFromOthers - SLOW_AFTER, 30));
}

/** The 8 groups of an IPv6 address (a zone index dropped, a trailing dotted quad read as two groups). */
function ipv6Groups(address: string): number[] {
  let text = address.split('%', 1)[0]!;
  const quad = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(2).map(Number) as [number, number, number, number];
    text = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((group) => parseInt(group, 16));
}

/**
 * The client an attempt is counted for: an IPv4 address as it is; an IPv6 address as its /64
 * (`2001:db8:1:2::/64`), an IPv4-mapped one as its IPv4 address. Anything else as it is.
 */
export function clientOf(address: string): string {
  if (isIPv4(address) || !isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  if (groups.length !== 8) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** Why an attempt was refused: its client's failures, or a bound of the delayed attempts. */
export type Refusal = { retryAfterMs: number; reason: 'failures' | 'busy' };
export type Reservation = { attemptId: string; delayedMs: number };

export function createSignInThrottle(store: Store, clock: Clock, sleep: Sleep = systemSleep) {
  /**
   * This instance's reservations, one at a time per email and per client. A burst of attempts
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
  /** The clients with an attempt waiting out its delay on this process, and when that wait ends. */
  const waiting = new Map<string, number>();

  /** Milliseconds until the next attempt is allowed, given failure times in the window; 0 when allowed. */
  const wait = (times: readonly string[], limit: number, now: number): number => {
    if (times.length < limit) return 0;
    // The attempt is allowed again once all but limit-1 of these have left the window.
    const freeing = Date.parse(times[times.length - limit]!) + WINDOW_MS;
    return Math.max(0, freeing - now);
  };

  /** The reservation itself (storage/sessions.ts), once this instance's earlier ones for the same email or client are done. */
  async function reserveNow(email: string, client: string): Promise<Reservation | Refusal> {
    const now = clock();
    // One delayed attempt per client at a time: a second one in parallel holds nothing.
    const busyUntil = waiting.get(client);
    if (busyUntil !== undefined) return { retryAfterMs: Math.max(1000, busyUntil - now), reason: 'busy' };
    const attemptId = randomUUID();
    const outcome = await store.signInFailures.reserve(
      { id: attemptId, email, ip: client, at: new Date(now).toISOString() },
      new Date(now - WINDOW_MS).toISOString(),
      (byPair, byClient) => Math.max(wait(byPair, PER_EMAIL_AND_ADDRESS, now), wait(byClient, PER_ADDRESS, now)),
    );
    if (!outcome.reserved) return { retryAfterMs: outcome.waitMs, reason: 'failures' };
    const delayedMs = accountDelayMs(outcome.othersFailures);
    if (delayedMs === 0) return { attemptId, delayedMs };
    if (waiting.size >= MAX_WAITING) {
      await store.signInFailures.release(attemptId);
      return { retryAfterMs: delayedMs, reason: 'busy' };
    }
    // Set before this reservation leaves the client's queue: the client's next attempt sees it.
    waiting.set(client, now + delayedMs);
    return { attemptId, delayedMs };
  }

  return {
    /**
     * Reserves an attempt before the password is checked (issue 8, item 7): atomically, so that
     * parallel attempts cannot all pass a check that each read before any failure was written.
     * The attempt counts as a failure from now on unless `succeeded` takes it back. Resolves
     * after the account's delay, if any.
     */
    async reserve(email: string, address: string): Promise<Reservation | Refusal> {
      const client = clientOf(address);
      const outcome = await oneAtATime([`email ${email}`, `address ${client}`], () => reserveNow(email, client));
      if ('retryAfterMs' in outcome || outcome.delayedMs === 0) return outcome;
      try {
        await sleep(outcome.delayedMs);
      } finally {
        waiting.delete(client);
      }
      return outcome;
    },
    /** The reserved attempt failed: it stays counted. Old failures are forgotten now and then. */
    async failed(): Promise<void> {
      await store.signInFailures.deleteBefore(new Date(clock() - 24 * 60 * 60 * 1000).toISOString());
    },
    /** The password was right: the attempt, and this client's earlier failures for the email, no longer count. */
    async succeeded(email: string, address: string, attemptId: string): Promise<void> {
      await store.signInFailures.release(attemptId);
      await store.signInFailures.clearEmailFrom(email, clientOf(address));
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
