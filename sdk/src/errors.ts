import type { ErrorCode } from './openapi.js';

/**
 * The rate-limit state the API last reported (D15): `X-RateLimit-Limit`, `-Remaining`, `-Reset`;
 * or, from an answer that carried only the IETF fields (D29), `RateLimit-Policy`'s `q` and
 * `RateLimit`'s `r` and `t`.
 */
export interface RateLimit {
  /** The key's ceiling per rolling minute. */
  limit: number;
  /** How many more requests would be admitted right now. */
  remaining: number;
  /**
   * Unix time in whole seconds at which the full limit is back (`X-RateLimit-Reset`); from the IETF
   * fields alone, when the next request is admitted (now + `t`), which may be sooner.
   */
  reset: number;
}

/**
 * The SDK's own codes, for failures that never got an API answer: `network_error` (no answer, after
 * the retries), `timeout` (no answer within `timeoutMs`, after the retries), `invalid_response` (an
 * answer that is not the API's JSON, e.g. an HTML page from a proxy in between).
 */
export type ClientErrorCode = 'network_error' | 'timeout' | 'invalid_response';

/**
 * Every failure of a call, except an abort by the caller's own signal (which rejects with the
 * signal's reason, as `fetch` does).
 */
export class ListingsApiError extends Error {
  override readonly name = 'ListingsApiError';
  /** The HTTP status; 0 when there was no answer (`network_error`, `timeout`). */
  readonly status: number;
  /** The API's stable code (branch on this), or one of the SDK's own (ClientErrorCode). */
  readonly code: ErrorCode | ClientErrorCode | (string & {});
  /** The answer's `X-Request-Id`: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds to wait before trying again, from `Retry-After` (429). */
  readonly retryAfter: number | undefined;
  /** The rate-limit headers of this answer, when it had them. */
  readonly rateLimit: RateLimit | undefined;

  constructor(init: {
    status: number;
    code: ListingsApiError['code'];
    message: string;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    rateLimit?: RateLimit | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.rateLimit = init.rateLimit;
  }

  /** Whether the SDK retries this failure (429, 5xx, no answer); 400, 401, 403 and 404 never are. */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500 || this.status === 0;
  }
}
