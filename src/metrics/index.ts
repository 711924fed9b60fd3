import { createServer, type Server } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DashboardMetrics, SignInResult } from '../dashboard/metrics.js';
import type { DeliveryOutcome } from '../webhooks/deliverer.js';
import type { ReadStats } from '../readmodel/index.js';
import { trackConnections } from '../http/drain.js';
import { OUTCOMES, outcomeOfStatus } from '../usage/index.js';
import { answerPrimary, READY_METRIC, ScrapeUnavailable } from './cluster.js';

/**
 * Prometheus metrics (issue 12), with prom-client, served at GET /metrics on a port of their own
 * (METRICS_PORT; the API's port answers 404 there). Each answer is counted by prom-client's own
 * Counter and Histogram: plain integers read at each scrape cost no less (docs/design/request-metrics.md).
 *
 * - `listings_http_requests_total{route, status, code}`: every answer of the API's app; `route` is
 *   the route's pattern (`/v1/listings/:id`) or `unmatched`, `code` the error code (D6) or `none`.
 * - `listings_http_request_duration_seconds{route}`: a histogram of the same answers' latency.
 * - `listings_rate_limit_decisions_total{outcome}`: `admitted` (counted against the key),
 *   `limited` (429), `revalidated` (a free 304, D21).
 * - `listings_cache_requests_total{cache, result}`: hits and misses of the read caches (keys,
 *   origins, pages, details); `listings_cache_refreshes_ahead_total`: entries read again ahead of
 *   their safety expiry.
 * - `listings_index_builds_total`, `listings_index_replays_total`: tenant indexes built from the
 *   database and brought up to date from the change log; `listings_listing_row_reads_total`: reads
 *   of listing rows by id; `listings_indexed_tenants`, `listings_indexed_listings`,
 *   `listings_index_bytes`, `listings_index_views` (their sorted and filtered orders): what the
 *   indexes hold now (summed over workers);
 *   `listings_index_evictions_total`: indexes dropped for READ_MODEL_MAX_MB;
 *   `listings_index_build_seconds`: a histogram of the builds' times; `listings_cold_reads_total`:
 *   pages and details read from the database while their tenant's index was still to be built.
 * - `listings_ready`: 1 while the process answers GET /readyz with 200, 0 while it answers 503
 *   (http/readiness.ts); summed over the live workers of `serve --workers`, so there it counts them
 *   (0, never absent, while none is live).
 * - `listings_rate_limit_fallback`: 1 while REDIS_URL is set but Redis is away, so that the process
 *   limits keys on its own (ratelimit/resilient.ts); summed over workers, it counts such processes.
 * - `listings_dashboard_requests_total{method, route, status}`: every answer of the dashboard
 *   (issue 30): its 5xx, its 503s while the database is busy, its 429s.
 * - `listings_dashboard_sign_ins_total{result}`: sign-in attempts, `succeeded`, `failed` (wrong
 *   email or password) or `throttled` (refused unchecked, src/dashboard/throttle.ts).
 * - `listings_webhook_deliveries_total{outcome}`: webhook attempts (D24), `delivered` (2xx),
 *   `failed` (to be retried) or `disabled` (the failure that disabled the endpoint).
 * - `listings_webhook_oldest_undelivered_seconds`: how long the oldest change not yet delivered to
 *   an enabled endpoint has waited (0 when all are caught up); the largest over workers.
 * - prom-client's process and Node.js defaults, the event-loop delay among them, sampled every
 *   millisecond (EVENT_LOOP_RESOLUTION_MS).
 *
 * In `serve --workers N` each worker keeps its own and the primary, which listens on METRICS_PORT,
 * sums them per scrape and keeps the counts of workers that exited (src/metrics/cluster.ts).
 */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
/**
 * The event-loop delay histogram's sampling interval. Its samples include the interval itself, so
 * prom-client's default (10 ms) reads an idle loop as about 10 ms late; at 1 ms a "p99 under 10 ms"
 * target can be read off nodejs_eventloop_lag_p99_seconds.
 */
export const EVENT_LOOP_RESOLUTION_MS = 1;
const SIGN_IN_RESULTS: readonly SignInResult[] = ['succeeded', 'failed', 'throttled'];
const CODE_OF_OUTCOME: readonly string[] = OUTCOMES.map((o, i) => (i < 2 ? 'none' : o));

/** The label `code` of an answer's status. */
export function codeOfStatus(status: number): string {
  const outcome = outcomeOfStatus(status);
  return outcome < 0 ? (status >= 400 ? 'other' : 'none') : CODE_OF_OUTCOME[outcome]!;
}

