import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WINDOW_SECONDS, rateLimitHeaders, type RateLimitDecision } from '../../src/ratelimit/limiter.js';
import { MemoryRateLimiter } from '../../src/ratelimit/limiter.js';
import { prng } from '../support/random.js';

/**
 * The in-process limiter against a brute-force reference model and the D14/D15 promises, on
 * deterministic pseudo-random request sequences (seeded PRNG), with an injected clock.
 */

const BASE = Date.parse('2026-11-22T10:00:00.000Z');
const UNLIMITED = Number.MAX_SAFE_INTEGER;


class ManualClock {
  constructor(public ms = BASE) {}
  readonly now = (): number => this.ms;
}

const sec = (ms: number) => Math.floor(ms / 1000);

/**
 * The reference model, written from D14/D15 with no cleverness: it keeps every admitted instant
 * and answers each question by counting or by trying every candidate second.
 */
class Model {
  /** Admitted instants (ms), oldest first. */
  readonly admitted: number[] = [];

  /** Admitted requests in the 60 whole seconds ending with second `n`. */
  countInWindow(n: number): number {
    let count = 0;
    for (const ms of this.admitted) if (sec(ms) > n - WINDOW_SECONDS && sec(ms) <= n) count++;
    return count;
  }

  /** The first second >= n at which nothing admitted is in the window: the full limit is back. */
  fullAgainAt(n: number): number {
    let t = n;
    while (this.countInWindow(t) > 0) t++;
    return t;
  }

  consume(ms: number, limit: number): RateLimitDecision {
    const n = sec(ms);
    const used = this.countInWindow(n);
    if (used < limit) {
      this.admitted.push(ms);
      // D29's `t`: 0 while another request would be admitted now; after the last one, the wait.
      const remaining = limit - used - 1;
      return { allowed: true, limit, remaining, resetAt: this.fullAgainAt(n), retryAfter: remaining > 0 ? 0 : this.waitAt(n, limit) };
    }
    return { allowed: false, limit, remaining: 0, resetAt: this.fullAgainAt(n), retryAfter: this.waitAt(n, limit) };
  }

  /** The first k >= 1 at which second n + k has room for one more request. */
  waitAt(n: number, limit: number): number {
    let k = 1;
    while (this.countInWindow(n + k) >= limit) k++;
    return k;
  }

  /** Drops instants that can no longer matter at second `n` (keeps the model fast). */
  trim(n: number): void {
    while (this.admitted.length > 0 && sec(this.admitted[0]!) <= n - 2 * WINDOW_SECONDS) this.admitted.shift();
  }
}

/**
 * A copy of a limiter's state for one key: a fresh real limiter that has admitted exactly these
 * instants. Probing the copy shows what the real limiter would do, without disturbing it.
 */
function copyWith(admitted: readonly number[]): { limiter: MemoryRateLimiter; clock: ManualClock } {
  const clock = new ManualClock(admitted[0] ?? BASE);
  const limiter = new MemoryRateLimiter(clock.now);
  for (const ms of admitted) {
    clock.ms = ms;
    assert.equal(limiter.consume('k', UNLIMITED).allowed, true, 'replay');
  }
  return { limiter, clock };
}

/** How many of `count` requests at instant `ms` a copy of the state admits. */
function admittedOnCopy(admitted: readonly number[], ms: number, limit: number, count: number): number {
  const { limiter, clock } = copyWith(admitted);
  clock.ms = ms;
  let n = 0;
  for (let i = 0; i < count; i++) if (limiter.consume('k', limit).allowed) n++;
  return n;
}

