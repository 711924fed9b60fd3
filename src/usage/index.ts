import type { FastifyReply, FastifyRequest } from 'fastify';
import { redactedExcerpt } from '../auth/key-format.js';
import { ERROR_CODES, type ErrorReason } from '../core/api-error.js';
import type { Clock } from '../core/clock.js';
import { loggablePath } from '../http/request-log.js';
import { FAILED_REQUESTS_KEPT, type FailedRequest, type UsageBatch, type UsageRow } from '../storage/index.js';

/**
 * What usage is counted by (issue 12): `200`, `304`, or the error code of the answer (D6). In this
 * API each error status has exactly one code, so the status says it.
 */
export const OUTCOMES = ['200', '304', ...ERROR_CODES] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Index in OUTCOMES of the first error code: outcomes from here on are failures. */
export const FIRST_ERROR = 2;

const INDEX = new Map<string, number>(OUTCOMES.map((o, i) => [o, i]));
const STATUS_OUTCOME = new Int8Array(600).fill(-1);
STATUS_OUTCOME[200] = 0;
STATUS_OUTCOME[304] = 1;
const byCode = (code: Outcome) => INDEX.get(code)!;
for (const status of [400, 413, 414, 431]) STATUS_OUTCOME[status] = byCode('bad_request');
STATUS_OUTCOME[401] = byCode('unauthorized');
STATUS_OUTCOME[403] = byCode('origin_not_allowed');
STATUS_OUTCOME[404] = byCode('not_found');
STATUS_OUTCOME[405] = byCode('method_not_allowed');
STATUS_OUTCOME[429] = byCode('rate_limited');
for (let status = 500; status < 600; status++) STATUS_OUTCOME[status] = byCode('internal_error');

/** The index in OUTCOMES of an answer's status, or -1 when it is none (a 204 preflight, say). */
export function outcomeOfStatus(status: number): number {
  return status >= 0 && status < 600 ? STATUS_OUTCOME[status]! : -1;
}

export function isOutcome(text: string): text is Outcome {
  return INDEX.has(text);
}

/**
 * Usage counted per key (issue 12) without a database write per request: each instance counts in
 * memory (a Map per five-minute bucket of key id -> one integer per outcome) and writes every
 * `intervalMs` what it counted: transactions of at most 100 keys that add their counts to the
 * stored ones (an upsert that adds, so every instance's counts sum) for the five-minute bucket and
 * for its hour, then the failed requests (the last 200 per account); once a minute it prunes old
 * buckets. A crash loses at most one interval; a failed write keeps what it did not store for the
 * next one.
 *
 * What is attributed to a key: every answer to a request whose key passed the 401 stage
 * (`request.apiKey`), and a 401 for a well-formed key whose hash is known (revoked, or sent to
 * another country's host): that key, of that account, as the key step found it
 * (`request.knownKey`, set from the 401's error). A missing, malformed or unknown key belongs to
 * no account and is counted only by the metrics. Nothing of the Authorization header is kept:
 * only the id of the stored key its hash matched. A failed request keeps why it failed (its
 * reason, api-error.ts) and the client's address, so that the dashboard explains it by what
 * happened then (issue 29 item 11).
 *
 * A failed request is noted as the strings the request already holds, and made into its stored
 * row (redacted, cut, dated) only at the flush, where at most the last FAILED_REQUESTS_KEPT of an
 * account survive: so a 401 on a revoked or other-country key costs the request path no more
 * than an unknown key's, which would otherwise tell a caller that the key exists (issue 40 item
 * 11), and a flood of failures costs a bounded amount of formatting per flush.
 */
export const BUCKET_SPANS = { fiveMinutes: 300, hour: 3600 } as const;
/** How long buckets are kept, per span in seconds. */
export const RETENTION_MS: ReadonlyMap<number, number> = new Map([
  [BUCKET_SPANS.fiveMinutes, 48 * 3_600_000],
  [BUCKET_SPANS.hour, 90 * 86_400_000],
]);
const FIVE_MINUTES_MS = BUCKET_SPANS.fiveMinutes * 1000;
const HOUR_MS = BUCKET_SPANS.hour * 1000;
/** Old buckets are pruned by a flush at most this often. */
const PRUNE_EVERY_MS = 60_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** The message of the error answer, set by the app's error handler (kept with a failed request). */
    errorMessage: string | null;
    /** Why it failed (api-error.ts), set with the message: what the dashboard's advice is chosen by. */
    errorReason: ErrorReason | null;
  }
}

/** One key's counts in one bucket: one integer per outcome. */
class KeyCounts {
  readonly n = new Float64Array(OUTCOMES.length);
  constructor(readonly accountId: string) {}
}

export interface UsageOptions {
  /** Writes one part of a flush in one transaction (store.usage.recordBatch). */
  write(batch: UsageBatch): Promise<void>;
  /** Deletes buckets older than their span's retention (store.usage.pruneBuckets). */
  prune(before: ReadonlyMap<number, string>): Promise<unknown>;
  clock: Clock;
  onError(error: unknown): void;
  intervalMs?: number;
}

