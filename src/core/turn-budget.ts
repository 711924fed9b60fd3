/** `LISTINGS_TURN_BUDGET=off` (read once): every step starts at once; the switch of the design record's A/B (bench/ab.ts). */
const BUDGETED = process.env.LISTINGS_TURN_BUDGET !== 'off';

/**
 * A share of each turn of the event loop for work that holds it. SQLite's driver runs every query
 * synchronously, so the cold requests that arrive together ran their queries, and the code
 * between them, back to back in one turn, while cached answers, timers and health checks waited
 * behind them.
 *
 * Each step (a query, or a transaction) calls `take()` before it starts and `done()` when it has
 * finished. The first step of a turn opens a window of `budgetMs`; steps inside it go on at once.
 * Once the window is spent, steps wait, in order of arrival, for later turns: after the I/O and
 * timers of a turn, the longest-waiting step goes on; when it is done, the next one, as long as
 * that turn's window has time left. A window is overrun by at most one step, and one turn can
 * hold two: one opened while it handles what arrived, closed when the turn reaches its check
 * phase, and one opened there to let waiting steps go (about 7 ms of steps in the first turn of a
 * burst, measured).
 * Nothing is dropped and the order is kept: cold requests take the CPU they took before, spread
 * over more turns.
 */
export class TurnBudget {
  /** When the open window started; undefined when none is open (it closes at the next check phase). */
  private windowStartedAt: number | undefined;
  private readonly waiting: Array<() => void> = [];
  /** Steps started and not done. Waiting steps are let through one at a time, when none is running. */
  private running = 0;
  private releaseScheduled = false;

  constructor(
    private readonly budgetMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Before a step. Undefined: start now. A promise: resolves when it is this step's turn. */
  take(): Promise<void> | undefined {
    if (!BUDGETED || (this.waiting.length === 0 && this.spend())) {
      this.running++;
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (this.running === 0) this.scheduleRelease();
    });
  }

  /** After a step, whether it succeeded or not. */
  done(): void {
    this.running--;
    if (this.running === 0 && this.waiting.length > 0) this.releaseOrWait();
  }

  /** Steps waiting now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** True while the open window has time left; opens one when none is open. */
  private spend(): boolean {
    const now = this.now();
    if (this.windowStartedAt === undefined) {
      this.windowStartedAt = now;
      setImmediate(this.closeWindow);
      return true;
    }
    return now - this.windowStartedAt < this.budgetMs;
  }

  private readonly closeWindow = (): void => {
    this.windowStartedAt = undefined;
  };

  /** The longest-waiting step goes on now if the window has time left, else on a later turn. */
  private releaseOrWait(): void {
    if (!this.spend()) {
      this.scheduleRelease();
      return;
    }
    this.running++;
    this.waiting.shift()!();
  }

  private scheduleRelease(): void {
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    setImmediate(this.releaseLater);
  }

  private readonly releaseLater = (): void => {
    this.releaseScheduled = false;
    if (this.running === 0 && this.waiting.length > 0) this.releaseOrWait();
  };
}
