import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { redactKeys } from '../auth/key-format.js';
import { ApiError, badRequest, ERROR_STATUS, errorBody } from '../core/api-error.js';
import { ALLOWED_METHODS } from '../cors/cors.js';
import { clientAddress, fromTrustedProxy, normaliseForwardedFor, type ProxyTrust } from '../core/proxy-trust.js';
import { answersInFlight, trackConnections } from './drain.js';
import { unroutedRequestLine } from './request-log.js';

/**
 * The listening socket every request of the API's port arrives on, before Fastify: the target is
 * normalised and checked once (`inspectTarget`, below), requests for the dashboard's host name go to
 * the dashboard's app (so that it needs no port of its own, issue 8 item 1), everything else to
 * the API's. It also answers what never reaches an app: CONNECT, and requests Node cannot parse,
 * with a JSON error and a request id like every other answer (D6, D19). A request without `Host`
 * is let through (Node would answer it with a bare 400) so that the API answers it in JSON.
 */
export interface FrontServerOptions {
  /** TRUST_PROXY compiled (core/proxy-trust.ts): the API app's own, so both read a request alike. */
  trust: ProxyTrust | false;
  logger: FastifyBaseLogger;
  /** The dashboard on the API's port: requests whose host name is `name` go to `handler`. */
  virtualHost?: { name: string; handler: () => RequestListener };
}

export function createFrontServer(apiHandler: RequestListener, options: FrontServerOptions): Server {
  /** Requests whose `Expect` cannot be met (below): the API answers them 417. */
  const expectationFailed = new WeakSet<IncomingMessage>();
  const server = createServer({ requireHostHeader: false }, (req: IncomingMessage, res: ServerResponse) => {
    inspectTarget(req);
    // Before either app reads request.ip (core/proxy-trust.ts).
    if (options.trust !== false) normaliseForwardedFor(req);
    const virtual = options.virtualHost;
    if (virtual !== undefined && targetProblem(req) === undefined && requestHostName(req, options.trust) === virtual.name) {
      // The dashboard serves a request whose expectation it cannot meet as if it had none (RFC 9110 allows either).
      virtual.handler()(req, res);
      return;
    }
    if (expectationFailed.has(req)) rejectExpectation(req);
    // The API reads no request body (issue 40 item 3): a request that carries one is answered as
    // any other, and its connection closes behind the answer, so no more of the body is read than
    // arrived with the request, and a malformed body (a bad chunk) cannot become a second answer.
    if (carriesBody(req)) res.setHeader('connection', 'close');
    apiHandler(req, res);
  });
  // `Expect: 100-continue` asks whether to send the body: the API reads none, so it answers at once
  // without inviting it (RFC 9110 10.1.1 allows a final status instead of 100); the dashboard,
  // which reads its forms, is told to go on, as Node would.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const virtual = options.virtualHost;
    if (virtual !== undefined && requestHostName(req, options.trust) === virtual.name) res.writeContinue();
    server.emit('request', req, res);
  });
  // `Expect` other than 100-continue: Node would answer a bare 417 itself; with a listener, it is a
  // request like any other (the drain tracks it), which the API answers as JSON (D6, D19).
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    expectationFailed.add(req);
    server.emit('request', req, res);
  });
  // Shutdown answers every connection it accepted (drain.ts).
  trackConnections(server);
  // Load balancers commonly keep idle connections for 60 s: outlive them, as Fastify does by default.
  server.keepAliveTimeout = 72_000;
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    // A proxy tunnel request: this is not a proxy. Answered, not dropped (D6).
    const reqId = answerRaw(socket, ERROR_STATUS.method_not_allowed, 'Method Not Allowed',
      errorBody('method_not_allowed', `CONNECT is not supported: this is not a proxy. Use ${ALLOWED_METHODS}.`), { Allow: ALLOWED_METHODS });
    if (options.trust !== false) normaliseForwardedFor(req);
    const client = clientAddress(req, options.trust) ?? null;
    const line = unroutedRequestLine({ reqId, method: 'CONNECT', status: 405, client_address: client, host: req.headers.host, error: 'method_not_allowed', reason: 'method_not_allowed' });
    options.logger.info(line, 'request');
  });
  return server;
}