/** A failed request as noted on the request path: what the request holds, not yet made into a row (see failedRequestRow). */
interface PendingFailure {
  accountId: string;
  keyId: string;
  at: number;
  status: number;
  outcome: number;
  method: string;
  url: string;
  origin: string | string[] | undefined;
  requestId: string;
  message: string | null;
  reason: ErrorReason | null;
  ip: string | undefined;
  headers: Pick<FastifyRequest['headers'], 'sec-fetch-site' | 'sec-fetch-mode' | 'sec-fetch-dest'>;
}

/** The stored row of a failed request: every value the client chose redacted and cut (D20). */
function failedRequestRow(f: PendingFailure): Omit<FailedRequest, 'id'> {
  return {
    account_id: f.accountId,
    key_id: f.keyId,
    at: new Date(f.at).toISOString(),
    status: f.status,
    code: OUTCOMES[f.outcome]!,
    method: f.method.slice(0, 16),
    path: loggablePath(f.url),
    origin: typeof f.origin === 'string' ? redactedExcerpt(f.origin, 200) : null,
    request_id: f.requestId.slice(0, 140),
    message: redactedExcerpt(f.message ?? '', 300),
    reason: f.reason,
    // Fastify's, as TRUST_PROXY has it: behind a proxy it is read from X-Forwarded-For, which a
    // client writes, so it is redacted like the rest (D20).
    client_ip: redactedExcerpt(f.ip ?? '', 64) || null,
    sec_fetch: fetchMetadata(f.headers),
  };
}

export class UsageCounter {
  private buckets = new Map<number, Map<string, KeyCounts>>();
  private lastBucket = -1;
  private lastMap: Map<string, KeyCounts> | undefined;
  private failures = new Map<string, PendingFailure[]>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastPrune = Number.NEGATIVE_INFINITY;
  readonly intervalMs: number;

  constructor(private readonly options: UsageOptions) {
    this.intervalMs = options.intervalMs ?? 5000;
  }

  /** The request path's one call, when an answer is complete. Memory only. */
  requestCompleted(request: FastifyRequest, reply: FastifyReply): void {
    const status = reply.statusCode;
    const outcome = outcomeOfStatus(status);
    if (outcome < 0) return;
    const key = request.apiKey;
    if (key != null) {
      const at = this.options.clock();
      this.count(key.id, key.accountId, outcome, at);
      if (outcome >= FIRST_ERROR) this.fail(request, key.id, key.accountId, status, outcome, at);
    } else if (status === 401 && request.knownKey != null) {
      // A /v1 request refused at the key step for a key that exists (revoked, or another
      // country's): the key step found it, so it is not looked up again.
      const known = request.knownKey;
      const at = this.options.clock();
      this.count(known.id, known.accountId, outcome, at);
      this.fail(request, known.id, known.accountId, status, outcome, at);
    }
  }

  /** Adds `n` requests (default one) of a key with an outcome (an index of OUTCOMES) at a time. */
  count(keyId: string, accountId: string, outcome: number, at: number, n = 1): void {
    const bucket = at - (at % FIVE_MINUTES_MS);
    let byKey = bucket === this.lastBucket ? this.lastMap : undefined;
    if (byKey === undefined) {
      byKey = this.buckets.get(bucket);
      if (byKey === undefined) {
        byKey = new Map();
        this.buckets.set(bucket, byKey);
      }
      this.lastBucket = bucket;
      this.lastMap = byKey;
    }
    let counts = byKey.get(keyId);
    if (counts === undefined) {
      counts = new KeyCounts(accountId);
      byKey.set(keyId, counts);
    }
    counts.n[outcome]! += n;
  }

