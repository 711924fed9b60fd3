import { destination, pino, symbols, type Logger } from 'pino';
import type { LogLevel } from '../config/index.js';

export type { Logger } from 'pino';

/** The messages of the per-request log lines (API and dashboard), which are written in batches. */
export const REQUEST_LOG_MESSAGES: ReadonlySet<string> = new Set(['request', 'dashboard request']);

export interface LoggerOptions {
  /**
   * For the serving processes: lines go to stdout in batches of up to 4 KB instead of one write
   * each, flushed every second (see `startLogFlush`) and on shutdown. Every other line (warnings,
   * errors, the rare state change such as "Redis is back") is flushed at the end of the current
   * turn of the event loop, coalesced, so a burst of them is one flush, not one per line (which
   * also kept piling listeners on the stream).
   */
  batched?: boolean;
  /**
   * Human-readable lines (pino-pretty) instead of JSON: the default when stdout is a terminal, so
   * that `npm start` reads well, while a pipe or a file gets one JSON object per line.
   */
  pretty?: boolean;
}

/**
 * The process's pino logger. Defence in depth for D20: no log line carries headers, but anything
 * that looks like a credential is redacted even if it got into one by accident.
 */
export async function createLogger(level: LogLevel, options: LoggerOptions = {}): Promise<Logger> {
  const base = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
  };
  if (options.pretty ?? process.stdout.isTTY === true) {
    // Loaded only for a terminal: pipes and files never pay for it.
    const { default: pretty } = await import('pino-pretty');
    return pino(base, pretty({ sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' }));
  }
  if (!options.batched) return pino(base, destination({ dest: 1, sync: true }));

  return pino(base, new TurnBatch(destination({ dest: 1, minLength: 4096, sync: false })));
}

/**
 * The stream of a serving process's logger, in front of pino's sonic-boom: the request lines of
 * one turn of the event loop reach sonic-boom as one string at the end of the turn. Written one
 * by one, each line made sonic-boom measure the UTF-8 length of all it held (up to 4 KB), about
 * 2-3 µs of a cached answer's 40 µs of CPU (README, Performance). Any other line (a warning, an
 * error, a state change) is handed over at once, after the lines before it, and sonic-boom is
 * flushed at the end of the turn. When the process exits (a crash, or process.exit() in the middle
 * of a turn), what is held is written synchronously, with sonic-boom's buffer.
 */
export class TurnBatch {
  /** pino tells a stream that asks the level and message of each line before it writes it. */
  readonly [symbols.needsMetadataGsym] = true;
  lastLevel = 0;
  lastMsg: unknown;
  private lines: string[] = [];
  private endOfTurnScheduled = false;
  private flushAtEndOfTurn = false;

  constructor(private readonly out: ReturnType<typeof destination>) {
    holdingAtExit.add(this);
    if (holdingAtExit.size === 1) process.on('exit', flushAllAtExit);
  }

  write(line: string): boolean {
    this.lines.push(line);
    const message = this.lastMsg;
    if (this.lastLevel >= 40 || typeof message !== 'string' || !REQUEST_LOG_MESSAGES.has(message)) {
      this.handOver();
      this.flushAtEndOfTurn = true;
    }
    if (!this.endOfTurnScheduled) {
      this.endOfTurnScheduled = true;
      setImmediate(this.endOfTurn);
    }
    return true;
  }

  /** pino's logger.flush(): what is held here, then sonic-boom's buffer. */
  flush(done?: (error?: Error) => void): void {
    this.handOver();
    this.out.flush(done);
  }

  flushSync(): void {
    this.handOver();
    this.out.flushSync();
  }

  /** At exit: nothing held may be lost, and nothing may throw (the stream may be gone already). */
  flushAtExit(): void {
    if (this.outDestroyed) return;
    try {
      this.flushSync();
    } catch {
      // The process is exiting: there is nowhere left to report it.
    }
  }

  private readonly endOfTurn = (): void => {
    this.endOfTurnScheduled = false;
    this.handOver();
    if (this.flushAtEndOfTurn) {
      this.flushAtEndOfTurn = false;
      if (!this.outDestroyed) this.out.flush();
    }
  };

  /** sonic-boom sets `destroyed` (its types do not declare it); a destroyed stream throws on flush. */
  private get outDestroyed(): boolean {
    return (this.out as { destroyed?: boolean }).destroyed === true;
  }

  private handOver(): void {
    if (this.lines.length === 0) return;
    const text = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.out.write(text);
  }
}

/** Bounds how long a batched line may wait: flushes every `intervalMs`. Returns the stop function. */
export function startLogFlush(logger: Logger, intervalMs = 1000): () => Promise<void> {
  const timer = setInterval(() => logger.flush(), intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
  };
}

/** The TurnBatches of this process (a serving process has one): one exit listener writes what each holds. */
const holdingAtExit = new Set<TurnBatch>();
function flushAllAtExit(): void {
  for (const batch of holdingAtExit) batch.flushAtExit();
}
