import type { Worker } from 'node:cluster';
import { AggregatorRegistry, Registry, type Metric } from 'prom-client';

/**
 * The metrics of `serve --workers N` (issue 30 item 3): the primary listens on METRICS_PORT and
 * answers a scrape with the sum of its workers' metrics, which must read right in Prometheus
 * across a worker's crash and replacement, and must never keep a scrape waiting.
 *
 * Counters survive a worker: the primary keeps the counters (and histograms, and summaries' sum
 * and count) that each worker last reported, and when a worker exits adds them to the counts of
 * departed workers, which every later scrape adds in. So each summed counter only grows while the
 * primary lives: Prometheus never sees a drop, which `increase()` would take for a reset of the
 * whole sum (counting the survivors' totals again). A replacement starts from zero and adds to the
 * sum. The sums are of floats too (CPU seconds, histograms' _sum), whose rounding depends on the
 * order of the additions, and the order changes when a worker's counts move to the departed ones:
 * a sum can come out one unit in the last place lower, which Prometheus would read as a reset. The
 * true total never decreases, so the primary never exports less than it has exported for a series.
 * What a worker counted after it last reported (after the last scrape, when it dies by
 * kill -9) is lost, as it is for a single process that dies. Chosen over a per-worker label: a
 * label per process id makes a new series at each restart, whose first samples `increase()` does
 * not count; a label per slot reused by the replacement hides its reset whenever the replacement
 * has counted past its predecessor's last value by the next scrape. Gauges describe live
 * processes only: a departed worker's are dropped.
 *
 * A scrape never waits on a worker that is not serving yet (it has counted nothing): only workers
 * that said they serve are asked, each within ASK_TIMEOUT_MS. Before any worker serves, or when a
 * serving worker does not answer in time (a blocked event loop), the scrape is refused with a 503
 * at once (ScrapeUnavailable): Prometheus records a failed scrape rather than a partial sum.
 *
 * prom-client's own cluster support (AggregatorRegistry.clusterMetrics) asks every connected
 * worker, starting ones included, waits 5 s for each, and sums only live workers; its public
 * AggregatorRegistry.aggregate still does the summing here.
 */

/** How long a scrape waits for a serving worker's metrics: within the 2 s a scrape must be answered in. */
export const ASK_TIMEOUT_MS = 1_500;

const REQUEST = 'listings:metrics-request';
const REPLY = 'listings:metrics-reply';

type Labels = Record<string, string | number>;
interface MetricValue {
  value: number;
  labels: Labels;
  metricName?: string;
}
/** A metric as registry.getMetricsAsJSON() gives it (the `type` is a string at run time). */
interface MetricJson {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: MetricValue[];
}
type Report = MetricJson[];

/**
 * Across workers, the event loop's high percentiles and maximum are the slowest worker's: averaged
 * (prom-client's default), one stalled worker would hide behind a healthy one.
 */
const MAX_ACROSS_WORKERS = new Set(['nodejs_eventloop_lag_p90_seconds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_eventloop_lag_max_seconds']);

/** The values of a metric that only grow: all of a counter's and a histogram's, a summary's _sum and _count. */
function monotonicValues(metric: MetricJson): MetricValue[] {
  if (metric.type === 'counter' || metric.type === 'histogram') return metric.values;
  if (metric.type === 'summary') return metric.values.filter((v) => v.metricName === `${metric.name}_sum` || v.metricName === `${metric.name}_count`);
  return [];
}

/** The part of a report that only grows. */
function monotonicPart(report: Report): Report {
  return report.map((metric) => ({ ...metric, values: monotonicValues(metric) })).filter((metric) => metric.values.length > 0);
}

