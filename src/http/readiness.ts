import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { OutageLog } from '../core/outage-log.js';

/**
 * Whether this process should be sent requests (issue 30 item 4): what GET /readyz answers and the
 * `listings_ready` metric shows. Not ready while
 *
 * - it shuts down (the drain: src/http/drain.ts);
 * - the database cannot serve the API's reads (storage `checkReads`: a row of each table they
 *   read, and on SQLite the file at its path being the one open and readable);
 * - it warms the indexes of the tenants read recently (src/readmodel/warm-up.ts).
 *
 * The database check is polled by load balancers every few seconds, by metric scrapes and by this
 * class's own monitor, so it must be cheap and bounded: one check runs at a time (callers share
 * it), a success is reused for `cacheMs` unless a request has failed since, and a check that has
 * not answered within `timeoutMs` counts as a failure (it is not started again while it hangs). A
 * failure is not reused: the next question checks again, so the instance is ready again as soon
 * as the database answers.
 *
 * The database's outages are logged here, once each (core/outage-log.ts): a warning with the
 * error's message when the check first fails, an info line with the outage's length when it
 * passes again. Requests that fail meanwhile are part of that outage (`explainsFailure`) and are
 * not logged with a stack trace each.
 */
export interface ReadinessOptions {
  /** Resolves when the database can serve the API's reads; throws saying why not. */
  checkDatabase(): Promise<void>;
  logger: Pick<Logger, 'warn' | 'info' | 'debug'>;
  /** How long a passed check is reused (ms). */
  cacheMs?: number;
  /** How long a check may take before it counts as failed (ms). */
  timeoutMs?: number;
  /** Monotonic milliseconds; tests move it by hand. */
  now?: () => number;
}

export const READINESS_CACHE_MS = 1000;
export const READINESS_TIMEOUT_MS = 2000;
/** How often the process checks by itself, so that an outage's end is logged (and seen) without a poll. */
export const READINESS_MONITOR_MS = 5000;
/**
 * A failure asks for a check that ends after it (explainsFailure), but not sooner than this after
 * the last one passed, so that a bug failing every request does not turn into a check per request.
 */
const RECHECK_AFTER_FAILURE_MS = 100;

export type ReadyState = { ready: true } | { ready: false; reason: NotReadyReason; message: string };
export type NotReadyReason = 'shutting_down' | 'database' | 'warming_up';

export class Readiness {
  private readonly cacheMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  readonly databaseOutage: OutageLog;
  private shuttingDown = false;
  private warming: string | undefined;
  /** When the last check passed (monotonic ms). */
  private passedAt = -Infinity;
  /**
   * Failures told (explainsFailure) so far. A check remembers how many had been told when it
   * began: its pass is not reused for a failure told after that (the failure contradicts it).
   */
  private failures = 0;
  private passedAfter = -1;
  /** The check being answered now, shared by every caller meanwhile, and `failures` when it began. */
  private answering: Promise<boolean> | undefined;
  private answeringAfter = -1;
  /** Outages of the database begun so far. */
  private outages = 0;
  /** The database's own promise, kept while it runs, even past its timeout: never two at once. */
  private running: Promise<void> | undefined;
  private monitor: NodeJS.Timeout | undefined;

  constructor(private readonly options: ReadinessOptions) {
    this.cacheMs = options.cacheMs ?? READINESS_CACHE_MS;
    this.timeoutMs = options.timeoutMs ?? READINESS_TIMEOUT_MS;
    this.now = options.now ?? (() => performance.now());
    this.databaseOutage = new OutageLog(
      options.logger,
      {
        lost: "database unavailable: it cannot serve the API's reads, which fail until it can; /readyz answers 503",
        still: 'database still unavailable',
        back: "database available again: it serves the API's reads; /readyz answers 200",
      },
      { now: this.now },
    );
  }

