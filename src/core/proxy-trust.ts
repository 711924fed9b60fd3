import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';

/**
 * TRUST_PROXY (OPERATIONS: "X-Forwarded-Host, X-Forwarded-For and X-Request-Id from the proxy are
 * trusted"), decided once at start-up (config/index.ts) and applied the same way everywhere: the
 * client address of both apps (Fastify's `request.ip`, which the request log, the dashboard's
 * sign-in throttle and the failed-request records read), the host name that picks the country
 * or the dashboard, the scheme (`X-Forwarded-Proto`) and the reused request id.
 *
 * - `false`: no proxy; forwarded headers are ignored and the client is the connection's peer.
 * - `{ hops: n }`: the n proxies nearest to us are trusted, whatever their addresses; the client
 *   is the n-th X-Forwarded-For entry from the right (1: the entry our one proxy appended). The
 *   entries to its left were written by the client and are never believed (issue 29, item 3:
 *   trusting every hop let a client pick the address the throttle counted). This assumes the
 *   service is reachable only through those proxies; where it is not, name them instead.
 * - `{ addresses }`: only peers in these addresses or CIDR ranges (or proxy-addr's `loopback`,
 *   `linklocal`, `uniquelocal`) are proxies; the client is the right-most X-Forwarded-For entry
 *   not among them, as Fastify's own `trustProxy: '10.0.0.1,...'` reads it. A request from any
 *   other peer has its forwarded headers ignored.
 */
export type TrustProxy = false | { hops: number } | { addresses: readonly string[] };

/** Whether the `hop`-th address from us (0: the connection's peer) is a proxy whose forwarded headers count. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * The trust function given to Fastify (`trustProxy`, which computes `request.ip`, `host` and
 * `protocol` with it) and used for the headers read before Fastify (host routing, request id).
 * Hop counts are given as a function because Fastify refuses a number (it fails closed: hop
 * counting cannot tell a proxy from a client that reached the service directly); here the
 * operator has said there is no such path. Throws proxy-addr's TypeError for a bad address.
 */
export function compileProxyTrust(setting: TrustProxy): ProxyTrust | false {
  if (setting === false) return false;
  if ('hops' in setting) {
    const hops = setting.hops;
    return (_address, hop) => hop < hops;
  }
  return proxyAddr.compile([...setting.addresses]);
}

/** The connection's peer is a trusted proxy: its X-Forwarded-Host and X-Request-Id count. */
export function fromTrustedProxy(req: IncomingMessage, trust: ProxyTrust | false): boolean {
  if (trust === false) return false;
  const peer = req.socket?.remoteAddress;
  return peer !== undefined && trust(peer, 0);
}

/**
 * Reduces X-Forwarded-For, in place and before anything reads it, to its right-most run of
 * entries that are IP addresses, without the port some proxies add (`203.0.113.5:4711`,
 * `[2001:db8::1]:4711`). An entry that is not an address was written by the client (or by a
 * broken proxy) and is not believed, nor is anything left of it: the client address is then the
 * nearest entry (or peer) that is an address. So `request.ip` is always an address, never a
 * string the client chose (which did not fit the 64-character column of the sign-in throttle:
 * an error on PostgreSQL), and never varies with a source port (one throttle count per port).
 * Only for a request whose forwarded headers are read at all (TRUST_PROXY set).
 */
export function normaliseForwardedFor(req: IncomingMessage): void {
  const header = req.headers['x-forwarded-for'];
  if (header === undefined) return;
  const entries = (Array.isArray(header) ? header.join(',') : header).split(',');
  const kept: string[] = [];
  let changed = Array.isArray(header);
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!.trim();
    // Empty entries are skipped, as proxy-addr does.
    if (entry === '') continue;
    const address = bareAddress(entry);
    if (address === undefined) {
      changed = true;
      break;
    }
    if (address !== entry) changed = true;
    kept.push(address);
  }
  if (!changed) return;
  if (kept.length === 0) delete req.headers['x-forwarded-for'];
  else req.headers['x-forwarded-for'] = kept.reverse().join(', ');
}

/** The IP address of an X-Forwarded-For entry, port removed; undefined when it is none. */
function bareAddress(entry: string): string | undefined {
  // An IPv6 address in text is at most 45 characters; a longer one carries a zone of any length.
  if (entry.length > 53) return undefined;
  if (isIP(entry) !== 0) return entry.length <= 45 ? entry : undefined;
  const withPort = /^(?:\[([^\]]+)\]|([0-9.]+))(?::[0-9]{1,5})?$/.exec(entry);
  const address = withPort?.[1] ?? withPort?.[2];
  return address !== undefined && address.length <= 45 && isIP(address) !== 0 ? address : undefined;
}

/**
 * The client address of a request that never reaches Fastify (a CONNECT): what `request.ip`
 * would be. Undefined once the connection is gone.
 */
export function clientAddress(req: IncomingMessage, trust: ProxyTrust | false): string | undefined {
  if (trust === false) return req.socket?.remoteAddress;
  const addresses = proxyAddr.all(req, trust);
  return addresses[addresses.length - 1];
}