const valueKey = (v: MetricValue) => `${v.metricName ?? ''}\u0000${JSON.stringify(Object.entries(v.labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

/** `into` plus `part`, value by value (same metric name, sample name and labels). */
function addReports(into: Report, part: Report): Report {
  const byName = new Map(into.map((m) => [m.name, { ...m, values: m.values.map((v) => ({ ...v })) }]));
  for (const metric of part) {
    const seen = byName.get(metric.name);
    if (seen === undefined) {
      byName.set(metric.name, { ...metric, values: metric.values.map((v) => ({ ...v })) });
      continue;
    }
    const index = new Map(seen.values.map((v) => [valueKey(v), v]));
    for (const v of metric.values) {
      const same = index.get(valueKey(v));
      if (same !== undefined) same.value += v.value;
      else seen.values.push({ ...v });
    }
  }
  return [...byName.values()];
}

/**
 * `listings_ready` (declared here, where the primary needs it too): a gauge, so only live workers'
 * values are summed; with none live the sum is 0, not absent, so that an alert on it fires while
 * every worker is down (issue 40 item 10).
 */
export const READY_METRIC = {
  name: 'listings_ready',
  help: "Whether the process answers GET /readyz with 200 (1) or 503 (0: shutting down, the database cannot serve the API's reads, or warming up). Summed over the live workers of serve --workers (0 while none is live).",
} as const;

/** A scrape that cannot be answered now: 503 with this message (src/metrics/index.ts). */
export class ScrapeUnavailable extends Error {}

/** The primary's side: the workers' last reports and the departed workers' counts. */
export class ClusterMetrics {
  private readonly serving = new Set<Worker>();
  /** Each live worker's last report (what the last scrape summed). */
  private readonly last = new Map<Worker, Report>();
  /** The counts of workers that exited, summed. */
  private departed: Report = [];
  /** The highest value exported for each series that only grows (see above: float rounding). */
  private readonly exported = new Map<string, number>();
  private nextId = 0;

  /** The worker serves (its 'serving' message, src/cli/serve.ts): scrapes ask it from now on. */
  workerServing(worker: Worker): void {
    this.serving.add(worker);
  }

  /** The worker exited: what it last reported of its counters stays in every later sum. */
  workerExited(worker: Worker): void {
    this.serving.delete(worker);
    const report = this.last.get(worker);
    this.last.delete(worker);
    if (report !== undefined) this.departed = addReports(this.departed, monotonicPart(report));
  }

  /** One scrape: asks every serving worker, then sums their reports and the departed counts. */
  async scrape(): Promise<string> {
    const asked = [...this.serving].filter((worker) => worker.isConnected());
    if (asked.length === 0 && this.last.size === 0 && this.departed.length === 0) {
      throw new ScrapeUnavailable('No worker is serving yet; try again shortly.');
    }
    await Promise.all(asked.map((worker) => this.ask(worker)));
    // Taken in one synchronous step: every worker's latest report is counted exactly once, either
    // as live (this.last) or, if it exited while this scrape waited, in this.departed.
    const reports = [...this.last.values(), this.departed].map((report) =>
      report.map((metric) => ({
        ...metric,
        aggregator: metric.type === 'counter' || metric.type === 'histogram' ? 'sum' : MAX_ACROSS_WORKERS.has(metric.name) ? 'max' : metric.aggregator,
      })),
    );
    const summed = (await AggregatorRegistry.aggregate(reports).getMetricsAsJSON()) as unknown as Report;
    if (!summed.some((metric) => metric.name === READY_METRIC.name)) summed.push({ ...READY_METRIC, type: 'gauge', aggregator: 'sum', values: [{ value: 0, labels: {} }] });
    const registry = new Registry();
    for (const metric of summed) {
      for (const value of monotonicValues(metric)) {
        const key = `${metric.name}\u0000${valueKey(value)}`;
        const highest = this.exported.get(key);
        if (highest !== undefined && value.value < highest) value.value = highest;
        else this.exported.set(key, value.value);
      }
      // As AggregatorRegistry.aggregate registers its sums: a metric whose get() gives these values.
      registry.registerMetric({ ...metric, get: async () => metric } as unknown as Metric);
    }
    return registry.metrics();
  }

  /** Resolves once the worker has answered (its report is then in this.last) or has exited. */
  private ask(worker: Worker): Promise<void> {
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onMessage = (message: { type?: string; id?: number; metrics?: Report; error?: string }) => {
        if (message?.type !== REPLY || message.id !== id) return;
        if (message.metrics === undefined) return done(new Error(`worker ${worker.process.pid} could not collect its metrics: ${message.error}`));
        // A worker that exited in the meantime was moved to the departed counts: not counted twice.
        if (this.serving.has(worker)) this.last.set(worker, message.metrics);
        done();
      };
      // Its last report is in the departed counts now (workerExited).
      const onExit = () => done();
      const timer = setTimeout(
        () => done(new ScrapeUnavailable(`Worker ${worker.process.pid} did not report its metrics within ${ASK_TIMEOUT_MS} ms; try again shortly.`)),
        ASK_TIMEOUT_MS,
      );
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      try {
        worker.send({ type: REQUEST, id });
      } catch {
        // The channel closed between isConnected() and now: the worker is on its way out.
        done();
      }
    });
  }
}

/** A worker's side: answers the primary's requests with this registry's metrics. */
export function answerPrimary(registry: Registry): void {
  process.on('message', (message: { type?: string; id?: number }) => {
    if (message?.type !== REQUEST) return;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: REPLY, id: message.id, metrics }),
      (error: unknown) => process.send?.({ type: REPLY, id: message.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
}
