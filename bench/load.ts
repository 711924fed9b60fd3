import autocannon, { type Request, type Result } from 'autocannon';

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
}

export interface LoadOptions {
  port: number;
  connections: number;
  durationS: number;
  headers: Record<string, string>;
  /** The paths to request, rotated over by all connections together. */
  paths: readonly string[];
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { paths } = options;
  let next = 0;
  // One path: a static request (built once). Several: every request takes the next path of a
  // counter shared by all connections, so the set is spread evenly over the connections.
  const requests: Request[] =
    paths.length === 1
      ? [{ method: 'GET', path: paths[0]! }]
      : [{ method: 'GET', path: paths[0]!, setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length]! }) }];

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
