import { COUNTRY_CODES, hostForCountry, isCountry, type Country } from '../core/countries.js';
import { createRequire } from 'node:module';
import type { TrustProxy } from '../core/proxy-trust.js';
import { LOG_LEVELS, type LogLevel } from '../core/log-levels.js';

/** The validated configuration of OPERATIONS.md ("Configuration"), read once at start-up. */
export interface Config {
  port: number;
  host: string;
  apiDomain: string;
  countries: Country[];
  databaseUrl: string;
  /** PostgreSQL connection pool size per process. */
  databasePoolSize: number;
  /** PostgreSQL statement timeout: a stuck query fails instead of hanging a request (and a short CLI command). */
  databaseStatementTimeoutMs: number;
  /**
   * PostgreSQL statement timeout of `listings-api import`, which is not a request: its statements
   * grow with the file (one writes every new listing). 0: none of its own.
   */
  importStatementTimeoutMs: number;
  /** How long a write waits its turn behind another writer (an import being applied) before failing with a clear message. */
  databaseBusyTimeoutMs: number;
  /** Safety expiry of the API's read caches (ms); 0 turns them off. */
  readCacheTtlMs: number;
  /** Bound on the bytes of cached answers (serialised listings, pages, feed answers) together, in MiB. */
  readCacheMaxMb: number;
  redisUrl: string | undefined;
  /** Prefix of the rate limiter's Redis keys (REDIS_KEY_PREFIX), so deployments can share a Redis. */
  redisKeyPrefix: string;
  rateLimitPerMinute: number;
  /** TRUST_PROXY: which peers' forwarded headers are believed, and so who the client is (core/proxy-trust.ts). */
  trustProxy: TrustProxy;
  logLevel: LogLevel;
  /**
   * Where the developer dashboard listens (DASHBOARD_PORT). `shared` (the default): on the API's
   * own port, answering requests for `dashboardHost`, so that any number of instances can run on
   * one host without a second port to collide on. A number: a listener of its own on HOST (0: any
   * free port), answering for any host name. `off`: no dashboard in this process.
   */
  dashboardPort: number | 'shared' | 'off';
  /** The dashboard's host name on the API's port (DASHBOARD_HOST, default `dashboard.$API_DOMAIN`). */
  dashboardHost: string;
  /** How long `serve` drains in-flight requests after SIGTERM/SIGINT before closing what remains. */
  shutdownTimeoutMs: number;
  /** Days of change history kept for the change feed (D22: at least 30); older changes are pruned hourly. */
  changeHistoryDays: number;
  /** USAGE_COUNTING: count requests per key and keep failed requests for the dashboard (src/usage). */
  usageCounting: boolean;
  /**
   * WEBHOOK_ALLOW_PRIVATE: webhooks may go to loopback, private, link-local, shared and this host's
   * own addresses (local development and tests; D24, webhooks/address.ts).
   */
  webhookAllowPrivate: boolean;
  /** How often the usage counts of this process are written, in one batch (USAGE_FLUSH_INTERVAL_MS). */
  usageFlushIntervalMs: number;
  /** METRICS_PORT: Prometheus metrics at GET /metrics on HOST:METRICS_PORT (0: any free port), or `off`. */
  metricsPort: number | 'off';
  /**
   * WARMUP_TIMEOUT_MS: how long a starting process builds the indexes of the tenants read in the
   * last hour before it reports ready (readmodel/warm-up.ts); 0 turns the warm-up off.
   */
  warmupTimeoutMs: number;
  /** WARMUP_MAX_LISTINGS: the warm-up starts no further tenant once this many listings are indexed. */
  warmupMaxListings: number;
  /** MAX_KEYS_PER_ACCOUNT_COUNTRY: active (not revoked) keys an account may have in one country; the dashboard and `key create` refuse more. */
  maxKeysPerAccountCountry: number;
}