/** Whether a request has a body: chunked, or a Content-Length other than 0. */
function carriesBody(req: IncomingMessage): boolean {
  const headers = req.headers;
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** How long an answer may still take after its request's body failed to parse (see answerClientError). */
const UNREADABLE_BODY_GRACE_MS = 2_000;

/** Connections whose parse error is dealt with: Node reports one again for every chunk that follows. */
const failedConnections = new WeakSet<Duplex>();

/**
 * Requests Node cannot parse (bad request line, headers too large) never reach an app; they still
 * get a JSON error (D6) before the connection closes, and a log line with their request id (D19).
 * A connection the client reset gets nothing: there is no one to answer.
 *
 * Exactly one answer per request (issue 40 item 7). With answers still in flight on the connection
 * (pipelined requests, or an answer written but not yet flushed), the error waits for them:
 * - when the bytes that failed follow a complete request, they are a request of their own, and its
 *   400 is written after the answers before it;
 * - when they are the body of the last request (a bad chunk), that request gets its own answer
 *   (the API answers without reading bodies): nothing more is written, and the connection closes
 *   behind that answer. An app that waits for the body gets UNREADABLE_BODY_GRACE_MS to answer.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex, server: Server, logger: FastifyBaseLogger): void {
  if (error.code === 'ECONNRESET' || !socket.writable || failedConnections.has(socket)) return;
  failedConnections.add(socket);
  const last = answersInFlight(server, socket).at(-1);
  if (last === undefined) return answerMalformed(error, socket, logger);
  const inLastBody = !last.req.complete;
  // An app that reads bodies (the dashboard reads its forms) waits for one it will never get: after
  // a moment the request is answered here, as malformed, unless its answer has begun.
  const giveUp = () => (last.headersSent ? socket.destroy() : answerMalformed(error, socket, logger));
  const deadline = inLastBody && !last.writableEnded ? setTimeout(giveUp, UNREADABLE_BODY_GRACE_MS) : undefined;
  last.once('close', () => {
    clearTimeout(deadline);
    if (!socket.writable) return;
    if (inLastBody) socket.end();
    else answerMalformed(error, socket, logger);
  });
}

/** The JSON error of a request Node could not parse, written on its socket, which then closes. */
function answerMalformed(error: Error & { code?: string; rawPacket?: unknown }, socket: Duplex, logger: FastifyBaseLogger): void {
  const overflow = error.code === 'HPE_HEADER_OVERFLOW';
  // Node counts the request line within maxHeaderSize: one over MAX_TARGET_LENGTH is the URL's fault.
  const tooLong = overflow && targetLengthIn(error.rawPacket) > MAX_TARGET_LENGTH;
  const [status, reason, message] = tooLong
    ? [414, 'URI Too Long', targetTooLong().message]
    : overflow
      ? [431, 'Request Header Fields Too Large', 'Request headers are too large.']
      : [400, 'Bad Request', 'Malformed HTTP request.'];
  const reqId = answerRaw(socket, status, reason, errorBody('bad_request', message));
  // The headers were not read: the client address is the connection's peer (a proxy, behind one).
  const peer = (socket as Duplex & { remoteAddress?: string }).remoteAddress ?? null;
  const line = unroutedRequestLine({ reqId, method: null, status, client_address: peer, host: undefined, error: 'bad_request', reason: 'malformed_request' });
  logger.info({ ...line, parse_error: error.code ?? null }, 'request');
}

/**
 * The length of the request target at the start of `packet` (the bytes Node failed on), when the
 * packet starts with a request line: to its end, or to the packet's end when the line goes on.
 * 0 when the packet starts elsewhere (a request line split over reads is not told apart).
 */
function targetLengthIn(packet: unknown): number {
  if (!Buffer.isBuffer(packet)) return 0;
  const space = packet.subarray(0, 21).indexOf(0x20);
  if (space < 1 || !/^[A-Z]+$/.test(packet.toString('latin1', 0, space))) return 0;
  const ends = [packet.indexOf(0x20, space + 1), packet.indexOf(0x0d, space + 1)].filter((i) => i !== -1);
  return (ends.length === 0 ? packet.length : Math.min(...ends)) - space - 1;
}

/** Writes a whole JSON error response on a raw socket and closes it; returns the request id it carries. */
function answerRaw(socket: Duplex, status: number, reason: string, text: string, headers: Record<string, string> = {}): string {
  const reqId = nextRequestId();
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n` +
      `X-Request-Id: ${reqId}\r\n${extra}Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
  return reqId;
}

/*
 * What is read from a request before routing: its target and its host, with the ambiguities a
 * proxy in front could resolve differently from us refused rather than guessed (issue 8, item 8):
 * a missing or repeated `Host`, and an absolute-form target (`GET http://host/path`) naming
 * another host than `Host`. Node keeps only the first of repeated `Host` and `Authorization`
 * headers in `req.headers`, so repeats are counted in `req.rawHeaders`.
 */

/** How many times `Host` and `Authorization` were sent: one pass over the raw headers, made once by `inspectTarget`. */
function countHostAndAuthorization(req: IncomingMessage): { hosts: number; authorizations: number } {
  const raw = req.rawHeaders;
  let hosts = 0;
  let authorizations = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length === 4 && field.toLowerCase() === 'host') hosts++;
    else if (field.length === 13 && field.toLowerCase() === 'authorization') authorizations++;
  }
  return { hosts, authorizations };
}

/**
 * The request's `Authorization` as the key step must read it: all of its values when it was sent
 * more than once (a proxy might pick another one than we would: a 401), else the one value.
 */
export function sentAuthorization(req: IncomingMessage): string | string[] | undefined {
  const repeated = (req as Inspected)[REPEATED_AUTHORIZATION] ?? countHostAndAuthorization(req).authorizations > 1;
  return repeated ? req.headersDistinct.authorization : req.headers.authorization;
}

/**
 * The longest request target (path and query) the API accepts, in characters: 8 KiB, nginx's
 * default for a request line (`large_client_header_buffers`), so that a URL that passes a proxy in
 * front passes here too. A longer one is 414 before anything else (issue 40 item 2). Node refuses
 * a request line and headers over `maxHeaderSize` (16 KiB) together before this is reached: 414
 * when its request line alone is over this bound (below), else 431. The router's
 * `maxParamLength` is this bound, so that no id that fits in a URL is cut off.
 */
export const MAX_TARGET_LENGTH = 8 * 1024;

/** The 414 of a request target over `MAX_TARGET_LENGTH` characters. */
export function targetTooLong(): ApiError {
  return new ApiError(414, 'bad_request', `The request target (path and query) is too long: the API accepts at most ${MAX_TARGET_LENGTH} characters.`, {}, 'malformed_request');
}

const TARGET_PROBLEM = Symbol('targetProblem');
const REPEATED_AUTHORIZATION = Symbol('repeatedAuthorization');
type Inspected = IncomingMessage & { [TARGET_PROBLEM]?: ApiError; [REPEATED_AUTHORIZATION]?: boolean };

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
  const { hosts, authorizations } = countHostAndAuthorization(req);
  inspected[REPEATED_AUTHORIZATION] = authorizations > 1;
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