export class Metrics {
  readonly registry = new Registry();
  /** The API's answers, their latency and the rate limiter's decisions, counted as each answer completes. */
  private readonly api: { answers: Counter<'route' | 'status' | 'code'>; latency: Histogram<'route'>; decisions: Counter<'outcome'> };
  private readonly webhookOutcomes: Record<DeliveryOutcome, number> = { delivered: 0, failed: 0, disabled: 0 };
  /** How long each tenant index built from the database took (a first read, or the first after an eviction). */
  private readonly indexBuildSeconds = new Histogram({
    name: 'listings_index_build_seconds',
    help: 'Time to build a tenant index from the database: a tenant\'s first read, or its first after its index was evicted (READ_MODEL_MAX_MB).',
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [],
  });
  private oldestUndeliveredSeconds: () => number = () => 0;
  /** The dashboard's answers and sign-ins (src/dashboard/metrics.ts): few, so counted by prom-client directly. */
  readonly dashboard: DashboardMetrics;

  /**
   * `isReady`: what GET /readyz would answer now (http/readiness.ts); `limitsShared`: whether the
   * rate limits are shared as configured (false while Redis is away); both read at each scrape.
   */
  constructor(readStats: () => ReadStats, isReady?: () => Promise<boolean>, limitsShared: () => boolean = () => true) {
    // Registered in the order a scrape lists them.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_RESOLUTION_MS });
    this.api = this.registerApiMetrics(readStats);
    this.registry.registerMetric(this.indexBuildSeconds);
    if (isReady !== undefined) this.registerReadiness(isReady);
    this.registry.registerMetric(new Gauge({
      name: 'listings_rate_limit_fallback',
      help: 'Whether the process limits keys on its own (1) because REDIS_URL is set but Redis is away, or as configured (0). Summed over the workers of serve --workers.',
      registers: [],
      aggregator: 'sum',
      collect() {
        this.set(limitsShared() ? 0 : 1);
      },
    }));
    this.registerWebhookMetrics();
    this.dashboard = this.registerDashboardMetrics();
  }

  /** The API's answers, their latency and the rate limiter's decisions (counted per answer), and the read caches (read at each scrape). */
  private registerApiMetrics(readStats: () => ReadStats): Metrics['api'] {
    const registers = [this.registry];
    const api = {
      answers: new Counter({ name: 'listings_http_requests_total', help: 'Answers of the API, by route pattern, status and error code (none for 2xx and 304).', labelNames: ['route', 'status', 'code'] as const, registers }),
      latency: new Histogram({ name: 'listings_http_request_duration_seconds', help: 'Latency of API answers, from the request to the end of the answer, by route.', labelNames: ['route'] as const, buckets: [...DURATION_BUCKETS], registers }),
      decisions: new Counter({ name: 'listings_rate_limit_decisions_total', help: 'Rate-limit decisions: admitted (counted against the key), limited (429), revalidated (a free 304, D21).', labelNames: ['outcome'] as const, registers }),
    };
    // Every outcome from zero, so that rate() and alerts see the first one.
    for (const outcome of ['admitted', 'limited', 'revalidated']) api.decisions.inc({ outcome }, 0);
    this.registry.registerMetric(new Counter({
      name: 'listings_cache_requests_total',
      help: 'Look-ups in the read caches of keys, origins, list pages and listing details: hit or miss.',
      labelNames: ['cache', 'result'],
      registers: [],
      collect() {
        this.reset();
        const stats = readStats();
        for (const cache of ['keys', 'origins', 'pages', 'details'] as const) {
          this.inc({ cache, result: 'hit' }, stats[cache].hits);
          this.inc({ cache, result: 'miss' }, stats[cache].misses);
        }
      },
    }));
    // The read model's own counts (readmodel/index.ts, ReadStats), read at each scrape.
    const fromStats = (name: string, help: string, value: (stats: ReadStats) => number) => this.registry.registerMetric(new Counter({
      name, help, registers: [],
      collect() {
        this.reset();
        this.inc(value(readStats()));
      },
    }));
    fromStats('listings_index_builds_total', 'Tenant indexes built from the database (a tenant\'s first read, or its first after the index was dropped).', (s) => s.indexBuilds);
    fromStats('listings_index_replays_total', 'Tenant indexes brought up to date from the change log (a write to the tenant since its last read).', (s) => s.indexReplays);
    fromStats('listings_cold_reads_total', 'Pages and details read from the database while their tenant\'s index was still to be built.', (s) => s.coldReads);
    fromStats('listings_index_evictions_total', 'Tenant indexes dropped to stay within READ_MODEL_MAX_MB, least recently read first.', (s) => s.indexEvictions);
    fromStats('listings_listing_row_reads_total', 'Reads of listing rows by id: one per turn, however many listings the turn\'s answers missed.', (s) => s.listingRowReads);
    fromStats('listings_cache_refreshes_ahead_total', 'Cached keys, origins and bodies read again in the background, ahead of their safety expiry.', (s) => s.refreshedAhead);
    for (const [name, help, value] of [
      ['listings_indexed_tenants', 'Tenant indexes held in memory.', (s: ReadStats) => s.tenants],
      ['listings_indexed_listings', 'Listings held in memory by the tenant indexes together.', (s: ReadStats) => s.listings],
      ['listings_index_bytes', 'Estimated bytes of the tenant indexes held (READ_MODEL_MAX_MB bounds them).', (s: ReadStats) => s.indexBytes],
      ['listings_index_views', 'Sorted and filtered orders of the tenant indexes held, each dropped with its index.', (s: ReadStats) => s.viewsHeld],
    ] as const) {
      this.registry.registerMetric(new Gauge({ name, help, registers: [], aggregator: 'sum', collect() {
        this.set(value(readStats()));
      } }));
    }
    return api;
  }

