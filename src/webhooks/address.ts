import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may connect to (D24). The ranges are ipaddr.js's tables of the IANA
 * IPv4 and IPv6 special-purpose registries (and multicast, broadcast, 240.0.0.0/4), kept up to
 * date with them upstream rather than copied here:
 * - allowed: an IPv4 address in none of those ranges, or an IPv6 address in none of them and in
 *   the global unicast space 2000::/3; an IPv4 address written as IPv6 (IPv4-mapped
 *   `::ffff:a.b.c.d`, or NAT64's well-known prefix `64:ff9b::/96`, how a DNS64 resolver names an
 *   IPv4-only host) is judged as the IPv4 address it carries (through NAT64, only a global one);
 * - allowed only with WEBHOOK_ALLOW_PRIVATE (local development, tests): loopback, private
 *   (RFC 1918, `fc00::/7`), link-local (`169.254.0.0/16`, cloud metadata included, `fe80::/10`),
 *   shared address space (`100.64.0.0/10`) and this host's own addresses (os.networkInterfaces(),
 *   which reach whatever listens on all interfaces here);
 * - never: every other special-purpose range: unspecified (`0.0.0.0/8`, `::`), broadcast,
 *   multicast, documentation, benchmarking (`198.18.0.0/15`), reserved (`240.0.0.0/4`), protocol
 *   assignments, IPv6 outside 2000::/3 (IPv4-compatible `::a.b.c.d`, site-local `fec0::/10`),
 *   6to4 (`2002::/16`), Teredo, local-use NAT64 (`64:ff9b:1::/48`): none is one host on the
 *   internet, and the deprecated embeddings would reach whatever IPv4 address they carry.
 */

/** Ranges (ipaddr.js's names) that WEBHOOK_ALLOW_PRIVATE allows. */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'linkLocal', 'carrierGradeNat']);
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** Where an address belongs: the public internet, a private network (and which range), or nowhere a webhook goes. */
type Scope = { scope: 'global' } | { scope: 'private' | 'never'; range: string };

function scopeOf(address: string): Scope {
  if (!ipaddr.isValid(address)) return { scope: 'never', range: 'not an IP address' };
  const parsed = ipaddr.parse(address);
  // range() names any range its tables hold, some beyond its typings (deprecatedSiteLocal, discard...).
  const range: string = parsed.range();
  if (parsed.kind() === 'ipv4') {
    if (range === 'unicast') return { scope: 'global' };
    return { scope: PRIVATE_RANGES.has(range) ? 'private' : 'never', range };
  }
  const v6 = parsed as ipaddr.IPv6;
  if (range === 'ipv4Mapped') return scopeOf(v6.toIPv4Address().toString());
  if (v6.match(NAT64_WELL_KNOWN)) {
    // Through a NAT64 gateway only a global IPv4 address is one host on the internet.
    const embedded = scopeOf(ipaddr.fromByteArray(v6.toByteArray().slice(12)).toString());
    return embedded.scope === 'global' ? embedded : { scope: 'never', range: `rfc6052 (NAT64) of ${embedded.range}` };
  }
  if (PRIVATE_RANGES.has(range)) return { scope: 'private', range };
  if (range === 'unicast' && v6.match(GLOBAL_UNICAST)) return { scope: 'global' };
  return { scope: 'never', range: range === 'unicast' ? 'outside global unicast 2000::/3' : range };
}

/** The same address however written (an IPv4-mapped IPv6 address is its IPv4 address), without a zone. */
const canonical = (address: string): string => ipaddr.process(address.replace(/%.*$/, '')).toByteArray().join('.');

/** This host's addresses, on every interface, now (interfaces come and go). */
function isOwnAddress(address: string): boolean {
  const own = canonical(address);
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => ipaddr.isValid(i.address) && canonical(i.address) === own) === true);
}

/** Why a webhook may not connect to `address` (one line for the operator's log), or undefined when it may. */
export function refusedAddressReason(address: string, allowPrivate: boolean): string | undefined {
  const found = scopeOf(address);
  if (found.scope === 'never') return `${address} is in the special-purpose range "${found.range}"`;
  if (allowPrivate) return undefined;
  if (isOwnAddress(address)) return `${address} is this host's own address (allowed only with WEBHOOK_ALLOW_PRIVATE)`;
  if (found.scope === 'private') return `${address} is in the non-global range "${found.range}" (allowed only with WEBHOOK_ALLOW_PRIVATE)`;
  return undefined;
}

/**
 * Why no deployment may ever connect to `address`, whatever WEBHOOK_ALLOW_PRIVATE says (refused
 * when an endpoint is added with this address in its URL), or undefined.
 */
export function neverAllowedReason(address: string): string | undefined {
  const found = scopeOf(address);
  return found.scope === 'never' ? found.range : undefined;
}

/**
 * Why no connection can reach `address` at all, or undefined: an IPv6 link-local address (allowed
 * with WEBHOOK_ALLOW_PRIVATE) names no interface unless it has a zone (`fe80::1%eth0`). Node 20
 * refused such a connect at once (EINVAL); Node 24's waits until the attempt's deadline.
 */
export function unreachableReason(address: string): string | undefined {
  if (!ipaddr.IPv6.isValid(address)) return undefined;
  const parsed = ipaddr.IPv6.parse(address);
  return parsed.range() === 'linkLocal' && parsed.zoneId === undefined ? 'link-local address without an interface' : undefined;
}
