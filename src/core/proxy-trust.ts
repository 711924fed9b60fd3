import type { IncomingMessage } from 'node:http';
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
 * The client address of a request that never reaches Fastify (a CONNECT): what `request.ip`
 * would be. Undefined once the connection is gone.
 */
export function clientAddress(req: IncomingMessage, trust: ProxyTrust | false): string | undefined {
  if (trust === false) return req.socket?.remoteAddress;
  const addresses = proxyAddr.all(req, trust);
  return addresses[addresses.length - 1];
}
