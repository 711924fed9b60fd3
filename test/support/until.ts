/**
 * Waiting in tests without fixed sleeps (issue 42 item 4): `until` polls a condition and returns as
 * soon as it holds, or fails naming what it waited for. It observes an outcome (I/O, a log line, a
 * metric); it is never a timing assertion by itself. The suite's one poller: it looks again after
 * 5 ms, then less often, up to every 50 ms, so that a quick outcome is seen at once and a slow one
 * (a process's start, an HTTP call as the condition) costs little machine time while it comes.
 */
export interface UntilOptions {
  /** What is waited for, for the failure's message. */
  what: string;
  /** How long to wait before failing (default 20 s). */
  timeoutMs?: number;
  /** How often to look: a fixed period instead of 5 ms growing to 50 ms. */
  everyMs?: number;
}

export async function until(condition: () => boolean | Promise<boolean>, options: UntilOptions): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let pause = options.everyMs ?? 5;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs ?? 20_000} ms waiting for ${options.what}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    if (options.everyMs === undefined) pause = Math.min(pause * 2, 50);
  }
}

/** Resolves with `promise`'s outcome, or fails naming `what` after `timeoutMs`: a bound on a wait for an event. */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs)))]);
  } finally {
    clearTimeout(timer);
  }
}
