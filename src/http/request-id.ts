import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { redactKeys } from '../auth/key-format.js';

/**
 * Request ids (D19): `req_` + 16 random hex characters fixed per process + a counter. Unique
 * across instances without the cost of a random UUID per request.
 */
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;

export function nextRequestId(): string {
  requestCounter = (requestCounter + 1) % Number.MAX_SAFE_INTEGER;
  return `${REQUEST_ID_PREFIX}${requestCounter.toString(36).padStart(6, '0')}`;
}

/**
 * A proxy's request id is reused (D19) only when TRUST_PROXY is set and it looks like an id: not a
 * key either (D20), since the id is logged, stored with a failed request and shown by the dashboard
 * (a proxy may pass on what its client sent).
 */
const FORWARDED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of a request: the trusted proxy's, or a new one. */
export function requestIdFor(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = req.headers['x-request-id'];
  if (trustProxy && typeof forwarded === 'string' && FORWARDED_REQUEST_ID.test(forwarded) && redactKeys(forwarded) === forwarded) return forwarded;
  return nextRequestId();
}
