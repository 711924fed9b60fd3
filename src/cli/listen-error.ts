import type { Config } from '../config/index.js';
import { CliError } from './output.js';

/**
 * A listener of `serve` that could not start, as the one line an operator needs: which address,
 * why, and the setting to change (issue 30 item 6). The API listens on PORT, the dashboard on
 * DASHBOARD_PORT and the metrics on METRICS_PORT, all on HOST; the configuration keeps those
 * ports apart (0 aside, which never fails this way), so the port that failed names the setting.
 * Node's listen errors carry `syscall` (`listen`, or `bind` when a cluster worker's primary bound
 * the port), `code` and `port` (SystemError); anything else, or a port that is none of these, is
 * left as it is (undefined).
 */
export function listenFailure(error: unknown, config: Config): CliError | undefined {
  const { syscall, code, port } = (error ?? {}) as { syscall?: unknown; code?: unknown; port?: unknown };
  if ((syscall !== 'listen' && syscall !== 'bind') || typeof port !== 'number' || port === 0) return undefined;
  const setting = port === config.port ? 'PORT' : port === config.dashboardPort ? 'DASHBOARD_PORT' : port === config.metricsPort ? 'METRICS_PORT' : undefined;
  if (setting === undefined) return undefined;
  const where = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return new CliError(`cannot listen on ${where}: the port is in use by another program (this server, already running?); set ${setting} to a free port, or stop that program`);
    case 'EACCES':
      return new CliError(`cannot listen on ${where}: permission denied (ports below 1024 need privileges); set ${setting} to another port`);
    case 'EADDRNOTAVAIL':
      return new CliError(`cannot listen on ${where}: ${config.host} is not an address of this machine; set HOST to one that is`);
    default:
      return undefined;
  }
}
