import type { Config } from '../config/index.js';

/**
 * The dashboard's URL as people open it, e.g. http://localhost:3001 (loopback and wildcard listen
 * addresses shown as localhost); undefined when it is off, or on a port picked at start-up (0) and
 * not yet known. Kept apart from index.ts so that the CLI can print it without loading the HTTP stack.
 */
export function dashboardUrl(config: Pick<Config, 'host' | 'dashboardPort'>, port = config.dashboardPort): string | undefined {
  if (port === null || port === 0) return undefined;
  const host = ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost'].includes(config.host) ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}