/** A bad configuration value; the message always names the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env): Config {
  const domain = apiDomain(env);
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: nonEmpty(env, 'HOST', '127.0.0.1'),
    apiDomain: domain,
    countries: countries(env),
    databaseUrl: databaseUrl(env),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseStatementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 5000, 100, 600_000),
    importStatementTimeoutMs: integer(env, 'IMPORT_STATEMENT_TIMEOUT_MS', 0, 0, 86_400_000),
    databaseBusyTimeoutMs: integer(env, 'DATABASE_BUSY_TIMEOUT_MS', 10_000, 0, 600_000),
    readCacheTtlMs: integer(env, 'READ_CACHE_TTL_MS', 5000, 0, 3_600_000),
    readCacheMaxMb: integer(env, 'READ_CACHE_MAX_MB', 64, 1, 65_536),
    redisUrl: redisUrl(env),
    redisKeyPrefix: nonEmpty(env, 'REDIS_KEY_PREFIX', 'listings:rl:'),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 60, 1, 1_000_000_000),
    trustProxy: trustProxy(env),
    logLevel: logLevel(env),
    dashboardPort: dashboardPort(env),
    dashboardHost: dashboardHost(env, domain),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    changeHistoryDays: integer(env, 'CHANGE_HISTORY_DAYS', 35, 30, 3650),
    usageCounting: boolean(env, 'USAGE_COUNTING', true),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    usageFlushIntervalMs: integer(env, 'USAGE_FLUSH_INTERVAL_MS', 5000, 100, 60_000),
    metricsPort: metricsPort(env),
    warmupTimeoutMs: integer(env, 'WARMUP_TIMEOUT_MS', 30_000, 0, 600_000),
    warmupMaxListings: integer(env, 'WARMUP_MAX_LISTINGS', 1_000_000, 0, 100_000_000),
    maxKeysPerAccountCountry: integer(env, 'MAX_KEYS_PER_ACCOUNT_COUNTRY', 10, 1, 1000),
  };
}

function value(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function nonEmpty(env: Env, name: string, fallback: string): string {
  return value(env, name) ?? fallback;
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return n;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = value(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `expected one of 1, true, yes, on, 0, false, no, off; got "${raw}"`);
}

/** More proxies than this in front of one service is a mistake in the setting, not a deployment. */
export const MAX_PROXY_HOPS = 16;

/**
 * TRUST_PROXY: off (unset, 0, false, no, off); a number of proxy hops (1 to MAX_PROXY_HOPS), with
 * 1, true, yes and on all meaning the one proxy in front (issue 29, item 3: `1` once trusted every
 * hop, so the left-most X-Forwarded-For entry, which the client writes, was taken for its address);
 * or the proxies' addresses and CIDR ranges separated by commas, as Fastify's `trustProxy` string
 * and proxy-addr read them (named ranges loopback, linklocal, uniquelocal included).
 */
function trustProxy(env: Env): TrustProxy {
  const raw = value(env, 'TRUST_PROXY');
  if (raw === undefined) return false;
  const lower = raw.toLowerCase();
  if (['0', 'false', 'no', 'off'].includes(lower)) return false;
  if (['true', 'yes', 'on'].includes(lower)) return { hops: 1 };
  const expected = `expected 0/false/no/off, 1/true/yes/on (one proxy), a number of proxy hops up to ${MAX_PROXY_HOPS}, ` +
    'or the proxies\' addresses/CIDR ranges separated by commas (e.g. 10.0.0.0/8,loopback)';
  if (/^[0-9]+$/.test(raw)) {
    const hops = Number(raw);
    if (hops < 1 || hops > MAX_PROXY_HOPS) throw new ConfigError('TRUST_PROXY', `${expected}; got "${raw}"`);
    return { hops };
  }
  const addresses = lower.split(',').map((entry) => entry.trim());
  for (const entry of addresses) {
    if (entry === '') throw new ConfigError('TRUST_PROXY', `"${raw}" has an empty entry; ${expected}`);
    // proxy-addr would read "2" as the address 0.0.0.2: a hop count in a list is a mistake.
    if (/^[0-9]+$/.test(entry)) throw new ConfigError('TRUST_PROXY', `"${raw}" mixes a number of hops with addresses; ${expected}`);
  }
  try {
    // Read as Fastify will read it. Loaded only here, when addresses are given: the CLI's commands
    // that serve nothing load no HTTP stack (test/cli/startup.test.ts).
    const proxyAddr = createRequire(import.meta.url)('@fastify/proxy-addr') as { compile(addresses: string[]): unknown };
    proxyAddr.compile(addresses);
  } catch (error) {
    // proxy-addr's reason: "invalid IP address: x" or "invalid range on address: x/33".
    throw new ConfigError('TRUST_PROXY', `${(error as Error).message} in "${raw}"; ${expected}`);
  }
  return { addresses: [...new Set(addresses)] };
}

