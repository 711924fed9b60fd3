import type { LoadResult } from './load.js';
import { median } from './settings.js';

/**
 * The report of `--against <ref>`: per configuration and target, the four servers measured in the
 * same rounds (the node:http ceiling, the Fastify floor, the reference release and today's
 * working tree), each figure the median over the rounds, and the ratios today/reference and
 * today/ceiling, each the median of the rounds' own ratios, with every round's ratio beside it so
 * that the noise shows.
 */

/** A server's rounds on one target, as the side-by-side run records them (run.ts `Row`). */
export interface RoundsOf {
  target: string;
  server: string;
  rounds?: LoadResult[];
}

/** The servers of a run, by their name in the run (run.ts) and in the report. */
const SERVERS = [
  ['baseline', 'ceiling'],
  ['fastify', 'floor'],
  ['reference', 'reference'],
  ['service', 'today'],
] as const;

export interface ServerFigures {
  /** Medians over the rounds. */
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Each round's req/s. */
  roundsReqPerSec: number[];
  /** CPU time of the server's processes per request, in µs (NaN where it was not measured). */
  cpuUsPerRequest: number;
}

export interface Ratio {
  /** The median of the rounds' own ratios. */
  median: number;
  rounds: number[];
}

export interface AgainstFigures {
  configuration: string;
  target: string;
  servers: Record<string, ServerFigures>;
  todayOverReference: Ratio;
  todayOverCeiling: Ratio;
  referenceOverCeiling: Ratio;
  floorOverCeiling: Ratio;
  /**
   * Today's CPU per request over the reference's, round by round: below 1 means today spends less
   * per answer. Steadier than req/s on a shared machine, where a round's throughput moves with
   * whatever else runs, while the work an answer takes does not.
   */
  cpuTodayOverReference: Ratio;
}

/** The figures of one configuration's rows, per target. */
export function againstFigures(configuration: string, targets: readonly string[], rows: readonly RoundsOf[]): AgainstFigures[] {
  return targets.map((target) => {
    const roundsOf = (server: string): LoadResult[] => {
      const rounds = rows.find((r) => r.target === target && r.server === server)?.rounds;
      if (rounds === undefined || rounds.length === 0) throw new Error(`--against: no rounds of ${server} on ${target}`);
      return rounds;
    };
    const ratio = (over: string, under: string, of: (r: LoadResult) => number = (r) => r.reqPerSec): Ratio => {
      const a = roundsOf(over);
      const b = roundsOf(under);
      const rounds = a.map((r, i) => of(r) / of(b[i]!));
      return { median: median(rounds), rounds };
    };
    const cpuOf = (r: LoadResult) => r.serverCpuUsPerRequest ?? NaN;
    const servers: Record<string, ServerFigures> = {};
    for (const [server, name] of SERVERS) {
      const rounds = roundsOf(server);
      servers[name] = {
        reqPerSec: median(rounds.map((r) => r.reqPerSec)),
        p50Ms: median(rounds.map((r) => r.p50Ms)),
        p99Ms: median(rounds.map((r) => r.p99Ms)),
        roundsReqPerSec: rounds.map((r) => r.reqPerSec),
        cpuUsPerRequest: median(rounds.map(cpuOf)),
      };
    }
    return {
      configuration,
      target,
      servers,
      todayOverReference: ratio('service', 'reference'),
      todayOverCeiling: ratio('service', 'baseline'),
      referenceOverCeiling: ratio('reference', 'baseline'),
      floorOverCeiling: ratio('fastify', 'baseline'),
      cpuTodayOverReference: ratio('service', 'reference', cpuOf),
    };
  });
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

/** The table: a line per configuration, target and server, then each target's rounds. */
export function againstTable(figures: readonly AgainstFigures[]): string[] {
  const table: string[][] = [['configuration', 'target', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU us/req', 'x ceiling', 'x reference', 'CPU x reference']];
  const roundLines: string[] = [];
  for (const f of figures) {
    const overCeiling: Record<string, Ratio | undefined> = { floor: f.floorOverCeiling, reference: f.referenceOverCeiling, today: f.todayOverCeiling };
    for (const [, name] of SERVERS) {
      const s = f.servers[name]!;
      const ceilingRatio = overCeiling[name];
      const today = name === 'today';
      table.push([f.configuration, f.target, name, fmt(s.reqPerSec, 0), fmt(s.p50Ms), fmt(s.p99Ms), fmt(s.cpuUsPerRequest, 1), ceilingRatio === undefined ? '' : fmt(ceilingRatio.median),
        today ? fmt(f.todayOverReference.median) : '', today ? fmt(f.cpuTodayOverReference.median) : '']);
    }
    const list = (r: Ratio) => r.rounds.map((x) => fmt(x)).join(' ');
    roundLines.push(`${f.configuration} ${f.target}: today/reference ${list(f.todayOverReference)}; CPU today/reference ${list(f.cpuTodayOverReference)}; `
      + `today/ceiling ${list(f.todayOverCeiling)}; reference/ceiling ${list(f.referenceOverCeiling)}`);
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row, i) => row.map((cell, c) => (c >= 3 && i > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd());
  return [...lines, '', 'Each round\'s ratios, in the order of the rounds:', ...roundLines.map((l) => `  ${l}`)];
}
