import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Child } from './processes.js';

/** The probe line of a process run by serve-with-probe.ts, read by the scale and memory benchmarks. */
export interface Probe {
  seq: number;
  since_ms: number;
  eld_ms: { min?: number; mean?: number; p50?: number; p90?: number; p99?: number; p999?: number; max?: number; count: number };
  whole_run_max_ms: number;
  cpu_ms: { user: number; system: number };
  rss_bytes: number;
  heap_used_bytes: number;
  heap_total_bytes: number;
  external_bytes: number;
}

export interface Server {
  label: string;
  child: Child;
  logFile: string;
  seq: number;
  requests: number;
}

/**
 * Sends SIGUSR2 and returns the probe line it makes the server append to its stdout (its log);
 * with `afterGc`, SIGHUP: the same after a full garbage collection, for the live memory.
 */
export async function probe(server: Server, afterGc = false): Promise<Probe> {
  const want = ++server.seq;
  const from = statSync(server.logFile).size;
  server.child.process.kill(afterGc ? 'SIGHUP' : 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const size = statSync(server.logFile).size;
    if (size <= from) continue;
    const fd = openSync(server.logFile, 'r');
    const buf = Buffer.alloc(size - from);
    try {
      readSync(fd, buf, 0, buf.length, from);
    } finally {
      closeSync(fd);
    }
    for (const line of buf.toString('utf8').split('\n')) {
      if (!line.startsWith('{"probe":"scale-bench"')) continue;
      const parsed = JSON.parse(line) as Probe;
      if (parsed.seq === want) return parsed;
    }
  }
  throw new Error(`${server.label}: no probe line ${want} within 10 s of SIGUSR2`);
}

