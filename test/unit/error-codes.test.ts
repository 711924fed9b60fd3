import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, ERROR_CODES, ERROR_STATUS, badRequest, errorBody, notFound, unauthorized } from '../../src/core/api-error.js';

/** One table ties each error code to its status (spec section 7, D6); one writer makes every body. */
describe('error codes, statuses and bodies (spec 2.4, section 7, D6)', () => {
  it('every code has the status of the spec\'s table', () => {
    assert.deepEqual(Object.keys(ERROR_STATUS).sort(), [...ERROR_CODES].sort());
    assert.deepEqual(ERROR_STATUS, {
      bad_request: 400, unauthorized: 401, origin_not_allowed: 403, not_found: 404, method_not_allowed: 405, rate_limited: 429, internal_error: 500,
    });
  });

  it('the factories answer with their code\'s status', () => {
    for (const error of [badRequest('x'), unauthorized('x', 'missing_key'), notFound('x', 'unknown_route')]) {
      assert.ok(error instanceof ApiError);
      assert.equal(error.statusCode, ERROR_STATUS[error.code]);
    }
  });

  it('a body is exactly {error, message}, escaped as JSON', () => {
    assert.equal(errorBody('bad_request', 'Query parameter "page" holds "\\u0000".'), '{"error":"bad_request","message":"Query parameter \\"page\\" holds \\"\\\\u0000\\"."}');
    assert.deepEqual(JSON.parse(errorBody('not_found', 'No route.')), { error: 'not_found', message: 'No route.' });
  });
});
