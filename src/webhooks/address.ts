import { BlockList, isIP } from 'node:net';

/**
 * The addresses a webhook may not be sent to unless WEBHOOK_ALLOW_PRIVATE=1 (D24): loopback,
 * private (RFC 1918, fc00::/7), link-local (169.254.0.0/16, where cloud metadata services answer,
 * and fe80::/10) and unspecified. 0.0.0.0/8 as a whole ("this network") is refused with
 * 0.0.0.0: connecting to any of it reaches this host on some systems.
 */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv6');

/** Why an address may not be sent to, or undefined when it may. */
export function forbiddenAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return `"${address}" is not an IP address`;
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is that IPv4 address.
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const [checked, type] = mapped !== undefined ? [mapped, 'ipv4' as const] : [address, family === 4 ? ('ipv4' as const) : ('ipv6' as const)];
  return FORBIDDEN.check(checked, type) ? `the address ${address} is loopback, private, link-local or unspecified` : undefined;
}
