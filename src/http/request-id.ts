import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { redactKeys } from '../auth/key-format.js';
import { fromTrustedProxy, type ProxyTrust } from '../core/proxy-trust.js';

/**
 * Request ids (D19): `req_` and a random UUID, unique across instances. Random, not a
 * counter: a counter every tenant's requests advance would tell one tenant how much traffic the
 * others send (issue 29 item 8). `randomUUID` draws from a buffered pool of entropy (cheap per call).
 */
export function nextRequestId(): string {
  return `req_${randomUUID()}`;
}

/**
 * A proxy's request id is reused (D19) only when it comes from a trusted proxy (TRUST_PROXY) and
 * looks like an id: not a key either (D20), since the id is logged, stored with a failed request
 * and shown by the dashboard (a proxy may pass on what its client sent).
 */
const FORWARDED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of a request: the trusted proxy's, or a new one. */
export function requestIdFor(req: IncomingMessage, trust: ProxyTrust | false): string {
  const forwarded = req.headers['x-request-id'];
  if (typeof forwarded === 'string' && FORWARDED_REQUEST_ID.test(forwarded) && fromTrustedProxy(req, trust) && redactKeys(forwarded) === forwarded) return forwarded;
  return nextRequestId();
}
