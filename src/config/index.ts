import { createRequire } from 'node:module';
import { getHeapStatistics } from 'node:v8';
import { COUNTRY_CODES, hostForCountry, isCountry, type Country } from '../core/countries.js';
import { LOG_LEVELS } from '../core/log-levels.js';
import type { TrustProxy } from '../core/proxy-trust.js';
import { MIN_SUNSET_MONTHS, parseDeprecations } from './deprecations.js';
import { ConfigError, choice, custom, FALSE_WORDS, flag, integer, readInteger, text, TRUE_WORDS, type Env, type Variable } from './variable.js';

export { ConfigError } from './variable.js';
export type { Deprecation } from './deprecations.js';

/*
 * The configuration of OPERATIONS.md ("Configuration"), each variable declared once below: how it
 * is read and checked, its default, its values and what it means. `Config` (the parsed type),
 * `loadConfig` (validation, with an error naming the variable) and the README's table
 * (`configurationTable`, written by `npm run generate`, checked by test/unit/config-table.test.ts)
 * all come from `VARIABLES`. Kept free of the HTTP stack and the database: every CLI command reads it.
 */

/** More proxies than this in front of one service is a mistake in the setting, not a deployment. */
export const MAX_PROXY_HOPS = 16;

/** An operator's command waits at least this long for its turn to write (cli/store.ts): a revoke during an import's swap must succeed (D4). */
export const CLI_MIN_BUSY_TIMEOUT_MS = 60_000;

/** A domain or host name: lower-case labels of letters, digits and inner hyphens. */
const DOMAIN_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

const PORT = integer('PORT', { fallback: 3000, min: 0, max: 65535, description: 'API listening port; `0`: any free port.' });

const API_DOMAIN = custom('API_DOMAIN', {
  shownDefault: '`localhost`',
  values: 'a domain name',
  description: 'Country hosts are `api.$API_DOMAIN` (sg) and `api.<cc>.$API_DOMAIN` (D3).',
  read: (raw) => {
    const domain = (raw ?? 'localhost').toLowerCase();
    if (!DOMAIN_NAME.test(domain)) throw new ConfigError('API_DOMAIN', `"${domain}" is not a domain name (e.g. example.com)`);
    return domain;
  },
});

const RATE_LIMIT_PER_MINUTE = integer('RATE_LIMIT_PER_MINUTE', {
  fallback: 60, min: 1, max: 1_000_000_000, unit: 'requests',
  description: 'Default limit of each key, per minute (per key: `key set-limit`).',
});

/**
 * DASHBOARD_PORT's and METRICS_PORT's number: a listener of its own on HOST (0: any free port),
 * never PORT itself; `why` ends the error that says so.
 */
function portOfItsOwn(env: Env, name: string, why: string): number {
  const port = readInteger(env, name, 0, 0, 65535);
  if (port !== 0 && port === PORT.read(env)) throw new ConfigError(name, `must differ from PORT (${port})${why}`);
  return port;
}

const DASHBOARD_PORT = custom('DASHBOARD_PORT', {
  shownDefault: 'unset (`shared`)',
  values: '`shared`, a port (`0`: any free port), or `off`',
  description: '`shared`: the dashboard answers on the API\'s port for `DASHBOARD_HOST`, so that any number of instances can run on one host. ' +
    'A port: a listener of its own on `HOST` (not `PORT`), answering for any host name. `off`: no dashboard in this process.',
  read: (raw, env): number | 'shared' | 'off' => {
    const word = raw?.toLowerCase();
    if (word === undefined || word === 'shared') return 'shared';
    if (word === 'off') return 'off';
    return portOfItsOwn(env, 'DASHBOARD_PORT', '; leave it unset to serve the dashboard on the API\'s port under DASHBOARD_HOST');
  },
});

