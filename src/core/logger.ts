import { hostname } from 'node:os';
import { destination, pino, stdTimeFunctions, type Logger } from 'pino';

export type { Logger } from 'pino';
import type { LogLevel } from './log-levels.js';

export interface LoggerOptions {
  /**
   * For the serving processes (`servingLogger`): request lines go to stdout in writes of at least
   * 4 KB instead of one write each; less than that is flushed every second (see `startLogFlush`)
   * and on shutdown. Every other line (warnings, errors, the rare state change such as "Redis is
   * back") is flushed at the end of the current turn of the event loop, coalesced, so a burst of
   * them is one flush, not one per line (which also kept piling listeners on the stream).
   */
  batched?: boolean;
  /**
   * Human-readable lines (pino-pretty) instead of JSON: the default when stdout is a terminal, so
   * that `npm start` reads well, while a pipe or a file gets one JSON object per line.
   */
  pretty?: boolean;
}

/** pino's options for every logger of the process. */
function loggerOptions(level: LogLevel) {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
  };
}

/**
 * The process's pino logger. Defence in depth for D20: no log line carries headers, but anything
 * that looks like a credential is redacted even if it got into one by accident.
 */
export async function createLogger(level: LogLevel, options: LoggerOptions = {}): Promise<Logger> {
  if (options.pretty ?? process.stdout.isTTY === true) {
    // Loaded only for a terminal: pipes and files never pay for it.
    const { default: pretty } = await import('pino-pretty');
    return pino(loggerOptions(level), pretty({ sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' }));
  }
  if (!options.batched) return pino(loggerOptions(level), destination({ dest: 1, sync: true }));

  // Written synchronously, as pino writes by default: one write(2) per turn of the event loop
  // under load (TurnBatch hands the turn's lines over together), made on the main thread. Handed to
  // libuv's thread pool instead (sync: false), each write cost a wake-up of a pool thread and one of
  // the loop when it completed (docs/design/request-log-line.md). A
  // stdout that cannot keep up (a stalled pipe) now slows the process instead of growing its
  // memory without bound, as with pino's defaults.
  return servingLogger(level, destination({ dest: 1, minLength: 4096, sync: true }));
}

/** What a TurnBatch writes into: pino's sonic-boom (`pino.destination`), or a test's capture. */
export interface BatchOutput {
  write(text: string): unknown;
  flush(done?: (error?: Error) => void): void;
  flushSync(): void;
}

/** What `requestLineWriter` needs of a serving logger to write its lines as pino would. */
interface ServingLogger {
  batch: TurnBatch;
  /** The logger's time function (pino's `timestamp` option): the same function for both kinds of line. */
  time: () => string;
  /** The logger's base fields as pino writes them after the time: `,"pid":…,"hostname":…`. */
  bindings: string;
}

/** The loggers `servingLogger` made, with what their request lines are made of. */
const servingLoggers = new WeakMap<Logger, ServingLogger>();

/**
 * The logger of a serving process: pino, with the options of every logger, into a TurnBatch in
 * front of `out`. Its request lines are written by `requestLineWriter` from what is passed to
 * pino here (its base fields and its time function), so that they are the lines pino would write
 * (docs/design/request-log-line.md). `time` is pino's `timestamp` option (a test's fixed clock).
 */
export function servingLogger(level: LogLevel, out: BatchOutput, time: () => string = stdTimeFunctions.epochTime): Logger {
  const batch = new TurnBatch(out);
  // pino's default base fields, given explicitly so that the request lines' template has them.
  const base = { pid: process.pid, hostname: hostname() };
  const logger = pino({ ...loggerOptions(level), base, timestamp: time }, batch);
  servingLoggers.set(logger, { batch, time, bindings: `,"pid":${JSON.stringify(base.pid)},"hostname":${JSON.stringify(base.hostname)}` });
  return logger;
}

/**
 * The stream of a serving process's logger, in front of pino's sonic-boom: the request lines of
 * one turn of the event loop (written by `requestLineWriter`) reach sonic-boom as one string at
 * the end of the turn. Written one by one, each line made sonic-boom measure the UTF-8 length of
 * all it held (up to 4 KB): a cost on every request (docs/design/request-log-line.md). Any line
 * pino writes (a warning, an error, a state change, a dashboard request) is handed over at once,
 * after the lines before it, and sonic-boom is flushed at the end of the turn. When the process
 * exits (a crash, or process.exit() in the middle of a turn), what is held is written
 * synchronously, with sonic-boom's buffer.
 */
export class TurnBatch {
  private lines: string[] = [];
  private endOfTurnScheduled = false;
  private flushAtEndOfTurn = false;

  constructor(private readonly out: BatchOutput) {
    holdingAtExit.add(this);
    if (holdingAtExit.size === 1) process.on('exit', flushAllAtExit);
  }

  /** pino's write: a line that goes out at once (after what is held), flushed at the end of the turn. */
  write(line: string): boolean {
    this.lines.push(line);
    this.handOver();
    this.flushAtEndOfTurn = true;
    this.scheduleEndOfTurn();
    return true;
  }

  /** A request line (`requestLineWriter`): held until the end of the turn, written in sonic-boom's writes of 4 KB. */
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

/**
 * The fields of the one log line of an answered request (D19, D20), in the order they are
 * written. Strings a client chose (path, host, origin) are redacted before they get here
 * (request-log.ts); none is the key, its hash or a header (D20).
 */
export interface RequestLineFields {
  reqId: string;
  method: string;
  /** The route's pattern, or null for a request that matched none. */
  route: string | null;
  path: string;
  status: number;
  ms: number;
  /** The display prefix of the key (D20): of the key that passed the 401 stage, or of the known key it refused. */
  key_prefix: string | null;
  /** The client's address: Fastify's `request.ip` under TRUST_PROXY (core/proxy-trust.ts). */
  client_address: string | null;
  /** The host asked for (X-Forwarded-Host under TRUST_PROXY), redacted and cut. */
  host: string | null;
  /** The country the host serves (D3), once the guard's country step found it. */
  country: string | null;
  /** The Origin header of a browser's request, redacted and cut. */
  origin: string | null;
  /** The stored key's id: past the 401 stage, or the known key a 401 refused (revoked, another country's). */
  key_id: string | null;
  /** The account of that key. */
  account_id: string | null;
  /** The error code of an error answer (the `error` of its body, D6), else null. */
  error: string | null;
  /** Why it failed, finer than the code (api-error.ts ERROR_REASONS: `revoked_key`, `wrong_country`...); never sent to the client. */
  reason: string | null;
}

/** `LISTINGS_REQUEST_LOG=pino` (read once): request lines by pino's own method; the switch of the design record's A/B (bench/ab.ts). */
const TEMPLATE = process.env.LISTINGS_REQUEST_LOG !== 'pino';

/** The levels a request line is written at: info, and debug for the health checks (their routes' `logLevel`). */
export type RequestLineLevel = 'info' | 'debug';

/** Writes one request line at a level (default info). */
export type RequestLineWriter = (fields: RequestLineFields, level?: RequestLineLevel) => void;

/**
 * Writes the line `logger[level](fields, message)` would write, byte for byte. For a serving
 * logger (`servingLogger`) the line is one template instead of pino's generic serialisation,
 * which walks the object, checks each key for a serializer and a redaction and escapes each
 * value: for the fields of a request line that costs several times the template
 * (docs/design/request-log-line.md has the figures). The level number, the time and the base
 * fields are those that `servingLogger` gave pino (its level numbers are pino's public
 * `logger.levels`), so the line is pino's line; logger-batch.test.ts compares the two for the
 * same logger. Any other logger (pino-pretty on a terminal, a test's plain pino) gets pino's own
 * method. pino's redaction paths name none of these fields.
 *
 * Where pino's line would not be valid JSON, this one is: half of a surrogate pair is escaped
 * (pino writes it raw, and it becomes U+FFFD once encoded; Node's parser gives no such request
 * anyway), and a value of the wrong type is written as null rather than breaking the line or
 * throwing in a 'finish' listener.
 */
export function requestLineWriter(logger: Logger, message: string): RequestLineWriter {
  const serving = TEMPLATE ? servingLoggers.get(logger) : undefined;
  if (serving === undefined) return (fields, level = 'info') => logger[level](fields, message);
  const { batch, time, bindings } = serving;
  const info = logger.levels.values.info!;
  const debug = logger.levels.values.debug!;
  const prefixes = { info: `{"level":${info}`, debug: `{"level":${debug}` };
  const end = `,"msg":${JSON.stringify(message)}}\n`;
  const text = (value: string | null) => (typeof value === 'string' ? jsonString(value) : 'null');
  // As pino writes a number that is not finite.
  const number = (value: number) => (Number.isFinite(value) ? value : null);
  return (fields, level = 'info') => {
    // The logger's level now: a change of LOG_LEVEL at run time (logger.level = ...) applies.
    if ((level === 'info' ? info : debug) < logger.levelVal) return;
    batch.writeRequestLine(
      `${prefixes[level]}${time()}${bindings},"reqId":${text(fields.reqId)},"method":${text(fields.method)},"route":${text(fields.route)}` +
        `,"path":${text(fields.path)},"status":${number(fields.status)},"ms":${number(fields.ms)},"key_prefix":${text(fields.key_prefix)}` +
        `,"client_address":${text(fields.client_address)},"host":${text(fields.host)},"country":${text(fields.country)}` +
        `,"origin":${text(fields.origin)},"key_id":${text(fields.key_id)},"account_id":${text(fields.account_id)}` +
        `,"error":${text(fields.error)},"reason":${text(fields.reason)}${end}`,
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