  private fail(request: FastifyRequest, keyId: string, accountId: string, status: number, outcome: number, at: number): void {
    let list = this.failures.get(accountId);
    if (list === undefined) {
      list = [];
      this.failures.set(accountId, list);
    }
    // Only the newest FAILED_REQUESTS_KEPT of an account can survive the flush anyway.
    if (list.length >= FAILED_REQUESTS_KEPT) list.shift();
    const { headers } = request;
    list.push({
      accountId,
      keyId,
      at,
      status,
      outcome,
      method: request.method,
      url: request.url,
      origin: headers.origin,
      requestId: request.id,
      message: request.errorMessage ?? null,
      reason: request.errorReason ?? null,
      ip: request.ip,
      headers: { 'sec-fetch-site': headers['sec-fetch-site'], 'sec-fetch-mode': headers['sec-fetch-mode'], 'sec-fetch-dest': headers['sec-fetch-dest'] },
    });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** Writes what was counted since the last flush in one batch (and prunes, once a minute). One at a time. */
  flush(): Promise<void> {
    if (this.running !== undefined) return this.running.then(() => this.flush());
    this.running = this.flushOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async flushOnce(): Promise<void> {
    const now = this.options.clock();
    const pruneDue = now - this.lastPrune >= PRUNE_EVERY_MS;
    if (this.buckets.size === 0 && this.failures.size === 0 && !pruneDue) return;
    const buckets = this.buckets;
    const failures = this.failures;
    this.buckets = new Map();
    this.lastBucket = -1;
    this.lastMap = undefined;
    this.failures = new Map();

    const parts = [...countParts(buckets), ...failureParts(failures)];
    for (const [i, part] of parts.entries()) {
      try {
        await this.options.write(part.batch);
      } catch (error) {
        // The parts written are stored; the rest are kept for the next flush, added to what was
        // counted meanwhile (so nothing is lost, and nothing counted twice).
        for (const rest of parts.slice(i)) this.restore(rest);
        this.options.onError(error);
        return;
      }
    }
    if (!pruneDue) return;
    try {
      await this.options.prune(new Map([...RETENTION_MS].map(([span, ms]) => [span, new Date(now - ms).toISOString()])));
      this.lastPrune = now;
    } catch (error) {
      this.options.onError(error);
    }
  }

  /** Puts back what a part held, for the next flush. */
  private restore(part: FlushPart): void {
    for (const { start, keyId, counts } of part.counted) {
      for (let i = 0; i < counts.n.length; i++) {
        if (counts.n[i]! > 0) this.count(keyId, counts.accountId, i, start, counts.n[i]!);
      }
    }
    for (const [accountId, list] of part.failed) {
      const newer = this.failures.get(accountId) ?? [];
      this.failures.set(accountId, [...list, ...newer].slice(-FAILED_REQUESTS_KEPT));
    }
  }

  /** Stops the timer and writes what is left (shutdown). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/**
 * The request's Fetch Metadata as `site mode dest` (`-` for one not sent), or '' when it sent none
 * of the three: every current browser adds them to its requests, a script or curl does not. Only
 * read for a failed request; each value cut to 20 characters and redacted like the rest (D20).
 */
export function fetchMetadata(headers: PendingFailure['headers']): string {
  const values = [headers['sec-fetch-site'], headers['sec-fetch-mode'], headers['sec-fetch-dest']];
  if (values.every((v) => v === undefined)) return '';
  return values.map((v) => (typeof v === 'string' && v !== '' ? redactedExcerpt(v.replace(/\s+/g, '_'), 20) : '-')).join(' ');
}

/**
 * One transaction of a flush, and what it holds (to put back if it fails). A flush is written in
 * parts of at most KEYS_PER_WRITE keys' counts, then of failed requests by account, so that with
 * SQLite's synchronous driver each holds the event loop a few milliseconds: a server that saw a
 * thousand keys in one interval held it about 30 ms when a flush was one transaction.
 */
interface FlushPart {
  batch: UsageBatch;
  counted: Array<{ start: number; keyId: string; counts: KeyCounts }>;
  failed: Array<[string, PendingFailure[]]>;
}

export const KEYS_PER_WRITE = 100;
/** Failed requests per part (an account's are never split: its ring is trimmed in the same transaction). */
export const FAILURES_PER_WRITE = 200;

function countParts(buckets: ReadonlyMap<number, ReadonlyMap<string, KeyCounts>>): FlushPart[] {
  const parts: FlushPart[] = [];
  let counted: FlushPart['counted'] = [];
  const close = () => {
    if (counted.length > 0) parts.push({ batch: { counts: usageRows(counted), failures: [] }, counted, failed: [] });
    counted = [];
  };
  for (const [start, byKey] of buckets) {
    for (const [keyId, counts] of byKey) {
      counted.push({ start, keyId, counts });
      if (counted.length >= KEYS_PER_WRITE) close();
    }
  }
  close();
  return parts;
}

/** The rows of a part: each key's counts in its five-minute bucket and in that bucket's hour. */
function usageRows(counted: FlushPart['counted']): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const add = (keyId: string, accountId: string, span: number, start: number, outcome: number, n: number) => {
    const bucketStart = new Date(start).toISOString();
    const id = `${keyId}\n${span}\n${bucketStart}\n${outcome}`;
    const row = rows.get(id);
    if (row !== undefined) row.n += n;
    else rows.set(id, { key_id: keyId, account_id: accountId, span, bucket_start: bucketStart, outcome: OUTCOMES[outcome]!, n });
  };
  for (const { start, keyId, counts } of counted) {
    for (let i = 0; i < counts.n.length; i++) {
      const n = counts.n[i]!;
      if (n === 0) continue;
      add(keyId, counts.accountId, BUCKET_SPANS.fiveMinutes, start, i, n);
      add(keyId, counts.accountId, BUCKET_SPANS.hour, start - (start % HOUR_MS), i, n);
    }
  }
  return [...rows.values()];
}

function failureParts(failures: ReadonlyMap<string, PendingFailure[]>): FlushPart[] {
  const parts: FlushPart[] = [];
  let failed: FlushPart['failed'] = [];
  let size = 0;
  const close = () => {
    if (failed.length > 0) parts.push({ batch: { counts: [], failures: failed.flatMap(([, list]) => list.map(failedRequestRow)) }, counted: [], failed });
    failed = [];
    size = 0;
  };
  for (const [accountId, list] of failures) {
    if (size > 0 && size + list.length > FAILURES_PER_WRITE) close();
    failed.push([accountId, list]);
    size += list.length;
  }
  close();
  return parts;
}

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
