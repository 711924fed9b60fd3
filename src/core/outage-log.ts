import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { redactKeys } from './redact-keys.js';

/**
 * The log of one dependency's outages (the database, its change listener, Redis, a background
 * writer): ONE warning when an outage begins, with the error's message (not its stack: during an
 * outage every attempt fails the same way, and the stack says nothing the message does not),
 * debug lines while it lasts, and ONE info line with its duration when it ends (issue 30 items 4
 * and 5). An operator alerts on the warning and sees the outage close in the same log.
 */
export interface OutageMessages {
  /** The warning that begins an outage: what is lost, and what that means meanwhile. */
  lost: string;
  /** The info line that ends it: what is back. */
  back: string;
  /** Debug lines for the failures while it lasts (default: `lost`). */
  still?: string;
}

export class OutageLog {
  private since: number | undefined;
  /** Whether this outage's warning was logged (a quiet one ends quietly too). */
  private warned = false;
  private lastMessage = '';

  constructor(
    private readonly logger: Pick<Logger, 'warn' | 'info' | 'debug'>,
    private readonly messages: OutageMessages,
    private readonly options: {
      /** Monotonic milliseconds (tests move it by hand). */
      now?: () => number;
    } = {},
  ) {}

  /** True from the first failure until a success. */
  get down(): boolean {
    return this.since !== undefined;
  }

  /** How long the current outage has lasted (ms), or undefined. */
  get downMs(): number | undefined {
    return this.since === undefined ? undefined : this.now() - this.since;
  }

  /**
   * An attempt failed: the first failure of an outage warns, the rest are debug lines.
   * `partOfAnother`: this outage is part of one already warned of (a background write failing
   * while the database itself is away), so it begins, and ends, at debug level.
   */
  failed(error: unknown, partOfAnother = false, fields: Record<string, unknown> = {}): void {
    const message = messageOf(error);
    if (this.since === undefined) {
      this.since = this.now();
      this.lastMessage = message;
      this.warned = !partOfAnother;
      (this.warned ? this.logger.warn : this.logger.debug).call(this.logger, { ...fields, error: message }, this.messages.lost);
      return;
    }
    // A different error during the same outage is worth a line at debug level; the same one is noise.
    if (message !== this.lastMessage) {
      this.lastMessage = message;
      this.logger.debug({ ...fields, error: message }, this.messages.still ?? this.messages.lost);
    }
  }

  /** An attempt succeeded: ends the outage, if there was one, with its duration. */
  succeeded(fields: Record<string, unknown> = {}): void {
    if (this.since === undefined) return;
    const outageMs = Math.round(this.now() - this.since);
    this.since = undefined;
    (this.warned ? this.logger.info : this.logger.debug).call(this.logger, { ...fields, outage_ms: outageMs }, this.messages.back);
  }

  private now(): number {
    return this.options.now === undefined ? performance.now() : this.options.now();
  }
}

/**
 * The message of an error, on one line (a driver's multi-line message would break a log reader's
 * grep), with anything key-shaped redacted (D20).
 */
export function messageOf(error: unknown): string {
  return redactKeys(textOf(error).replace(/\s*\n\s*/g, ' ').trim());
}

function textOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message !== '') return error.message;
  // A connection refused on every address of a name (Node's happy eyeballs) is an AggregateError
  // with an empty message: its first error says what happened.
  if (error instanceof AggregateError && error.errors.length > 0) return textOf(error.errors[0]);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error.name;
}
