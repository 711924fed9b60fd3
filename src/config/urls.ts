import type { Config } from './index.js';
import { hostForCountry, type Country } from '../core/countries.js';

/**
 * The URLs people are told to open: the API's base URL of a country (D3) and the dashboard's.
 * A local API_DOMAIN (`localhost` or `*.localhost`, which curl and browsers resolve to loopback)
 * means plain http on the port this process listens on; any other domain is assumed to be behind
 * a TLS proxy on the standard port (see the README's deployment section). Kept free of the HTTP
 * stack so that the CLI can print them cheaply.
 */
export function isLocalDomain(domain: string): boolean {
  return domain === 'localhost' || domain.endsWith('.localhost');
}

function origin(host: string, local: boolean, port: number): string {
  return local ? `http://${host}${port === 80 ? '' : `:${port}`}` : `https://${host}`;
}

/** E.g. `http://api.my.localhost:3000` or `https://api.my.example.com`. `port`: the API's actual port. */
export function apiBaseUrl(country: Country, config: Pick<Config, 'apiDomain' | 'port'>, port = config.port): string {
  return origin(hostForCountry(country, config.apiDomain), isLocalDomain(config.apiDomain), port);
}

/**
 * The dashboard's URL: `http://dashboard.localhost:3000` when it shares the API's port (the
 * default), `http://localhost:3001` on a port of its own (loopback and wildcard listen addresses
 * shown as localhost); undefined when it is off, or while a port picked at start-up (0) is unknown.
 * `ports`: the ports actually listened on, once known.
 */
export function dashboardUrl(
  config: Pick<Config, 'host' | 'port' | 'apiDomain' | 'dashboardPort' | 'dashboardHost'>,
  ports: { api?: number; dashboard?: number } = {},
): string | undefined {
  if (config.dashboardPort === 'off') return undefined;
  if (config.dashboardPort === 'shared') {
    const port = ports.api ?? config.port;
    return port === 0 ? undefined : origin(config.dashboardHost, isLocalDomain(config.apiDomain), port);
  }
  const port = ports.dashboard ?? config.dashboardPort;
  if (port === 0) return undefined;
  const host = ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost'].includes(config.host) ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

/** A curl line that lists a key's listings, e.g. for the demo key. */
export function curlLine(config: Pick<Config, 'apiDomain' | 'port'>, key: string, country: Country = 'sg'): string {
  return `curl -H "Authorization: Bearer ${key}" ${apiBaseUrl(country, config)}/v1/listings`;
}
