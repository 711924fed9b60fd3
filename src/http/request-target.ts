import type { IncomingMessage } from 'node:http';
import { redactKeys } from '../auth/key-format.js';
import { ApiError, badRequest } from '../core/api-error.js';
import { fromTrustedProxy, type ProxyTrust } from '../core/proxy-trust.js';

/**
 * What is read from a request before routing: its target and its host, with the ambiguities a
 * proxy in front could resolve differently from us refused rather than guessed (issue 8, item 8):
 * a missing or repeated `Host`, and an absolute-form target (`GET http://host/path`) naming
 * another host than `Host`. Node keeps only the first of repeated `Host` and `Authorization`
 * headers in `req.headers`, so repeats are counted in `req.rawHeaders`.
 */

/** How many times a header was sent (case-insensitive name, lowercase `name` expected). */
export function headerCount(req: IncomingMessage, name: string): number {
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length === name.length && field.toLowerCase() === name) count++;
  }
  return count;
}

/**
 * The longest request target (path and query) the API accepts, in characters: 8 KiB, nginx's
 * default for a request line (`large_client_header_buffers`), so that a URL that passes a proxy in
 * front passes here too. A longer one is 414 before anything else (issue 40 item 2). Node refuses
 * a request line and headers over `maxHeaderSize` (16 KiB) together before this is reached: 414
 * when its request line alone is over this bound (front.ts), else 431. The router's
 * `maxParamLength` is this bound, so that no id that fits in a URL is cut off.
 */
export const MAX_TARGET_LENGTH = 8 * 1024;

/** The 414 of a request target over `MAX_TARGET_LENGTH` characters. */
export function targetTooLong(): ApiError {
  return new ApiError(414, 'bad_request', `The request target (path and query) is too long: the API accepts at most ${MAX_TARGET_LENGTH} characters.`, {}, 'malformed_request');
}

const TARGET_PROBLEM = Symbol('targetProblem');
type Inspected = IncomingMessage & { [TARGET_PROBLEM]?: ApiError };

/**
 * Why the request cannot be routed as sent (a missing, repeated or contradicted host: 400; an
 * expectation the server cannot meet: 417), or undefined when it is fine. The API answers it
 * before anything else, in JSON (D6).
 */
export function targetProblem(req: IncomingMessage): ApiError | undefined {
  return (req as Inspected)[TARGET_PROBLEM];
}

/**
 * `Expect` with anything but `100-continue` (which Node answers itself): RFC 9110 10.1.1 lets the
 * server refuse it with 417. Node would write a bare 417 with no body and no request id; recorded
 * here, it is answered like every other error (D6, D19).
 */
export function rejectExpectation(req: IncomingMessage): void {
  const sent = redactKeys(String(req.headers.expect ?? '')).slice(0, 40);
  (req as Inspected)[TARGET_PROBLEM] ??= new ApiError(417, 'bad_request', `The Expect header ${JSON.stringify(sent)} cannot be met: only "100-continue" is supported. Send the request without it.`, {}, 'malformed_request');
}

/**
 * Normalises the request target in place, once, before any routing: an absolute-form target
 * becomes origin-form when its authority is the `Host` header (RFC 9112, 3.2.2), and a `%` that
 * does not start a valid percent-escape is escaped, so that a malformed path is just a path that
 * matches no listing (D5 route first, then the key; D11) instead of failing before the key check.
 * Problems are recorded for the API to answer with a JSON 400 (D6).
 */
export function inspectTarget(req: IncomingMessage): void {
  const inspected = req as Inspected;
  const hosts = headerCount(req, 'host');
  // HTTP/1.1 requires Host (RFC 9112 3.2); an HTTP/1.0 request without one names no host, and so
  // no country: the country step answers it 404 like any other host that serves none (D3).
  if (hosts === 0 && req.httpVersion !== '1.0') inspected[TARGET_PROBLEM] = badRequest('The Host header is missing; send the API host of your key\'s country.', 'malformed_request');
  else if (hosts > 1) inspected[TARGET_PROBLEM] = badRequest('The Host header was sent more than once; send it once.', 'malformed_request');

  let url = req.url ?? '/';
  if (url.length > MAX_TARGET_LENGTH) inspected[TARGET_PROBLEM] ??= targetTooLong();
  if (!url.startsWith('/')) {
    const absolute = /^(https?):\/\/([^/?#]*)([^#]*)$/i.exec(url);
    if (absolute === null) {
      // `*` (OPTIONS *) and anything else that is not a path: route it as a path of its own, a 404.
      url = `/${url}`;
    } else {
      const authority = absolute[2]!.toLowerCase();
      if (inspected[TARGET_PROBLEM] === undefined && authority !== (req.headers.host ?? '').toLowerCase()) {
        inspected[TARGET_PROBLEM] = badRequest('The request target names another host than the Host header; send one host.', 'malformed_request');
      }
      url = absolute[3] === '' ? '/' : absolute[3]!;
    }
  }
  req.url = escapeStrayPercents(url);
}

/** `%` not followed by two hex digits, or escapes that do not decode as UTF-8, become literal `%25`. */
export function escapeStrayPercents(url: string): string {
  if (!url.includes('%')) return url;
  const fixed = url.replace(/%(?![0-9A-Fa-f]{2})/g, '%25');
  const query = fixed.indexOf('?');
  const path = query === -1 ? fixed : fixed.slice(0, query);
  try {
    decodeURIComponent(path);
    return fixed;
  } catch {
    // Valid-looking escapes that are not UTF-8 (e.g. %ff): keep the path's text as it was sent.
    return path.replaceAll('%', '%25') + (query === -1 ? '' : fixed.slice(query));
  }
}

/**
 * The request's host name as routing sees it: `Host` without the port, or, when the connection's
 * peer is a trusted proxy (TRUST_PROXY, core/proxy-trust.ts), the last `X-Forwarded-Host` (the one
 * that proxy added), as Fastify's `request.host` reads it for the API's country. Lowercase; ''
 * when absent.
 */
export function requestHostName(req: IncomingMessage, trust: ProxyTrust | false): string {
  let host = req.headers.host ?? '';
  if (fromTrustedProxy(req, trust)) {
    const forwarded = req.headers['x-forwarded-host'];
    const value = Array.isArray(forwarded) ? forwarded.at(-1) : forwarded;
    if (value !== undefined && value !== '') host = value.split(',').at(-1)!.trim();
  }
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0]!;
  return name.toLowerCase();
}
