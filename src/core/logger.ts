import { destination, pino, symbols, type Logger } from 'pino';
import type { LogLevel } from '../config/index.js';

export type { Logger } from 'pino';

/** The messages of the per-request log lines (API and dashboard), which are written in batches. */
export const REQUEST_LOG_MESSAGES: ReadonlySet<string> = new Set(['request', 'dashboard request']);

export interface LoggerOptions {
  /**
   * For the serving processes: lines go to stdout in writes of at least 4 KB instead of one write
   * each; less than that is flushed every second (see `startLogFlush`) and on shutdown. Every
   * other line (warnings, errors, the rare state change such as "Redis is back") is flushed at the
   * end of the current turn of the event loop, coalesced, so a burst of them is one flush, not one
   * per line (which also kept piling listeners on the stream).
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

  // Written synchronously, as pino writes by default: one write(2) per turn of the event loop
  // under load (TurnBatch hands the turn's lines over together), made on the main thread. Handed to
  // libuv's thread pool instead (sync: false), each write cost a wake-up of a pool thread and one of
  // the loop when it completed: cached details went from 30,400-31,800 to 34,400-37,100 answers a
  // second with this, three processes a side (README, Performance, "The log is written on the main
  // thread"). A stdout that cannot keep up (a stalled pipe) now slows the process instead of growing
  // its memory without bound, as with pino's defaults.
  return pino(base, new TurnBatch(destination({ dest: 1, minLength: 4096, sync: true })));
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
    this.scheduleEndOfTurn();
    return true;
  }

  /** A request line already serialised (see `requestLineWriter`): held like the request lines pino writes. */
  writeRequestLine(line: string): void {
    this.lines.push(line);
    this.scheduleEndOfTurn();
  }

  private scheduleEndOfTurn(): void {
    if (this.endOfTurnScheduled) return;
    this.endOfTurnScheduled = true;
    setImmediate(this.endOfTurn);
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

/** The fields of the one log line of an answered request (D19, D20), in the order they are written. */
export interface RequestLineFields {
  reqId: string;
  method: string;
  /** The route's pattern, or null for a request that matched none. */
  route: string | null;
  path: string;
  status: number;
  ms: number;
  key_prefix: string | null;
  /** The client's address: Fastify's `request.ip` under TRUST_PROXY (core/proxy-trust.ts). */
  client_address: string | null;
}

const INFO = 30;

/**
 * Writes the line `logger.info(fields, message)` would write, byte for byte. For the serving
 * logger (JSON lines into a TurnBatch) the line is one template instead of pino's generic
 * serialisation, which walks the object, escapes each key and value and joins the pieces: with
 * perf, pino's write was 4 % of the CPU of a cached answer, the one log line of every request.
 * The level, time and bindings are pino's own (its cached level prefix, time function and
 * bindings), so the line is pino's line; logger-batch.test.ts compares the two. Any other logger
 * (pino-pretty on a terminal, a test's logger) gets `logger.info`. pino's redaction paths name
 * none of these fields, and the path is redacted before it gets here (request-log.ts).
 *
 * Where pino's line would not be valid JSON, this one is: half of a surrogate pair is escaped
 * (pino writes it raw, and it becomes U+FFFD once encoded; Node's parser gives no such request
 * anyway), and a value of the wrong type is written as null rather than breaking the line or
 * throwing in a 'finish' listener. The level is the logger's own (Fastify's child of it has the
 * same, and nothing here changes levels at run time).
 */
export function requestLineWriter(logger: Logger, message: string): (fields: RequestLineFields) => void {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[symbols.streamSym];
  if (!(stream instanceof TurnBatch)) return (fields) => logger.info(fields, message);
  const levelPrefix = (internals[symbols.lsCacheSym] as Record<number, string>)[INFO]!;
  const time = internals[symbols.timeSym] as () => string;
  const bindings = internals[symbols.chindingsSym] as string;
  const end = `,"msg":${JSON.stringify(message)}}\n`;
  const text = (value: string | null) => (typeof value === 'string' ? jsonString(value) : 'null');
  // As pino writes a number that is not finite.
  const number = (value: number) => (Number.isFinite(value) ? value : null);
  return (fields) => {
    if (logger.levelVal > INFO) return;
    stream.writeRequestLine(
      `${levelPrefix}${time()}${bindings},"reqId":${text(fields.reqId)},"method":${text(fields.method)},"route":${text(fields.route)}` +
        `,"path":${text(fields.path)},"status":${number(fields.status)},"ms":${number(fields.ms)},"key_prefix":${text(fields.key_prefix)}` +
        `,"client_address":${text(fields.client_address)}${end}`,
    );
  };
}

/**
 * A string as JSON. Nearly every value of a request line needs no escape, and checking that here
 * costs less than a call of JSON.stringify (a call into the runtime); anything that does need one
 * (a quote, a backslash, a control character, half of a surrogate pair) gets JSON.stringify.
 */
export function jsonString(value: string): string {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(value);
  }
  return `"${value}"`;
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
