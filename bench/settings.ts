import type { LoadResult } from './load.js';
import { wrkInstalled } from './wrk.js';

/** What both benchmarks (run.ts, scale.ts) read from the environment and how they summarise runs. */

/** A numeric BENCH_* setting, or its fallback when unset; a bad value stops the bench with its name. */
export function numberEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got "${raw}"`);
  return n;
}

/** The median of the finite values (NaN when there are none): figures are reported as medians of runs, never the best. */
export function median(values: readonly number[]): number {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `count` items spread evenly over `items` (import order is random with respect to the D9 order). */
export function spread<T>(items: readonly T[], count: number): T[] {
  const n = Math.min(count, items.length);
  return Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);
}

/** Rounds as one result: requests and time summed (so req/s is over all of them), latency percentiles the rounds' medians. */
export function combine(parts: LoadResult[]): LoadResult {
  const requests = parts.reduce((n, p) => n + p.requests, 0);
  const durationS = parts.reduce((n, p) => n + p.durationS, 0);
  const statusCodes: Record<string, number> = {};
  for (const p of parts) for (const [code, n] of Object.entries(p.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    durationS,
    requests,
    reqPerSec: requests / durationS,
    p50Ms: median(parts.map((p) => p.p50Ms)),
    p99Ms: median(parts.map((p) => p.p99Ms)),
    p999Ms: median(parts.map((p) => p.p999Ms)),
    maxMs: Math.max(...parts.map((p) => p.maxMs)),
    non2xx: parts.reduce((n, p) => n + p.non2xx, 0),
    errors: parts.reduce((n, p) => n + p.errors, 0),
    timeouts: parts.reduce((n, p) => n + p.timeouts, 0),
    statusCodes,
    bytesPerResponse: median(parts.map((p) => p.bytesPerResponse)),
    autocannon: parts[0]!.autocannon,
  };
}


/** BENCH_LOAD: wrk when installed (auto), or either one by name. */
export function loadGeneratorEnv(): 'autocannon' | 'wrk' {
  const value = process.env.BENCH_LOAD?.trim() || 'auto';
  if (value === 'auto') return wrkInstalled() ? 'wrk' : 'autocannon';
  if (value !== 'autocannon' && value !== 'wrk') throw new Error(`BENCH_LOAD: expected auto, autocannon or wrk, got "${value}"`);
  if (value === 'wrk' && !wrkInstalled()) throw new Error('BENCH_LOAD=wrk: wrk is not installed (Debian: apt-get install wrk)');
  return value;
}

