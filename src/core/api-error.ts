/**
 * An error that becomes a JSON `{error, message}` response (spec 2.4, D6). The codes are the
 * spec's table (section 7) plus `method_not_allowed` (D6); nothing else is ever sent as `error`.
 */
export const ERROR_CODES = ['bad_request', 'unauthorized', 'origin_not_allowed', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, 'bad_request', message);
export const unauthorized = (message: string) => new ApiError(401, 'unauthorized', message);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);
