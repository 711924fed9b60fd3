import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { loadConfig } from '../src/config/index.js';
import { createService } from '../src/service.js';

/**
 * The serving process of the scale benchmark (bench/scale.ts): the real service, built by
 * `createService(loadConfig())` exactly as `listings-api serve` builds it (one process), plus a
 * probe of its own event loop, so that the delay and memory figures come from the process that
 * serves. Bench-only: nothing in src/ knows about it.
 *
 * The probe samples the event loop every millisecond (`monitorEventLoopDelay({ resolution: 1 })`).
 * On SIGUSR2 it writes one JSON line on stdout (among the service's log lines):
 *
 *   {"probe":"scale-bench","seq":1,"reason":"signal","since_ms":...,"eld_ms":{...},"rss_bytes":...,...}
 *
 * with the delay histogram since the previous line (min, mean, p50, p90, p99, p99.9, max in ms,
 * and the sample count), then starts a new one; so the bench brackets each phase with two
 * signals. Each sample is the time between two turns of the 1 ms timer, so an idle loop reads
 * about 1.1 ms: the figures include the sampling interval. The same line, with `"reason":"exit"`,
 * is written on SIGTERM/SIGINT before the service shuts down gracefully, and carries the whole
 * run's maximum as well. On SIGHUP the same line (`"reason":"gc"`) comes after a full garbage
 * collection, when the process runs with --expose-gc: its RSS is what the process holds alive.
 */

const RESOLUTION_MS = 1;
const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
delay.enable();
let seq = 0;
let since = performance.now();
let cpuSince = process.cpuUsage();
let wholeRunMaxMs = 0;

const ms = (ns: number) => Math.round(ns / 1e4) / 100;

function summary(h: IntervalHistogram) {
  return h.count === 0
    ? { count: 0 }
    : {
        min: ms(h.min),
        mean: ms(h.mean),
        p50: ms(h.percentile(50)),
        p90: ms(h.percentile(90)),
        p99: ms(h.percentile(99)),
        p999: ms(h.percentile(99.9)),
        max: ms(h.max),
        count: h.count,
      };
}

function report(reason: 'signal' | 'exit' | 'gc'): void {
  // SIGHUP: the memory a full collection leaves (the bench starts this with --expose-gc), to tell
  // what the process holds from garbage V8 has not collected yet. Never during a measured phase.
  if (reason === 'gc') (globalThis as { gc?: () => void }).gc?.();
  const now = performance.now();
  const cpu = process.cpuUsage(cpuSince);
  const memory = process.memoryUsage();
  wholeRunMaxMs = Math.max(wholeRunMaxMs, delay.count === 0 ? 0 : ms(delay.max));
  const line = {
    probe: 'scale-bench',
    seq: ++seq,
    reason,
    since_ms: Math.round(now - since),
    resolution_ms: RESOLUTION_MS,
    eld_ms: summary(delay),
    whole_run_max_ms: wholeRunMaxMs,
    // CPU this process used since the previous line: how much of the 2 cores the server took.
    cpu_ms: { user: Math.round(cpu.user / 1000), system: Math.round(cpu.system / 1000) },
    rss_bytes: memory.rss,
    heap_used_bytes: memory.heapUsed,
    // What V8 holds for its heap, used or not: with heap_used, how much of the RSS is V8's slack.
    heap_total_bytes: memory.heapTotal,
    external_bytes: memory.external,
    array_buffers_bytes: memory.arrayBuffers,
  };
  // Synchronous for a file (the bench sends stdout to one), so the line is whole when the bench reads.
  process.stdout.write(`${JSON.stringify(line)}\n`);
  delay.reset();
  since = now;
  cpuSince = process.cpuUsage();
}

// Before anything else: SIGUSR2's default action would end the process.
process.on('SIGUSR2', () => report('signal'));
process.on('SIGHUP', () => report('gc'));
const service = await createService(loadConfig());
await service.listen();

let stopping = false;
const stop = (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  report('exit');
  service.logger.info({ signal }, 'shutting down: finishing in-flight requests');
  service.close().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`serve-with-probe: shutdown failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.stderr.write(`serve-with-probe: listening on ${service.apiPort()}\n`);