/** The limit of a key that has none of its own, unless RATE_LIMIT_PER_MINUTE says otherwise: what the OpenAPI document states. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = RATE_LIMIT_PER_MINUTE.fallback;

const MAX_KEYS_PER_ACCOUNT_COUNTRY = 10;

const VARIABLES = {
  port: PORT,
  host: text('HOST', { fallback: '127.0.0.1', values: 'an address', description: 'Listening address (API, dashboard, metrics).' }),
  apiDomain: API_DOMAIN,
  countries: custom('COUNTRIES', {
    shownDefault: 'all',
    values: `some of ${COUNTRY_CODES.map((c) => `\`${c}\``).join(', ')}, comma-separated`,
    description: 'The countries this deployment serves; other hosts get 404.',
    read: (raw): Country[] => {
      if (raw === undefined) return [...COUNTRY_CODES];
      const list = raw.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
      if (list.length === 0) throw new ConfigError('COUNTRIES', 'lists no country');
      for (const c of list) {
        if (!isCountry(c)) throw new ConfigError('COUNTRIES', `unknown country "${c}" (expected some of ${COUNTRY_CODES.join(', ')})`);
      }
      return [...new Set(list)] as Country[];
    },
  }),
  databaseUrl: custom('DATABASE_URL', {
    shownDefault: '`file:./data/listings.db`',
    values: '`file:PATH` or `postgres://...`',
    description: 'Embedded SQLite (a path relative to the current folder); a `postgres://` URL selects PostgreSQL. ' +
      'A missing SQLite file is created only by `migrate`, `serve` and `demo`, which say so on stderr; other commands exit 1 naming the path.',
    read: (raw) => {
      const url = raw ?? 'file:./data/listings.db';
      if (url.startsWith('file:') && url.length > 'file:'.length) return url;
      if (/^postgres(ql)?:\/\/./.test(url)) {
        // The message never repeats the URL: it may hold a password (D20).
        if (!URL.canParse(url)) throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
        return url;
      }
      throw new ConfigError('DATABASE_URL', 'expected file:PATH (embedded SQLite) or postgres://... (PostgreSQL)');
    },
  }),
  databasePoolSize: integer('DATABASE_POOL_SIZE', { fallback: 10, min: 1, max: 1000, description: 'PostgreSQL connections per process.' }),
  databaseStatementTimeoutMs: integer('DATABASE_STATEMENT_TIMEOUT_MS', {
    fallback: 5000, min: 100, max: 600_000, unit: 'ms',
    description: 'PostgreSQL statement timeout of the server and of every CLI command except `import`: a stuck query fails (500, or one line naming this variable) instead of hanging.',
  }),
  importStatementTimeoutMs: integer('IMPORT_STATEMENT_TIMEOUT_MS', {
    fallback: 0, min: 0, max: 86_400_000, unit: 'ms',
    description: 'PostgreSQL statement timeout of `import`, whose statements grow with the file; `0`: none of its own (a `statement_timeout` set on the database server still applies).',
  }),
  databaseBusyTimeoutMs: integer('DATABASE_BUSY_TIMEOUT_MS', {
    fallback: 10_000, min: 0, max: 600_000, unit: 'ms',
    description: 'How long a server write (a dashboard change, last-used times) waits while another process writes, without holding the event loop; ' +
      `past it the dashboard says the database is busy (503) and nothing changes. CLI commands wait at least ${CLI_MIN_BUSY_TIMEOUT_MS / 1000} s.`,
  }),
  redisUrl: custom('REDIS_URL', {
    shownDefault: 'unset',
    values: '`redis://...` or `rediss://...`',
    description: 'Unset: rate limits in process (one instance). Set: shared across instances in Redis.',
    read: (raw): string | undefined => {
      if (raw === undefined) return undefined;
      // As with DATABASE_URL, the message never repeats the URL.
      if (!URL.canParse(raw)) throw new ConfigError('REDIS_URL', 'is not a valid URL (expected redis://HOST:PORT)');
      const { protocol } = new URL(raw);
      if (protocol !== 'redis:' && protocol !== 'rediss:') throw new ConfigError('REDIS_URL', 'expected a redis:// or rediss:// URL');
      return raw;
    },
  }),
  redisKeyPrefix: text('REDIS_KEY_PREFIX', { fallback: 'listings:rl:', values: 'any text', description: 'Prefix of the rate limiter\'s Redis keys, so deployments can share one Redis.' }),
  rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
  apiDeprecations: custom('API_DEPRECATIONS', {
    shownDefault: 'unset (nothing deprecated)',
    values: 'a JSON array of `{"prefix", "since", "sunset", "link"}` objects',
    description: 'Path prefixes marked deprecated (D29): every answer under a prefix (`/v1/listings/changes`, matched whole segments) carries ' +
      '`Deprecation: @<since as Unix seconds>`, `Sunset: <HTTP-date>` when `sunset` is set, and `Link: <link>; rel="deprecation"`, and the OpenAPI document ' +
      'marks its operations `deprecated`. `since` and `sunset`: ISO 8601 dates or date-times with a zone, `sunset` at least ' +
      `${MIN_SUNSET_MONTHS} months after \`since\`; \`link\`: an https URL. Example and rules: [docs/deployment.md](docs/deployment.md#deprecating-an-endpoint-d29).`,
    read: (raw) => parseDeprecations(raw),
  }),
  maxKeysPerAccountCountry: integer('MAX_KEYS_PER_ACCOUNT_COUNTRY', {
    fallback: MAX_KEYS_PER_ACCOUNT_COUNTRY, min: 1, max: 1000,
    description: 'Active (not revoked) keys an account may have in one country; the dashboard and `key create` refuse another until one is revoked. ' +
      'Each key has its own limit, so this bounds what one account can send at once (with the defaults, ' +
      `${MAX_KEYS_PER_ACCOUNT_COUNTRY} keys at ${RATE_LIMIT_PER_MINUTE.fallback}/min: ${MAX_KEYS_PER_ACCOUNT_COUNTRY * RATE_LIMIT_PER_MINUTE.fallback} requests). ` +
      'The demo\'s own key is not refused: each start replaces it.',
  }),
  readCacheTtlMs: integer('READ_CACHE_TTL_MS', {
    fallback: 5000, min: 0, max: 3_600_000, unit: 'ms',
    description: 'Safety expiry of the read caches (keys, origins, listings, pages, feed answers); `0` turns them off. ' +
      'They are exact without it (each is keyed by the version it was read at); nothing is served longer than this from when it was read from the database.',
  }),
  readCacheMaxMb: integer('READ_CACHE_MAX_MB', {
    fallback: 64, min: 1, max: 65_536, unit: 'MiB',
    description: 'Bound on the cached answers (serialised listings, pages, feed answers) together; least recently read go first.',
  }),
  changeHistoryDays: integer('CHANGE_HISTORY_DAYS', {
    fallback: 35, min: 30, max: 3650, unit: 'days',
    description: 'Days of listing changes kept for the change feed (D22: at least 30); older ones are pruned hourly.',
  }),
  shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', {
    fallback: 10_000, min: 0, max: 600_000, unit: 'ms',
    description: 'On SIGTERM/SIGINT, how long `serve` drains in-flight requests before closing what is still open.',
  }),
  warmupTimeoutMs: integer('WARMUP_TIMEOUT_MS', {
    fallback: 30_000, min: 0, max: 600_000, unit: 'ms',
    description: 'How long a starting process builds the indexes of the tenants read in the last hour before `/readyz` says ready; `0`: no warm-up.',
  }),
  warmupMaxListings: integer('WARMUP_MAX_LISTINGS', {
    fallback: 1_000_000, min: 0, max: 100_000_000,
    description: 'The warm-up starts no further tenant once this many listings are indexed.',
  }),
  trustProxy: custom('TRUST_PROXY', {
    shownDefault: 'unset (off)',
    values: `\`off\`, \`1\` to \`${MAX_PROXY_HOPS}\`, or addresses and CIDR ranges`,
    description: 'Behind a proxy: trust its `X-Forwarded-For` (the client address of logs, failed requests and the sign-in throttle, which counts an IPv6 address ' +
      'as its /64 with or without a proxy), `X-Forwarded-Host`, `X-Forwarded-Proto` and `X-Request-Id`. `1` (`true`, `yes`, `on`): one proxy, the client being the ' +
      'right-most `X-Forwarded-For` entry; `N`: N proxies. The number forms assume the service is reachable only through its proxies; otherwise give the ' +
      'proxies\' addresses or CIDR ranges (`10.0.0.0/8,loopback`), and only requests from them are trusted.',
    read: (raw) => trustProxy(raw),
  }),
  logLevel: choice('LOG_LEVEL', {
    words: LOG_LEVELS,
    fallback: 'info',
    description: 'The log goes to stdout: readable lines on a terminal, one JSON object per line otherwise.',
  }),
  dashboardPort: DASHBOARD_PORT,
  dashboardHost: custom('DASHBOARD_HOST', {
    shownDefault: '`dashboard.$API_DOMAIN`',
    values: 'a host name',
    description: 'The dashboard\'s host name on the API\'s port; not one of the country hosts (D3).',
    read: (raw, env) => {
      const domain = API_DOMAIN.read(env);
      const host = (raw ?? `dashboard.${domain}`).toLowerCase();
      if (!DOMAIN_NAME.test(host)) throw new ConfigError('DASHBOARD_HOST', `"${host}" is not a host name (e.g. dashboard.example.com)`);
      if (COUNTRY_CODES.some((c) => hostForCountry(c, domain) === host)) {
        throw new ConfigError('DASHBOARD_HOST', `"${host}" is a country host of the API; choose another name`);
      }
      return host;
    },
  }),
  usageCounting: flag('USAGE_COUNTING', {
    fallback: true,
    description: 'Count requests per key and keep each account\'s latest failed requests for the dashboard; `off` counts nothing.',
  }),
  readModelMaxMb: custom('READ_MODEL_MAX_MB', {
    shownDefault: 'half the V8 heap limit (`--max-old-space-size`)',
    values: `1 to ${(1_048_576).toLocaleString('en-US')} MiB`,
    description: 'Bound on the tenant indexes together (about 400 bytes per listing, estimated): past it, whole indexes go, least recently read first, and a tenant\'s next ' +
      'read builds its index again. A tenant larger than the bound is still served. Route keys to instances (docs/deployment.md) so that each holds only its share.',
    read: (raw, env) => (raw === undefined ? Math.max(1, Math.floor(getHeapStatistics().heap_size_limit / 2 / 1024 / 1024)) : readInteger(env, 'READ_MODEL_MAX_MB', 0, 1, 1_048_576)),
  }),
  usageFlushIntervalMs: integer('USAGE_FLUSH_INTERVAL_MS', {
    fallback: 5000, min: 100, max: 60_000, unit: 'ms',
    description: 'How often each process writes its usage counts, in one batch. A crash loses at most this much counting.',
  }),
  webhookAllowPrivate: flag('WEBHOOK_ALLOW_PRIVATE', {
    fallback: false,
    description: '`on`: webhooks may go to loopback, private, link-local, shared (100.64/10) addresses and this host\'s own (local development and tests). ' +
      'Off, such an address is refused at each attempt, whatever name resolved to it. Other special-purpose addresses (broadcast, multicast, documentation...) are refused either way (D24).',
  }),
  webhookConcurrency: integer('WEBHOOK_CONCURRENCY', {
    fallback: 200, min: 1, max: 10_000,
    description: 'Webhook attempts under way at once on each instance, shared fairly between organisations: one holds at most a quarter of them, and a freed one goes to ' +
      'the organisation holding the fewest. A hanging endpoint holds one for up to 10 s.',
  }),
  metricsPort: custom('METRICS_PORT', {
    shownDefault: 'unset (`off`)',
    values: 'a port (`0`: any free port) or `off`',
    description: 'Prometheus metrics at `GET /metrics` on `HOST:METRICS_PORT` (not `PORT` or `DASHBOARD_PORT`). The API\'s port answers 404 for `/metrics`.',
    read: (raw, env): number | 'off' => {
      const word = raw?.toLowerCase();
      if (word === undefined || word === 'off') return 'off';
      const port = portOfItsOwn(env, 'METRICS_PORT', ': the API\'s port does not serve /metrics');
      if (port !== 0 && port === DASHBOARD_PORT.read(env)) throw new ConfigError('METRICS_PORT', `must differ from DASHBOARD_PORT (${port})`);
      return port;
    },
  }),
} satisfies Record<string, Variable<unknown>>;

type Variables = typeof VARIABLES;

/** The validated configuration, read once at start-up: one property per variable of VARIABLES. */
export type Config = { [K in keyof Variables]: ReturnType<Variables[K]['read']> };

