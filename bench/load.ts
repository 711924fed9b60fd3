import autocannon, { type Request, type Result } from 'autocannon';
import { Agent, request } from 'node:http';

/** One load run against one server, summarised. Latencies are exact (every response is recorded). */
export interface LoadResult {
  durationS: number;
  requests: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** Responses with a status other than 2xx (connection errors and timeouts are counted apart). */
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Bytes per 2xx response (headers included), from autocannon's throughput. */
  bytesPerResponse: number;
  /** autocannon's own (whole-millisecond) percentiles, for reference. */
  autocannon: { p50: number; p99: number; reqPerSecMean: number };
  /**
   * CPU time (user + system) the server's processes spent per request during the load, in µs,
   * where the caller measured it (processes.ts `cpuMsOf`, read before and after).
   */
  serverCpuUsPerRequest?: number;
}

/** A request with headers of its own (added to the run's), e.g. one key per tenant. */
export interface LoadRequest {
  path: string;
  headers?: Record<string, string>;
}

export interface LoadOptions {
  port: number;
  connections: number;
  durationS: number;
  headers: Record<string, string>;
  /** The paths (or requests) to send, rotated over by all connections together. */
  paths: readonly (string | LoadRequest)[];
  /** wrk only: the CPU wrk is pinned to (`taskset -c`, pinning.ts); unset: not pinned. */
  cpu?: number;
}

const asRequest = (item: string | LoadRequest): LoadRequest => (typeof item === 'string' ? { path: item } : item);

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { paths } = options;
  let next = 0;
  // One path: a static request (built once). Several: every request takes the next path of a
  // counter shared by all connections, so the set is spread evenly over the connections.
  const first = asRequest(paths[0]!);
  const requests: Request[] =
    paths.length === 1
      ? [{ method: 'GET', ...first }]
      : [{
          method: 'GET',
          path: first.path,
          setupRequest: (req) => {
            const item = asRequest(paths[next++ % paths.length]!);
            return item.headers === undefined ? { ...req, path: item.path } : { ...req, path: item.path, headers: { ...req.headers, ...item.headers } };
          },
        }];

  let latencies = new Float64Array(1 << 16);
  let count = 0;
  const instance = autocannon({
    url: `http://127.0.0.1:${options.port}`,
    connections: options.connections,
    duration: options.durationS,
    pipelining: 1,
    timeout: 10,
    headers: options.headers,
    requests,
  });
  instance.on('response', (_client, _status, _bytes, responseTime) => {
    if (count === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[count++] = responseTime;
  });
  const result: Result = await instance;

  const sorted = latencies.subarray(0, count).sort();
  const pct = (p: number) => (count === 0 ? NaN : sorted[Math.min(count - 1, Math.ceil((p / 100) * count) - 1)]!);
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count;
  const responses = result.requests.total;
  return {
    durationS: result.duration,
    requests: responses,
    reqPerSec: responses / result.duration,
    p50Ms: pct(50),
    p99Ms: pct(99),
    p999Ms: pct(99.9),
    maxMs: count === 0 ? NaN : sorted[count - 1]!,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    bytesPerResponse: result['2xx'] === 0 ? 0 : Math.round(result.throughput.total / result['2xx']),
    autocannon: { p50: result.latency.p50, p99: result.latency.p99, reqPerSecMean: result.requests.mean },
  };
}

/** Requests sent by a small node:http client, each response timed (latencies in ms, in request order). */
export interface ClientResult {
  requests: number;
  wallMs: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Status codes; 0 counts connection errors. */
  statusCodes: Record<string, number>;
  /** Latency of each request, in the order the requests were taken. */
  latencies: number[];
}

export interface ClientOptions {
  port: number;
  /** Requests in flight at once (each on its own keep-alive connection). */
  concurrency: number;
  headers: Record<string, string>;
}

/**
 * Each request exactly once, `concurrency` at a time (autocannon cannot promise that), e.g. the
 * first read of every tenant. For a few thousand requests; the loads that measure throughput use
 * autocannon (`runLoad`), which costs the shared CPU far less per request.
 */
export function runEach(options: ClientOptions & { requests: readonly LoadRequest[] }): Promise<ClientResult> {
  let i = 0;
  return drive(options, () => (i < options.requests.length ? options.requests[i++] : undefined));
}

/** Requests from `next` until it returns undefined (checked before each request), `concurrency` at a time. */
export function runWhile(options: ClientOptions & { next: () => LoadRequest | undefined }): Promise<ClientResult> {
  return drive(options, options.next);
}

async function drive(options: ClientOptions, next: () => LoadRequest | undefined): Promise<ClientResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  const started = performance.now();
  const worker = async () => {
    for (let item = next(); item !== undefined; item = next()) {
      const slot = latencies.length;
      latencies.push(NaN);
      const t0 = performance.now();
      const status = await get(agent, options.port, item.path, { ...options.headers, ...item.headers });
      latencies[slot] = performance.now() - t0;
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    agent.destroy();
  }
  const wallMs = performance.now() - started;
  const sorted = Float64Array.from(latencies).sort();
  const pct = (p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
  return {
    requests: latencies.length,
    wallMs,
    reqPerSec: latencies.length / (wallMs / 1000),
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: sorted.length === 0 ? NaN : sorted[sorted.length - 1]!,
    statusCodes,
    latencies,
  };
}

/** One GET on a keep-alive agent; resolves with the status once the body is read (0 on a connection error). */
function get(agent: Agent, port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}