/** The largest number of admitted requests in any 60 consecutive whole seconds (D14). */
function maxInAnyWindow(admittedMs: readonly number[]): number {
  const seconds = admittedMs.map(sec).sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < seconds.length; hi++) {
    while (seconds[hi]! - seconds[lo]! >= WINDOW_SECONDS) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/** The largest number of admitted requests in any real interval of 59 s (ms precision). */
function maxInAny59Seconds(admittedMs: readonly number[]): number {
  const sorted = [...admittedMs].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= 59_000) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/** Checks D15 for one decision made at `ms` by probing copies of the state. */
function checkDecision(d: RateLimitDecision, ms: number, limit: number, admitted: readonly number[], label: string): void {
  const n = sec(ms);
  // Only the instants still in the window matter now and later.
  const stateAfter = admitted.filter((t) => sec(t) > n - WINDOW_SECONDS);
  assert.ok(Number.isInteger(d.remaining) && d.remaining >= 0 && d.remaining < limit, `${label}: remaining ${d.remaining}`);
  assert.ok(Number.isInteger(d.resetAt), `${label}: reset is an integer`);
  assert.ok(d.resetAt * 1000 >= ms, `${label}: reset ${d.resetAt} is in the past at ${ms}`);
  // (c) Remaining is exactly how many more would be admitted right now.
  assert.equal(admittedOnCopy(stateAfter, ms, limit, d.remaining + 1), d.remaining, `${label}: remaining ${d.remaining} is not what is admitted now`);
  // (e) at Reset the full limit is available again; one second earlier it is not (the value is exact).
  assert.equal(admittedOnCopy(stateAfter, d.resetAt * 1000, limit, limit), limit, `${label}: full limit not back at reset ${d.resetAt}`);
  const before = Math.max(ms, (d.resetAt - 1) * 1000);
  if (sec(before) < d.resetAt) {
    assert.ok(admittedOnCopy(stateAfter, before, limit, limit) < limit, `${label}: full limit was back before reset ${d.resetAt}`);
  }
  if (d.remaining > 0) {
    assert.equal(d.allowed, true, `${label}: a refusal leaves nothing`);
    assert.equal(d.retryAfter, 0, `${label}: with requests left, one is admitted now (D29 t=0)`);
    return;
  }
  // (d) Retry-After (and D29's `t`, also on the admission that took the last request): >= 1; a
  // request exactly that many seconds later (or later in that second) is admitted if nothing else
  // was sent; one a second earlier is not (the value is minimal).
  assert.ok(Number.isInteger(d.retryAfter) && d.retryAfter >= 1 && d.retryAfter <= WINDOW_SECONDS, `${label}: retry-after ${d.retryAfter}`);
  const at = ms + d.retryAfter * 1000;
  for (const offset of [0, 1, 999 - (at % 1000)]) {
    assert.equal(admittedOnCopy(stateAfter, at + offset, limit, 1), 1, `${label}: not admitted ${d.retryAfter} s (+${offset} ms) after a refusal`);
  }
  const early = ms + (d.retryAfter - 1) * 1000;
  for (const offset of [0, 999 - (early % 1000)]) {
    assert.equal(admittedOnCopy(stateAfter, early + offset, limit, 1), 0, `${label}: admitted already ${d.retryAfter - 1} s (+${offset} ms) after a refusal`);
  }
  assert.ok(sec(early) === n + d.retryAfter - 1);
}

interface Step {
  ms: number;
  limit: number;
  decision: RateLimitDecision;
}

/** One pseudo-random request sequence against the real limiter and the model; returns the steps. */
function runSequence(seed: number, options: { length: number; changeLimits: boolean; checkEvery: number }): Step[] {
  const random = prng(seed);
  const limits = [1, 2, 3, 5, 10, 30, 60];
  let limit = limits[Math.floor(random() * limits.length)]!;
  const clock = new ManualClock(BASE + Math.floor(random() * 100_000));
  const limiter = new MemoryRateLimiter(clock.now);
  const model = new Model();
  const steps: Step[] = [];
  let lastRefusal: RateLimitDecision | undefined;
  for (let i = 0; i < options.length; i++) {
    const r = random();
    let gap: number;
    if (lastRefusal !== undefined && r < 0.15) gap = lastRefusal.retryAfter * 1000; // an obedient client
    else if (lastRefusal !== undefined && r < 0.2) gap = (lastRefusal.retryAfter - 1) * 1000; // one a second early
    else if (r < 0.45) gap = 0; // same instant (a burst)
    else if (r < 0.8) gap = Math.floor(random() * 1500);
    else if (r < 0.95) gap = Math.floor(random() * 12_000);
    else gap = 30_000 + Math.floor(random() * 60_000); // idle
    clock.ms += gap;
    if (options.changeLimits && random() < 0.03) limit = limits[Math.floor(random() * limits.length)]!;
    model.trim(sec(clock.ms));
    const expected = model.consume(clock.ms, limit);
    const decision = limiter.consume('key', limit);
    const label = `seed ${seed} step ${i} (t=${clock.ms - BASE} ms, limit ${limit})`;
    assert.deepEqual(decision, expected, `${label}: the limiter disagrees with the reference model`);
    if (decision.remaining === 0 || i % options.checkEvery === 0) checkDecision(decision, clock.ms, limit, model.admitted, label);
    lastRefusal = decision.allowed ? undefined : decision;
    steps.push({ ms: clock.ms, limit, decision });
  }
  return steps;
}

describe('sliding-window limiter (D14, D15)', () => {
  it('matches the brute-force model and keeps every D15 promise on 60 random sequences', () => {
    let admitted = 0;
    let refused = 0;
    for (let seed = 1; seed <= 60; seed++) {
      for (const step of runSequence(seed, { length: 300, changeLimits: false, checkEvery: 5 })) {
        if (step.decision.allowed) admitted++;
        else refused++;
      }
    }
    // The sequences exercise both outcomes a good deal.
    assert.ok(admitted > 3000 && refused > 3000, `admitted ${admitted}, refused ${refused}`);
  });

  it('(a) admits at most `limit` in every 60 consecutive whole seconds, and in every 59 s of real time', () => {
    for (let seed = 100; seed < 140; seed++) {
      const steps = runSequence(seed, { length: 400, changeLimits: false, checkEvery: 50 });
      const limit = steps[0]!.limit;
      const admitted = steps.filter((s) => s.decision.allowed).map((s) => s.ms);
      assert.ok(maxInAnyWindow(admitted) <= limit, `seed ${seed}: ${maxInAnyWindow(admitted)} admitted in one window of limit ${limit}`);
      assert.ok(maxInAny59Seconds(admitted) <= limit, `seed ${seed}: 59 s window`);
    }
  });

  it('(a) holds for a client that hammers: a request every 10 ms for 5 minutes', () => {
    for (const limit of [1, 7, 60]) {
      const clock = new ManualClock(BASE + 123);
      const limiter = new MemoryRateLimiter(clock.now);
      const admitted: number[] = [];
      for (let i = 0; i < 30_000; i++, clock.ms += 10) if (limiter.consume('k', limit).allowed) admitted.push(clock.ms);
      assert.equal(maxInAnyWindow(admitted), limit);
      // And it is not stingier than promised: `limit` per minute on average, 5 minutes.
      assert.ok(admitted.length >= 5 * limit && admitted.length <= 6 * limit, `${admitted.length} admitted at limit ${limit}`);
    }
  });

  it('(b) admits a burst of `limit` at one instant, counting Remaining down to 0, then refuses', () => {
    for (const limit of [1, 2, 60, 1000]) {
      const clock = new ManualClock(BASE + 456);
      const limiter = new MemoryRateLimiter(clock.now);
      for (let i = 0; i < limit; i++) {
        const d = limiter.consume('k', limit);
        assert.equal(d.allowed, true, `request ${i + 1} of a burst of ${limit}`);
        assert.equal(d.remaining, limit - i - 1);
        assert.equal(d.limit, limit);
        assert.equal(d.resetAt, sec(clock.ms) + 60);
      }
      const refused = limiter.consume('k', limit);
      assert.equal(refused.allowed, false);
      assert.equal(refused.remaining, 0);
      assert.equal(refused.retryAfter, 60, 'the whole burst sits in one second, which leaves the window 60 s later');
      assert.equal(refused.resetAt, sec(clock.ms) + 60);
      clock.ms += 59_999 - (clock.ms % 1000); // the last ms of second n+59
      assert.equal(limiter.consume('k', limit).allowed, false);
      clock.ms += 1; // second n+60
      for (let i = 0; i < limit; i++) assert.equal(limiter.consume('k', limit).allowed, true, 'the full burst again');
    }
  });

  it('(c) Remaining is exactly what is admitted right now, after a spread of requests', () => {
    const clock = new ManualClock(BASE + 999);
    const limiter = new MemoryRateLimiter(clock.now);
    const admitted: number[] = [];
    for (let i = 0; i < 7; i++) {
      const d = limiter.consume('k', 10);
      assert.equal(d.allowed, true);
      admitted.push(clock.ms);
      assert.equal(d.remaining, 10 - admitted.length);
      assert.equal(admittedOnCopy(admitted, clock.ms, 10, 20), d.remaining);
      clock.ms += 9_000; // 7 requests over 54 s: none has left the window yet
    }
    // Now 63 s after the first: its second has left the window, the other six have not.
    const d = limiter.consume('k', 10);
    assert.equal(d.remaining, 10 - 6 - 1);
  });

  it('(d) Retry-After: admitted exactly then, not a second earlier, whatever the ms offset', () => {
    for (const offset of [0, 1, 250, 500, 998, 999]) {
      const clock = new ManualClock(BASE + offset);
      const limiter = new MemoryRateLimiter(clock.now);
      // Limit 3: requests at 0 s, 10 s, 20 s; refused at 25 s. The first leaves the window at 60 s.
      const admitted: number[] = [];
      for (const at of [0, 10_000, 20_000]) {
        clock.ms = BASE + offset + at;
        assert.equal(limiter.consume('k', 3).allowed, true);
        admitted.push(clock.ms);
      }
      clock.ms = BASE + offset + 25_000;
      const refused = limiter.consume('k', 3);
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfter, 35, `offset ${offset}`);
      assert.deepEqual(rateLimitHeaders(refused), {
        'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(sec(BASE) + 80), 'retry-after': '35',
        'ratelimit-policy': '"key";q=3;w=60', 'ratelimit': '"key";r=0;t=35',
      });
      checkDecision(refused, clock.ms, 3, admitted, `offset ${offset}`);
      // On the real limiter: a second early is refused (and not counted), on time is admitted.
      clock.ms = BASE + offset + 25_000 + 34_000;
      assert.equal(limiter.consume('k', 3).allowed, false);
      clock.ms = BASE + offset + 25_000 + 35_000;
      assert.equal(limiter.consume('k', 3).allowed, true);
    }
  });

  it('(e) Reset is an integer >= now; at Reset the full limit is back', () => {
    const clock = new ManualClock(BASE + 700);
    const limiter = new MemoryRateLimiter(clock.now);
    const admitted: number[] = [];
    let last: RateLimitDecision | undefined;
    for (let i = 0; i < 5; i++) {
      last = limiter.consume('k', 5);
      admitted.push(clock.ms);
      clock.ms += 3_300;
    }
    clock.ms -= 3_300;
    assert.equal(last!.resetAt, sec(clock.ms) + 60);
    checkDecision(last!, clock.ms, 5, admitted, 'last of five');
    clock.ms = last!.resetAt * 1000;
    for (let i = 0; i < 5; i++) {
      const d = limiter.consume('k', 5);
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 4 - i);
    }
  });

  it('(f) refused requests do not count: a client retrying too early is never locked out (D5)', () => {
    const clock = new ManualClock(BASE + 10);
    const limiter = new MemoryRateLimiter(clock.now);
    for (let i = 0; i < 5; i++) assert.equal(limiter.consume('k', 5).allowed, true);
    const start = clock.ms;
    let refusals = 0;
    // A refused request every 100 ms for the rest of the window.
    for (clock.ms += 100; sec(clock.ms) < sec(start) + 60; clock.ms += 100) {
      const d = limiter.consume('k', 5);
      assert.equal(d.allowed, false);
      assert.equal(d.resetAt, sec(start) + 60, 'refusals do not push the reset later');
      assert.equal(d.retryAfter, sec(start) + 60 - sec(clock.ms), 'refusals do not push Retry-After later');
      refusals++;
    }
    assert.ok(refusals > 500);
    for (let i = 0; i < 5; i++) assert.equal(limiter.consume('k', 5).allowed, true, 'the full limit is back after the window');
    assert.equal(limiter.consume('k', 5).allowed, false);
  });

  it('(g) a lowered or raised limit takes effect at once', () => {
    const clock = new ManualClock(BASE + 300);
    const limiter = new MemoryRateLimiter(clock.now);
    for (let i = 0; i < 5; i++) assert.equal(limiter.consume('k', 10).remaining, 9 - i);
    clock.ms += 1_000;
    const lowered = limiter.consume('k', 3);
    assert.equal(lowered.allowed, false, '5 already used, new limit 3');
    assert.equal(lowered.limit, 3);
    assert.equal(lowered.remaining, 0);
    assert.equal(lowered.retryAfter, 59, 'room only once the 5 requests of one second have left');
    const raised = limiter.consume('k', 20);
    assert.equal(raised.allowed, true);
    assert.equal(raised.limit, 20);
    assert.equal(raised.remaining, 20 - 5 - 1);
    for (let i = 0; i < 14; i++) assert.equal(limiter.consume('k', 20).allowed, true);
    assert.equal(limiter.consume('k', 20).allowed, false);
    // Random sequences with limit changes still agree with the model and keep D15.
    for (let seed = 500; seed < 520; seed++) runSequence(seed, { length: 300, changeLimits: true, checkEvery: 7 });
  });

  it('keys are independent', () => {
    const clock = new ManualClock(BASE);
    const limiter = new MemoryRateLimiter(clock.now);
    for (let i = 0; i < 3; i++) assert.equal(limiter.consume('a', 3).allowed, true);
    assert.equal(limiter.consume('a', 3).allowed, false);
    for (let i = 0; i < 3; i++) assert.equal(limiter.consume('b', 3).remaining, 2 - i);
  });

  it('(h) sweeps idle keys once a window, and only idle ones', () => {
    const clock = new ManualClock(BASE + 5);
    const limiter = new MemoryRateLimiter(clock.now);
    const size = () => limiter.keysHeld;
    for (let i = 0; i < 10_000; i++) limiter.consume(`idle-${i}`, 60);
    clock.ms += 30_000;
    limiter.consume('busy', 1);
    assert.equal(size(), 10_001);
    clock.ms += 30_000; // 60 s after the idle keys' only second: they hold nothing any more
    limiter.consume('other', 60);
    assert.equal(size(), 2, 'the 10,000 idle keys are forgotten, the busy and the new one kept');
    // The busy key's state survived the sweep: its request of 30 s ago still counts.
    assert.equal(limiter.consume('busy', 1).allowed, false);
    clock.ms += 61_000;
    limiter.consume('third', 60);
    assert.equal(size(), 1, 'a window later every key but the new one is idle');
  });

  it('keeps the same small state whatever the limit (60 counters per key)', () => {
    const clock = new ManualClock(BASE);
    const limiter = new MemoryRateLimiter(clock.now);
    for (let i = 0; i < 200_000; i++) {
      if (i % 1000 === 0) clock.ms += 250;
      assert.equal(limiter.consume('k', 1_000_000).allowed, true);
    }
    const d = limiter.consume('k', 1_000_000);
    assert.equal(d.remaining, 1_000_000 - 200_001);
  });

  it('(i) a fixed-window limiter lets 2 x limit through at a window boundary; the sliding window does not', () => {
    /** The naive alternative: one counter per calendar minute. */
    class FixedWindow {
      private readonly counts = new Map<number, number>();
      consume(ms: number, limit: number): boolean {
        const minute = Math.floor(sec(ms) / 60);
        const used = this.counts.get(minute) ?? 0;
        if (used >= limit) return false;
        this.counts.set(minute, used + 1);
        return true;
      }
    }
    const limit = 60;
    // The last second of a calendar minute, then the first of the next one.
    const minuteStart = Math.ceil(BASE / 60_000) * 60_000;
    const instants = [...Array(limit).fill(minuteStart - 500), ...Array(limit).fill(minuteStart + 200)] as number[];

    const fixed = new FixedWindow();
    const fixedAdmitted = instants.filter((ms) => fixed.consume(ms, limit));
    assert.equal(fixedAdmitted.length, 2 * limit);
    assert.equal(maxInAnyWindow(fixedAdmitted), 2 * limit, 'the fixed window breaks D14 (the check can fail)');

    const clock = new ManualClock();
    const sliding = new MemoryRateLimiter(clock.now);
    const slidingAdmitted = instants.filter((ms) => {
      clock.ms = ms;
      return sliding.consume('k', limit).allowed;
    });
    assert.equal(slidingAdmitted.length, limit);
    assert.ok(maxInAnyWindow(slidingAdmitted) <= limit);
    assert.deepEqual(slidingAdmitted, instants.slice(0, limit), 'the first burst is admitted, the second refused');
  });

  it('rate-limit headers: Retry-After only on a refusal; the D29 fields say the same as X-RateLimit-*', () => {
    const clock = new ManualClock(BASE);
    const limiter = new MemoryRateLimiter(clock.now);
    const first = limiter.consume('k', 2);
    assert.deepEqual(rateLimitHeaders(first), {
      'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': String(sec(BASE) + 60),
      'ratelimit-policy': '"key";q=2;w=60', 'ratelimit': '"key";r=1;t=0',
    });
    clock.ms += 20_000;
    // The last request of the window: admitted, and `t` says when the next one will be (D29).
    const last = limiter.consume('k', 2);
    assert.deepEqual(rateLimitHeaders(last), {
      'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(sec(BASE) + 80),
      'ratelimit-policy': '"key";q=2;w=60', 'ratelimit': '"key";r=0;t=40',
    });
    clock.ms += 1_000;
    const refused = limiter.consume('k', 2);
    assert.deepEqual(rateLimitHeaders(refused), {
      'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(sec(BASE) + 80),
      'ratelimit-policy': '"key";q=2;w=60', 'ratelimit': '"key";r=0;t=39', 'retry-after': '39',
    });
    // A free answer (D21's 304) on the refused state: `t` as a refusal's, but no Retry-After.
    const peeked = limiter.peek('k', 2);
    assert.deepEqual(rateLimitHeaders(peeked, true), {
      'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(sec(BASE) + 80),
      'ratelimit-policy': '"key";q=2;w=60', 'ratelimit': '"key";r=0;t=39',
    });
    clock.ms += 39_000;
    assert.equal(limiter.peek('k', 2).retryAfter, 0, 'a request would be admitted now');
    assert.equal(limiter.consume('k', 2).allowed, true);
  });
});
