/**
 * An error that becomes a JSON `{error, message}` response (spec 2.4, D6). The codes are the
 * spec's table (section 7) plus `method_not_allowed` (D6); nothing else is ever sent as `error`.
 */
export const ERROR_CODES = ['bad_request', 'unauthorized', 'origin_not_allowed', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Each code's status. A few answers keep a code with a more precise status, as D6 allows:
 * `bad_request` for 413, 417 and 431; `internal_error` for 503 from `/readyz`.
 */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  bad_request: 400,
  unauthorized: 401,
  origin_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  rate_limited: 429,
  internal_error: 500,
};

/** The one writer of an error body (spec 2.4, D6): `{"error": CODE, "message": TEXT}`. */
export function errorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ error: code, message });
}

/**
 * Why a request failed, finer than its code: which step refused it (D5's guard, a parameter, the
 * route). Kept with a failed request (issue 29 item 11) so that the dashboard's advice is about
 * what happened then, not about the key's state now; never sent in the response (the message says
 * it in words, and `unknown_key` and `revoked_key` answer alike: a caller is not told which keys
 * exist).
 */
export const ERROR_REASONS = [
  // 400
  'malformed_request',
  'bad_parameter',
  'bad_cursor',
  // 401: the key step (auth/authenticate.ts), in its order
  'repeated_authorization',
  'missing_key',
  'malformed_authorization',
  'malformed_key',
  'unknown_key',
  'revoked_key',
  'wrong_country',
  // 403: the origin step (D17)
  'null_origin',
  'malformed_origin',
  'origin_not_registered',
  // 404
  'unknown_host',
  'unknown_route',
  'listing_not_found',
  // 405, 429, 500
  'method_not_allowed',
  'rate_limited',
  'internal_error',
  // 500 because the database failed (storage/database-errors.ts)
  'database_unavailable',
] as const;
export type ErrorReason = (typeof ERROR_REASONS)[number];

const REASONS: ReadonlySet<string> = new Set(ERROR_REASONS);
export const isErrorReason = (text: string | null | undefined): text is ErrorReason => text != null && REASONS.has(text);

/**
 * The stored key a refused request presented, when one matched (a revoked key, another country's):
 * what the request's log line names it by. Never the key or its hash (D20).
 */
export interface KnownKey {
  readonly id: string;
  readonly accountId: string;
  /** The display prefix (D2, D20). */
  readonly prefix: string;
}

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly reason: ErrorReason | null = null,
    /** For a 401 on a key that exists: which one (the log line's key_id); never sent. */
    readonly knownKey: KnownKey | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, reason: ErrorReason = 'bad_parameter') => new ApiError(ERROR_STATUS.bad_request, 'bad_request', message, {}, reason);
export const unauthorized = (message: string, reason: ErrorReason, knownKey: KnownKey | null = null) =>
  new ApiError(ERROR_STATUS.unauthorized, 'unauthorized', message, {}, reason, knownKey);
export const notFound = (message: string, reason: ErrorReason) => new ApiError(ERROR_STATUS.not_found, 'not_found', message, {}, reason);
