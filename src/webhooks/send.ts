import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { forbiddenAddress } from './address.js';

/** D24: an attempt that has no answer within this is a failure. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Of an answer's body, at most this much is read (and ignored). */
const MAX_ANSWER_BYTES = 16 * 1024;

export interface SendOptions {
  /** WEBHOOK_ALLOW_PRIVATE: loopback and private addresses allowed (local development, tests). */
  allowPrivate: boolean;
  timeoutMs?: number;
  /** How a host name is resolved (tests give their own); every address it gives is checked. */
  resolve?: (hostname: string) => Promise<string[]>;
}

/** How an attempt ended: an HTTP status, or why there was none. */
export interface Outcome {
  status?: number;
  error?: string;
  durationMs: number;
}

/** A 2xx: the message was received (D24). */
export const delivered = (outcome: Outcome): boolean => outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300;

const defaultResolve = async (hostname: string) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * One attempt: POST the body to the URL (D24). The host is resolved here, each address checked,
 * and the connection goes to the checked address, through the request's `lookup`: there is no
 * second lookup that DNS rebinding could answer differently. TLS still checks the certificate
 * against the host name. Redirects are not followed (a 3xx is a failure like any non-2xx); the
 * answer's body is read up to a small cap and ignored; nothing waits longer than the timeout.
 */
export async function sendAttempt(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<Outcome> {
  const started = performance.now();
  const done = (outcome: Omit<Outcome, 'durationMs'>): Outcome => ({ ...outcome, durationMs: Math.round(performance.now() - started) });
  const target = new URL(url);
  const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1');
  let address: string;
  try {
    address = await checkedAddress(hostname, options);
  } catch (error) {
    return done({ error: (error as Error).message });
  }
  const family = isIP(address);
  // Node skips `lookup` for a literal address; for a name it gets exactly the address checked.
  const lookup: LookupFunction = (_host, opts, callback) => {
    if ((opts as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  return new Promise<Outcome>((resolve) => {
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, {
      method: 'POST',
      lookup,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'listings-api-webhooks/1' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    let settled = false;
    const finish = (outcome: Omit<Outcome, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      resolve(done(outcome));
      req.destroy();
    };
    req.on('response', (res: IncomingMessage) => {
      let read = 0;
      const status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) finish({ status });
      });
      res.on('end', () => finish({ status }));
      res.on('error', () => finish({ status }));
    });
    req.on('error', (error: Error & { code?: string }) => {
      finish({ error: error.name === 'AbortError' || error.name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : (error.code ?? error.message) });
    });
    req.end(body);
  });
}

/** The address to connect to: the host's first, checked (all of them must pass: one bad one is refused). */
async function checkedAddress(hostname: string, options: SendOptions): Promise<string> {
  const addresses = isIP(hostname) !== 0 ? [hostname] : await (options.resolve ?? defaultResolve)(hostname).catch((error: Error & { code?: string }) => {
    throw new Error(`the host ${hostname} could not be resolved (${error.code ?? error.message})`);
  });
  if (addresses.length === 0) throw new Error(`the host ${hostname} has no address`);
  if (!options.allowPrivate) {
    for (const address of addresses) {
      const problem = forbiddenAddress(address);
      if (problem !== undefined) throw new Error(`refused: ${hostname} resolves to ${address}, which is loopback, private, link-local or unspecified`);
    }
  }
  return addresses[0]!;
}