  /** What /readyz answers. While it warms up, the database is not asked: the warm-up reads it. */
  async state(): Promise<ReadyState> {
    if (this.shuttingDown) return { ready: false, reason: 'shutting_down', message: 'the instance is shutting down' };
    if (this.warming !== undefined) return { ready: false, reason: 'warming_up', message: this.warming };
    if (!(await this.databaseServes())) return { ready: false, reason: 'database', message: "the database cannot serve the API's reads" };
    // Asked again after the wait: the instance may have begun shutting down meanwhile.
    if (this.shuttingDown) return { ready: false, reason: 'shutting_down', message: 'the instance is shutting down' };
    return { ready: true };
  }

  /**
   * True when the database serves the API's reads: a passed check younger than `cacheMs` that
   * began after the last failure told, or a new check (or the one running, if it began after it).
   */
  databaseServes(): Promise<boolean> {
    const fresh = this.now() - this.passedAt < this.cacheMs;
    if (!this.databaseOutage.down && fresh && this.passedAfter === this.failures) return Promise.resolve(true);
    if (this.answering !== undefined) {
      return this.answeringAfter === this.failures ? this.answering : this.answering.then(() => this.databaseServes());
    }
    const after = this.failures;
    this.answeringAfter = after;
    this.answering = this.check(after).finally(() => {
      this.answering = undefined;
    });
    return this.answering;
  }

  /**
   * For a request (or the change listener) that just failed: true when the database cannot serve
   * the API's reads, so that the failure is part of that outage, logged once already (and needs no
   * line of its own with a stack trace); false when the database serves them and the failure is
   * something else. Known down: true at once. Otherwise by a check that ends after the failure
   * (one shared by every failure meanwhile), at most one per RECHECK_AFTER_FAILURE_MS.
   */
  async explainsFailure(): Promise<boolean> {
    if (this.databaseOutage.down) return true;
    // Shutting down, the store may be closed under a check: the failure is told as it is.
    if (this.shuttingDown) return false;
    this.failures++;
    const outagesBefore = this.outages;
    const wait = this.passedAt + RECHECK_AFTER_FAILURE_MS - this.now();
    if (wait > 0) await new Promise<void>((resolve) => setTimeout(resolve, wait).unref());
    const serves = await this.databaseServes();
    // An outage that began after the failure (found by another check meanwhile) explains it, even
    // if it is already over.
    return !serves || this.outages > outagesBefore;
  }

  /** The database is known to be unavailable now (the last check failed); synchronous. */
  get databaseDown(): boolean {
    return this.databaseOutage.down;
  }

  /** While warming up: not ready, with `message` as the reason. */
  warmingUp(message: string): void {
    this.warming = message;
  }

  warmedUp(): void {
    this.warming = undefined;
  }

  /** For good: the instance drains, and a load balancer must stop sending it requests. */
  shutDown(): void {
    this.shuttingDown = true;
    this.stopMonitor();
  }

  /** Checks every `intervalMs` by itself, so that an outage's start and end are logged without a poll. */
  startMonitor(intervalMs = READINESS_MONITOR_MS): void {
    this.monitor ??= setInterval(() => void this.databaseServes(), intervalMs);
    this.monitor.unref();
  }

  stopMonitor(): void {
    clearInterval(this.monitor);
    this.monitor = undefined;
  }

  private async check(after: number): Promise<boolean> {
    if (this.running === undefined) {
      const running = this.options.checkDatabase().finally(() => {
        if (this.running === running) this.running = undefined;
      });
      // It may settle after its timeout, when no one awaits it any more.
      running.catch(() => undefined);
      this.running = running;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.running,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the database did not answer the readiness check within ${this.timeoutMs} ms`)), this.timeoutMs);
          timer.unref();
        }),
      ]);
      this.passedAt = this.now();
      this.passedAfter = after;
      this.databaseOutage.succeeded();
      return true;
    } catch (error) {
      // A check that fails because the store was closed by the shutdown is no outage.
      if (this.shuttingDown) return false;
      if (!this.databaseOutage.down) this.outages++;
      this.databaseOutage.failed(error);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
