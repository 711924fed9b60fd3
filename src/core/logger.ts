import { destination, pino, type Logger } from 'pino';
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

  let flushScheduled = false;
  const logger: Logger = pino(
    {
      ...base,
      hooks: {
        logMethod(args, method, lineLevel) {
          method.apply(this, args);
          const message = args[args.length - 1];
          if (!flushScheduled && (lineLevel >= 40 || typeof message !== 'string' || !REQUEST_LOG_MESSAGES.has(message))) {
            flushScheduled = true;
            setImmediate(() => {
              flushScheduled = false;
              logger.flush();
            });
          }
        },
      },
    },
    destination({ dest: 1, minLength: 4096, sync: false }),
  );
  return logger;
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
