import type { Clock } from '../core/clock.js';

/**
 * Keeps each key's last-used time in memory and writes them in one batch every `intervalMs` and
 * at shutdown, so a request never waits on a write (issue 2, item 3). The dashboard's "last used"
 * is therefore at most one interval behind.
 */
export class LastUsedTracker {
  private pending = new Map<string, number>();
  private writing: Map<string, number> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (times: ReadonlyMap<string, string>) => Promise<void>,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void,
    private readonly intervalMs = 10_000,
  ) {}

  touch(keyId: string): void {
    this.pending.set(keyId, this.clock());
  }

  /**
   * This process's last use of a key that is not stored yet (pending, or being written), in ms;
   * undefined when it has none. The dashboard adds it to the stored time, so that a key used a
   * moment ago does not read "Never" until the next flush.
   */
  peek(keyId: string): number | undefined {
    return this.pending.get(keyId) ?? this.writing?.get(keyId);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const times = new Map([...batch].map(([id, ms]) => [id, new Date(ms).toISOString()]));
    this.writing = batch;
    try {
      await this.write(times);
    } catch (error) {
      // Keep the times for the next attempt unless a newer touch replaced them.
      for (const [id, ms] of batch) if (!this.pending.has(id)) this.pending.set(id, ms);
      this.onError(error);
    } finally {
      if (this.writing === batch) this.writing = undefined;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