  private registerReadiness(isReady: () => Promise<boolean>): void {
    this.registry.registerMetric(new Gauge({
      ...READY_METRIC,
      registers: [],
      aggregator: 'sum',
      async collect() {
        this.set((await isReady()) ? 1 : 0);
      },
    }));
  }

  private registerWebhookMetrics(): void {
    const webhookOutcomes = this.webhookOutcomes;
    this.registry.registerMetric(new Counter({
      name: 'listings_webhook_deliveries_total',
      help: 'Webhook attempts: delivered (2xx), failed (retried later), disabled (the failure that disabled the endpoint).',
      labelNames: ['outcome'],
      registers: [],
      collect() {
        this.reset();
        for (const outcome of ['delivered', 'failed', 'disabled'] as const) this.inc({ outcome }, webhookOutcomes[outcome]);
      },
    }));
    const oldest = () => this.oldestUndeliveredSeconds();
    this.registry.registerMetric(new Gauge({
      name: 'listings_webhook_oldest_undelivered_seconds',
      help: 'Age of the oldest change not yet delivered to an enabled webhook endpoint (0: all caught up).',
      registers: [],
      aggregator: 'max',
      collect() {
        this.set(oldest());
      },
    }));
  }

  /** The dashboard's counters, counted by prom-client directly (few answers), and what the dashboard calls to count. */
  private registerDashboardMetrics(): DashboardMetrics {
    const dashboardRequests = new Counter({
      name: 'listings_dashboard_requests_total',
      help: 'Answers of the dashboard, by method, route pattern (or unmatched) and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    const signIns = new Counter({
      name: 'listings_dashboard_sign_ins_total',
      help: 'Dashboard sign-in attempts: succeeded, failed (wrong email or password), throttled (refused unchecked after too many failures).',
      labelNames: ['result'],
      registers: [this.registry],
    });
    // Every result from zero, so that rate() and alerts see the first failure.
    for (const result of SIGN_IN_RESULTS) signIns.inc({ result }, 0);
    return {
      requestCompleted: (method, route, status) => dashboardRequests.inc({ method, route: route ?? 'unmatched', status: String(status) }),
      signIn: (result) => signIns.inc({ result }),
    };
  }

  /** A tenant index was built from the database in `ms` (readmodel/tenant-index.ts). */
  indexBuilt(ms: number): void {
    this.indexBuildSeconds.observe(ms / 1000);
  }

  /** The request path's one call, when an answer is complete (http/request-log.ts). */
  requestCompleted(request: FastifyRequest, reply: FastifyReply, route: string | null, elapsedMs: number): void {
    const status = reply.statusCode;
    const name = route ?? 'unmatched';
    this.api.answers.inc({ route: name, status: String(status), code: codeOfStatus(status) });
    this.api.latency.observe({ route: name }, elapsedMs / 1000);
    // D14, D21: the limit step's decision, as the answer shows it (http/v1/routes.ts).
    const limit = request.rateLimit;
    if (limit == null) return;
    if (status === 304) this.api.decisions.inc({ outcome: 'revalidated' });
    else if (status === 429) this.api.decisions.inc({ outcome: 'limited' });
    else if (!limit.deferred) this.api.decisions.inc({ outcome: 'admitted' });
  }

  /** A webhook attempt's outcome (src/webhooks/deliverer.ts). */
  webhookAttempt(outcome: DeliveryOutcome): void {
    this.webhookOutcomes[outcome]++;
  }

  /** Where the age of the oldest undelivered webhook change is read from (the deliverer, once it exists). */
  watchWebhooks(oldestUndeliveredSeconds: () => number): void {
    this.oldestUndeliveredSeconds = oldestUndeliveredSeconds;
  }

  /** The text exposition of this process's metrics. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** In a `serve --workers` worker: answer the primary's requests for these metrics (src/metrics/cluster.ts). */
  reportToPrimary(): void {
    answerPrimary(this.registry);
  }
}

/** GET /metrics on HOST:METRICS_PORT (anything else: 404); a scrape that cannot be answered now (ScrapeUnavailable): 503. */
export async function listenForScrapes(scrape: () => Promise<string>, port: number, host: string, onError: (error: unknown) => void): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at GET /metrics.\n');
      return;
    }
    scrape().then(
      (text) => res.writeHead(200, { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE }).end(req.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        if (error instanceof ScrapeUnavailable) {
          res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1' }).end(`${error.message}\n`);
          return;
        }
        onError(error);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Could not collect the metrics; see the log.\n');
      },
    );
  });
  // Closed after the API at shutdown, like it: a scrape in flight is answered (src/http/drain.ts).
  trackConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
