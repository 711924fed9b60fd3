import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { fromTrustedProxy, type ProxyTrust } from '../core/proxy-trust.js';

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

/** A proxy's request id is reused (D19) only when it comes from a trusted proxy (TRUST_PROXY) and looks like an id. */
const FORWARDED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of a request: the trusted proxy's, or a new one. */
export function requestIdFor(req: IncomingMessage, trust: ProxyTrust | false): string {
  const forwarded = req.headers['x-request-id'];
  if (typeof forwarded === 'string' && FORWARDED_REQUEST_ID.test(forwarded) && fromTrustedProxy(req, trust)) return forwarded;
  return nextRequestId();
}