const DOMAIN_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

function apiDomain(env: Env): string {
  const raw = (value(env, 'API_DOMAIN') ?? 'localhost').toLowerCase();
  if (!DOMAIN_NAME.test(raw)) throw new ConfigError('API_DOMAIN', `"${raw}" is not a domain name (e.g. example.com)`);
  return raw;
}

/** DASHBOARD_HOST: a host name that is not one of the API's country hosts (D3). */
function dashboardHost(env: Env, domain: string): string {
  const raw = (value(env, 'DASHBOARD_HOST') ?? `dashboard.${domain}`).toLowerCase();
  if (!DOMAIN_NAME.test(raw)) throw new ConfigError('DASHBOARD_HOST', `"${raw}" is not a host name (e.g. dashboard.example.com)`);
  if (COUNTRY_CODES.some((c) => hostForCountry(c, domain) === raw)) {
    throw new ConfigError('DASHBOARD_HOST', `"${raw}" is a country host of the API; choose another name`);
  }
  return raw;
}

function countries(env: Env): Country[] {
  const raw = value(env, 'COUNTRIES');
  if (raw === undefined) return [...COUNTRY_CODES];
  const list = raw.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
  if (list.length === 0) throw new ConfigError('COUNTRIES', 'lists no country');
  for (const c of list) {
    if (!isCountry(c)) {
      throw new ConfigError('COUNTRIES', `unknown country "${c}" (expected some of ${COUNTRY_CODES.join(', ')})`);
    }
  }
  return [...new Set(list)] as Country[];
}

function databaseUrl(env: Env): string {
  const raw = value(env, 'DATABASE_URL') ?? 'file:./data/listings.db';
  if (raw.startsWith('file:') && raw.length > 'file:'.length) return raw;
  if (/^postgres(ql)?:\/\/./.test(raw)) {
    try {
      new URL(raw);
      return raw;
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
    }
  }
  throw new ConfigError('DATABASE_URL', 'expected file:PATH (embedded SQLite) or postgres://... (PostgreSQL)');
}

function redisUrl(env: Env): string | undefined {
  const raw = value(env, 'REDIS_URL');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL', 'is not a valid URL (expected redis://HOST:PORT)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError('REDIS_URL', 'expected a redis:// or rediss:// URL');
  }
  return raw;
}

function logLevel(env: Env): LogLevel {
  const raw = (value(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as LogLevel;
}

/** DASHBOARD_PORT: unset (or `shared`): on the API's port; a port like PORT (0: any free port); or `off`. It may not be PORT itself. */
function dashboardPort(env: Env): Config['dashboardPort'] {
  const raw = value(env, 'DASHBOARD_PORT')?.toLowerCase();
  if (raw === undefined || raw === 'shared') return 'shared';
  if (raw === 'off') return 'off';
  const port = integer(env, 'DASHBOARD_PORT', 0, 0, 65535);
  if (port !== 0 && port === integer(env, 'PORT', 3000, 0, 65535)) {
    throw new ConfigError('DASHBOARD_PORT', `must differ from PORT (${port}); leave it unset to serve the dashboard on the API's port under DASHBOARD_HOST`);
  }
  return port;
}

/** METRICS_PORT: unset or `off` (the default): no metrics; else a port of its own (0: any free port), never PORT or DASHBOARD_PORT. */
function metricsPort(env: Env): Config['metricsPort'] {
  const raw = value(env, 'METRICS_PORT')?.toLowerCase();
  if (raw === undefined || raw === 'off') return 'off';
  const port = integer(env, 'METRICS_PORT', 0, 0, 65535);
  if (port !== 0 && port === integer(env, 'PORT', 3000, 0, 65535)) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): the API's port does not serve /metrics`);
  }
  const dashboard = value(env, 'DASHBOARD_PORT');
  if (port !== 0 && dashboard !== undefined && /^[0-9]+$/.test(dashboard) && Number(dashboard) === port) {
    throw new ConfigError('METRICS_PORT', `must differ from DASHBOARD_PORT (${port})`);
  }
  return port;
}
