/**
 * Origins as browsers send them (`scheme://host[:port]`), normalised for comparison (D17):
 * lowercase scheme and host, default port dropped. Registered origins are stored normalised, and a
 * request's Origin is normalised the same way before the look-up.
 */
const ORIGIN = /^([a-z][a-z0-9+.-]*):\/\/(\[[0-9a-f:.]+\]|[^\s/?#@:[\]]+)(?::([0-9]{1,5}))?$/i;
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443' };

export interface ParsedOrigin {
  scheme: 'http' | 'https';
  host: string;
  /** Undefined when it is the scheme's default port. */
  port: string | undefined;
  /** The normalised form, e.g. `https://www.example.com` or `http://localhost:5173`. */
  origin: string;
}

/** Parses a serialised origin; undefined for anything else (paths, queries, wildcards, `null`, other schemes). */
export function parseOrigin(value: string): ParsedOrigin | undefined {
  const match = ORIGIN.exec(value);
  if (!match) return undefined;
  const scheme = match[1]!.toLowerCase();
  const host = match[2]!.startsWith('[') ? ipv6Literal(match[2]!) : match[2]!.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return undefined;
  if (host === undefined || (!host.startsWith('[') && !HOSTNAME.test(host))) return undefined;
  let port = match[3];
  if (port !== undefined) {
    const n = Number(port);
    if (n < 1 || n > 65535) return undefined;
    port = String(n);
    if (port === DEFAULT_PORTS[scheme]) port = undefined;
  }
  return { scheme, host, port, origin: `${scheme}://${host}${port === undefined ? '' : `:${port}`}` };
}

/**
 * A bracketed IPv6 literal in the form browsers serialise it (WHATWG URL: compressed, lowercase),
 * so that `[0:0:0:0:0:0:0:1]` and `[::1]` are the same origin; undefined when it is not an IPv6 address.
 */
function ipv6Literal(bracketed: string): string | undefined {
  try {
    const host = new URL(`http://${bracketed}`).hostname;
    return host.startsWith('[') ? host : undefined;
  } catch {
    return undefined;
  }
}

/** The normalised origin of a request's `Origin` header, or undefined when it is not one. */
export function normalizeOrigin(value: string): string | undefined {
  return parseOrigin(value)?.origin;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Validates an origin an admin registers (CLI, dashboard): scheme, host and optional port only; no
 * path, query or wildcard; `https` unless the host is loopback (`localhost`, `*.localhost`,
 * `127.0.0.1`, `[::1]`), where development servers run on plain http. A single trailing `/` is
 * forgiven because that is how origins are often pasted from the address bar.
 * Returns the normalised origin or a message saying what is wrong.
 */
export function validateOriginToRegister(input: string): { origin: string } | { error: string } {
  const value = input.trim().replace(/(?<=[^/])\/$/, '');
  if (value === '') return { error: 'origin is empty' };
  // Credentials in a pasted URL must not be echoed back into an error (or a log).
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(value)) return { error: 'an origin has no user name or password; remove the part before "@"' };
  if (value.includes('*')) return { error: `"${input}" has a wildcard; register each origin exactly` };
  if (value === 'null') return { error: 'the origin "null" can never be allowed (D17)' };
  const parsed = parseOrigin(value);
  if (parsed === undefined) {
    if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]+[/?#]/i.test(value)) {
      return { error: `"${input}" has a path, query or fragment; an origin is only scheme://host[:port]` };
    }
    return { error: `"${input}" is not an origin; expected scheme://host[:port], e.g. https://www.example.com` };
  }
  const loopback = LOOPBACK_HOSTS.has(parsed.host) || parsed.host.endsWith('.localhost');
  if (parsed.scheme !== 'https' && !loopback) {
    return { error: `"${input}" must use https (plain http is only accepted for localhost)` };
  }
  return { origin: parsed.origin };
}
