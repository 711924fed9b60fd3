import { lookup as dnsLookup } from 'node:dns/promises';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, rootCertificates } from 'node:tls';
import { refusedAddressReason, unreachableReason } from './address.js';

/** D24: an attempt that has no answer within this is a failure. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Of an answer's body, at most this much is read (and ignored). */
const MAX_ANSWER_BYTES = 16 * 1024;

export interface SendOptions {
  /** WEBHOOK_ALLOW_PRIVATE: loopback, private and this host's own addresses allowed (local development, tests; address.ts). */
  allowPrivate: boolean;
  timeoutMs?: number;
  /** How a host name is resolved (tests give their own); every address it gives is checked. */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Certificate authorities trusted besides Node's own (tests; a deployment sets NODE_EXTRA_CA_CERTS). */
  ca?: string;
}

/**
 * Why an attempt got no answer, as a category only (D24): what the delivery log, the dashboard
 * and `webhook test` show. Error names and timings would tell a member which ports of a host
 * are open; the underlying reason (`detail`) goes to the operator's log only.
 */
export type FailureCategory = 'refused address' | 'could not resolve host' | 'could not connect' | 'TLS error' | 'closed without an answer' | 'timed out' | 'internal error';

/** How an attempt ended: an HTTP status, or the category of why there was none. */
export interface Outcome {
  status?: number;
  error?: FailureCategory;
  /** The underlying reason of `error` (an error code, a refused address and its range): for the operator's log, never shown to members. */
  detail?: string;
  durationMs: number;
}

/** A 2xx: the message was received (D24). */
export const delivered = (outcome: Outcome): boolean => outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300;

/** What a member is told of an attempt that was not delivered (D24): `HTTP 503`, or the category alone. */
export const failureText = (outcome: Outcome): string => (outcome.status !== undefined ? `HTTP ${outcome.status}` : (outcome.error ?? 'internal error'));

/** An attempt's failure at one of its steps. */
class AttemptFailure extends Error {
  constructor(readonly category: FailureCategory, readonly detail: string) {
    super(`${category}: ${detail}`);
  }
}

const defaultResolve = async (hostname: string) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

const codeOf = (error: unknown): string => (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));

/** The same promise, or a rejection when the deadline passes first (the work's own outcome is then ignored, never unhandled). */
function beforeDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(deadline.reason);
    if (deadline.aborted) return abort();
    deadline.addEventListener('abort', abort, { once: true });
    void work.then(resolve, reject).finally(() => deadline.removeEventListener('abort', abort));
  });
}

/**
 * One attempt: POST the body to the URL (D24), step by step, each step's failure its own category:
 * the host is resolved and every address checked (address.ts); a TCP connection is opened to the
 * first, as a literal address (no second lookup that DNS rebinding could answer differently), and
 * the address it is connected to is checked again before anything is sent on it, not even a TLS
 * hello; for https, TLS checks the certificate against the host name; then the request. Every step
 * up to the answer's status line runs on the one connection and within the one timeout (issue 43:
 * DNS, connect, TLS and the status line), and any error, however early (a broadcast or multicast
 * address fails at once), ends as an outcome: this never throws and leaves no error unhandled.
 * The status line decides: a 2xx is a delivery however slowly its body follows, of which at most
 * MAX_ANSWER_BYTES are read, in the background and within the same timeout, and then dropped.
 * Redirects are not followed (a 3xx is a failure like any non-2xx).
 */
export async function sendAttempt(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<Outcome> {
  const started = performance.now();
  const durationMs = () => Math.round(performance.now() - started);
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  let socket: Socket | undefined;
  try {
    const target = new URL(url);
    const address = await beforeDeadline(checkedAddress(target.hostname.replace(/^\[(.*)\]$/, '$1'), options), deadline);
    socket = await connect(target, address, options, deadline);
    const status = await post(target, socket, headers, body, deadline);
    return { status, durationMs: durationMs() };
  } catch (error) {
    socket?.destroy();
    const failure = deadline.aborted
      ? new AttemptFailure('timed out', `no answer within ${timeoutMs / 1000} s`)
      : error instanceof AttemptFailure ? error : new AttemptFailure('could not connect', codeOf(error));
    return { error: failure.category, detail: failure.detail, durationMs: durationMs() };
  }
}

/** The address to connect to: the host's first, checked (all of them must pass: one bad one is refused). */
async function checkedAddress(hostname: string, options: SendOptions): Promise<string> {
  let addresses: string[];
  try {
    addresses = isIP(hostname) !== 0 ? [hostname] : await (options.resolve ?? defaultResolve)(hostname);
  } catch (error) {
    throw new AttemptFailure('could not resolve host', codeOf(error));
  }
  if (addresses.length === 0) throw new AttemptFailure('could not resolve host', 'no address');
  for (const address of addresses) {
    const reason = refusedAddressReason(address, options.allowPrivate);
    if (reason !== undefined) throw new AttemptFailure('refused address', `resolved address ${reason}`);
  }
  const address = addresses[0]!;
  const unreachable = unreachableReason(address);
  if (unreachable !== undefined) throw new AttemptFailure('could not connect', unreachable);
  return address;
}

/**
 * A connection to the checked address, its remote address checked again once connected, then
 * (https) TLS on it, within the deadline. On failure every socket made is destroyed; each has an
 * error listener from the moment it exists, so an error at any point (at once, or after the step
 * that awaited it) is never unhandled.
 */
async function connect(target: URL, address: string, options: SendOptions, deadline: AbortSignal): Promise<Socket> {
  const https = target.protocol === 'https:';
  const tcp = netConnect({ host: address, port: Number(target.port || (https ? 443 : 80)) });
  tcp.on('error', () => undefined);
  let secure: Socket | undefined;
  try {
    await once(tcp, 'connect', { signal: deadline }).catch((error: unknown) => {
      throw new AttemptFailure('could not connect', codeOf(error));
    });
    const reason = tcp.remoteAddress === undefined ? 'the connection has no remote address' : refusedAddressReason(tcp.remoteAddress, options.allowPrivate);
    if (reason !== undefined) throw new AttemptFailure('refused address', `connected address ${reason}`);
    if (!https) return tcp;
    const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1');
    secure = tlsConnect({
      socket: tcp,
      host: hostname,
      servername: isIP(hostname) === 0 ? hostname : undefined,
      ca: options.ca === undefined ? undefined : [...rootCertificates, options.ca],
    });
    secure.on('error', () => undefined);
    await once(secure, 'secureConnect', { signal: deadline }).catch((error: unknown) => {
      throw new AttemptFailure('TLS error', codeOf(error));
    });
    return secure;
  } catch (error) {
    secure?.destroy();
    tcp.destroy();
    throw error;
  }
}

/**
 * The request on the open connection; resolves with the answer's status as soon as its status line
 * is in. The body is then read (and ignored) until its end, MAX_ANSWER_BYTES, or the deadline,
 * whichever comes first, and the connection is closed.
 */
function post(target: URL, socket: Socket, headers: Record<string, string>, body: string, deadline: AbortSignal): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest({
      method: 'POST',
      path: `${target.pathname}${target.search}`,
      createConnection: () => socket,
      signal: deadline,
      headers: {
        ...headers,
        host: target.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'listings-api-webhooks/1',
      },
    });
    req.on('response', (res: IncomingMessage) => {
      resolve(res.statusCode ?? 0);
      let read = 0;
      const done = () => socket.destroy();
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_ANSWER_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    req.on('error', (error) => {
      socket.destroy();
      reject(new AttemptFailure('closed without an answer', codeOf(error)));
    });
    req.end(body);
  });
}