/** Reads and checks every variable; the first bad one throws a ConfigError naming it. */
export function loadConfig(env: Env = process.env): Config {
  const config: Partial<Record<keyof Variables, unknown>> = {};
  for (const [key, variable] of Object.entries(VARIABLES) as Array<[keyof Variables, Variable<unknown>]>) config[key] = variable.read(env);
  return config as Config;
}

/** The README's configuration table (Markdown), from the declarations. */
export function configurationTable(): string {
  const escape = (cell: string) => cell.replaceAll('|', '\\|');
  const rows = Object.values(VARIABLES).map((v: Variable<unknown>) =>
    `| \`${v.name}\` | ${escape(v.shownDefault)} | ${escape(v.values)} | ${escape(v.description)} |`);
  return ['| variable | default | values | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * TRUST_PROXY: off (unset, 0, false, no, off); a number of proxy hops (1 to MAX_PROXY_HOPS), with
 * 1, true, yes and on all meaning the one proxy in front (issue 29, item 3: `1` once trusted every
 * hop, so the left-most X-Forwarded-For entry, which the client writes, was taken for its address);
 * or the proxies' addresses and CIDR ranges separated by commas, as Fastify's `trustProxy` string
 * and proxy-addr read them (named ranges loopback, linklocal, uniquelocal included).
 */
function trustProxy(raw: string | undefined): TrustProxy {
  if (raw === undefined) return false;
  const lower = raw.toLowerCase();
  if ((FALSE_WORDS as readonly string[]).includes(lower)) return false;
  if ((TRUE_WORDS as readonly string[]).includes(lower)) return { hops: 1 };
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
