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
