import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CapturedRouteJson } from './captured-routes.js';
import { benchDataset, seed, type BenchDataset } from './dataset.js';
import { runLoad as runAutocannonLoad, type LoadOptions, type LoadResult } from './load.js';
import { MODES, type PreparedMode } from './modes.js';
import { countLines, freePort, httpGet, serviceEnv, startChild, stopAll, type Child } from './processes.js';
import { combine, loadGeneratorEnv, median, numberEnv, spread } from './settings.js';
import { TARGETS, type Target } from './targets.js';
import { runWrkLoad } from './wrk.js';

/**
 * BENCH_MODE=production: the production configuration next to the embedded default, in one run.
 * Three services on the same data (one data set imported into each database), each a real
 * `listings-api serve` process with request logging on:
 *
 * - `sqlite`: the embedded default (SQLite, rate limits in process), the reference;
 * - `pg`: PostgreSQL + Redis, one process;
 * - `pg-workers`: PostgreSQL + Redis, `serve --workers BENCH_WORKERS` (default 2);
 *
 * and the bare node:http ceiling replaying the SQLite service's answers. Per target every server
 * is warmed up, then measured in BENCH_ROUNDS rounds that take them in turn, so each round gives
 * its own ratios; the report shows their medians. Informational only, like the rest of the bench.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const BASELINE = fileURLToPath(new URL('./baseline-server.js', import.meta.url));
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const API_HOST = 'api.localhost';
/** Issue 30's goals for the production configuration against the embedded default. */
const RATIO_GOAL = 0.8;
const P99_GOAL_MS = 20;

interface Server {
  name: string;
  child: Child;
  headers: Record<string, string>;
  logFile?: string;
}

interface Measured {
  target: string;
  server: string;
  rounds: LoadResult[];
  result: LoadResult;
}

const log = (text: string) => process.stdout.write(`${text}\n`);
const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

interface ProductionSettings {
  durationS: number;
  warmupS: number;
  rounds: number;
  connections: number;
  listings: number;
  detailIds: number;
  loadGenerator: 'autocannon' | 'wrk';
  /** BENCH_WORKERS: the worker processes of `pg-workers`. */
  workers: number;
}

function settings(): ProductionSettings {
  return {
    durationS: numberEnv('BENCH_DURATION', 5, 1),
    warmupS: numberEnv('BENCH_WARMUP', 2, 0),
    rounds: Math.floor(numberEnv('BENCH_ROUNDS', 3, 1)),
    connections: Math.floor(numberEnv('BENCH_CONNECTIONS', 50, 1)),
    listings: Math.floor(numberEnv('BENCH_LISTINGS', 10_000, 1)),
    detailIds: Math.floor(numberEnv('BENCH_DETAIL_IDS', 1000, 1)),
    loadGenerator: loadGeneratorEnv(),
    workers: Math.floor(numberEnv('BENCH_WORKERS', 2, 2)),
  };
}

export async function runProduction(): Promise<number> {
  const s = settings();
  const targetNames = (process.env.BENCH_TARGETS ?? 'detail,list20').split(',').map((t) => t.trim()).filter((t) => t !== '');
  const targets = targetNames.map((name) => TARGETS.find((t) => t.name === name) ?? fail(`BENCH_TARGETS: unknown target "${name}"`));
  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-production-'));
  const prepared: PreparedMode[] = [];
  try {
    log(`Benchmark: production configuration beside the embedded default; load from ${s.loadGenerator}, ${s.connections} connections; per target each server warmed up ${s.warmupS} s, then ${s.rounds} rounds of ${s.durationS} s taking the servers in turn`);
    log(`Machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at start.`);

    const data = benchDataset(s.listings);
    const detailIds = spread(data.ids, s.detailIds);
    const services = await startServices(s, workDir, data, prepared);
    const pathsOf = new Map(targets.map((t) => [t.name, t.paths(detailIds)]));
    const baseline = await startCeiling(s, workDir, targets, pathsOf, services);
    const servers: Server[] = [{ name: 'baseline', child: baseline, headers: services[0]!.headers }, ...services];
    const measured = await measureTargets(s, targets, pathsOf, servers);

    for (const server of servers) await server.child.stop();
    const report = reportOf(targets, measured, s.connections);
    for (const line of report.lines) log(line);
    await warnIfLoggingWasOff(services, measured);
    mkdirSync(RESULTS_DIR, { recursive: true });
    const resultsFile = join(RESULTS_DIR, 'production.json');
    writeFileSync(resultsFile, `${JSON.stringify({ finishedAt: new Date().toISOString(), settings: s, machine: { cpus: cpus().length, node: process.version, loadAverageAtEnd: loadavg() }, ratios: report.ratios, checks: report.checks, measured }, null, 2)}\n`);
    log(`Results: ${resultsFile}`);
    return 0;
  } finally {
    await stopAll();
    for (const mode of prepared) await mode.cleanup();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The three services, each on a fresh database of its own (added to `prepared` for the clean-up) seeded with `data`. */
async function startServices(s: ProductionSettings, workDir: string, data: BenchDataset, prepared: PreparedMode[]): Promise<Server[]> {
  const configurations = [
    { name: 'sqlite', describe: 'SQLite, rate limits in process', mode: MODES.sqlite!, serveArgs: ['serve'] },
    { name: 'pg', describe: 'PostgreSQL + Redis, one process', mode: MODES['postgres-redis']!, serveArgs: ['serve', '--workers', '1'] },
    { name: 'pg-workers', describe: `PostgreSQL + Redis, ${s.workers} worker processes`, mode: MODES['postgres-redis']!, serveArgs: ['serve', '--workers', String(s.workers)] },
  ];
  const services: Server[] = [];
  for (const configuration of configurations) {
    const mode = await configuration.mode.prepare({ workDir, env: process.env });
    prepared.push(mode);
    const t0 = Date.now();
    const { key } = await seed(mode.databaseUrl, data);
    const port = await freePort();
    const logFile = join(workDir, `${configuration.name}.log`);
    const child = await startChild({
      name: configuration.name,
      args: [BIN, ...configuration.serveArgs],
      cwd: ROOT,
      env: serviceEnv(port, mode.databaseUrl, mode.serviceEnv),
      port,
      stdoutFile: logFile,
      startTimeoutMs: 60_000,
    });
    services.push({ name: configuration.name, child, headers: { host: API_HOST, authorization: `Bearer ${key}` }, logFile });
    log(`  ${configuration.name}: ${configuration.describe}; \`${configuration.serveArgs.join(' ')}\`; ${s.listings} listings imported in ${Date.now() - t0} ms`);
  }
  return services;
}

/** Every service's answer to every path must be a 200 (and a full page); the ceiling replays the SQLite one's. */
async function startCeiling(
  s: ProductionSettings,
  workDir: string,
  targets: readonly Target[],
  pathsOf: Map<string, string[]>,
  services: readonly Server[],
): Promise<Child> {
  const routes: Record<string, CapturedRouteJson> = {};
  for (const target of targets) {
    for (const path of pathsOf.get(target.name)!) {
      for (const service of services) {
        const res = await httpGet(service.child.port, path, service.headers);
        const problem = res.status !== 200 ? `answered ${res.status}` : target.check?.(JSON.parse(res.body.toString('utf8')), s.listings);
        if (problem !== undefined) throw new Error(`${service.name}: GET ${path}: ${problem}`);
        if (service.name === 'sqlite') routes[path] = { status: res.status, contentType: res.contentType, rawHeaders: res.rawHeaders, body: res.body.toString('base64') };
      }
    }
  }
  const routesFile = join(workDir, 'baseline-routes.json');
  writeFileSync(routesFile, JSON.stringify(routes));
  const baselinePort = await freePort();
  return startChild({ name: 'baseline', args: [BASELINE, routesFile], cwd: ROOT, env: { PATH: process.env.PATH, PORT: String(baselinePort), HOST: '127.0.0.1' }, port: baselinePort, stdoutFile: '/dev/null' });
}

/** Per target: every server warmed up, then BENCH_ROUNDS rounds that take them in turn. */
async function measureTargets(
  s: ProductionSettings,
  targets: readonly Target[],
  pathsOf: Map<string, string[]>,
  servers: readonly Server[],
): Promise<Measured[]> {
  const runLoad: (options: LoadOptions) => Promise<LoadResult> = s.loadGenerator === 'wrk' ? runWrkLoad : runAutocannonLoad;
  const measured: Measured[] = [];
  for (const [t, target] of targets.entries()) {
    const loadOf = (server: Server, durationS: number) => ({
      port: server.child.port,
      connections: s.connections,
      headers: server.headers,
      paths: pathsOf.get(target.name)!,
      durationS,
    });
    for (const server of servers) if (s.warmupS > 0) checkAll200(`${target.name} ${server.name} (warm-up)`, await runLoad(loadOf(server, s.warmupS)));
    const rounds = new Map<string, LoadResult[]>(servers.map((server) => [server.name, []]));
    for (let round = 0; round < s.rounds; round++) {
      // Each round starts one server further along, so no server always follows the same one.
      for (let i = 0; i < servers.length; i++) {
        const server = servers[(i + round + t) % servers.length]!;
        const result = await runLoad(loadOf(server, s.durationS));
        checkAll200(`${target.name} ${server.name}`, result);
        rounds.get(server.name)!.push(result);
      }
    }
    for (const server of servers) {
      const parts = rounds.get(server.name)!;
      measured.push({ target: target.name, server: server.name, rounds: parts, result: combine(parts) });
      log(`  ${target.name.padEnd(8)} ${server.name.padEnd(10)} ${parts.map((p) => `${fmt(p.reqPerSec, 0)} req/s p99 ${fmt(p.p99Ms)} ms`).join(' | ')}`);
    }
  }
  return measured;
}

/** Request logging was on: each service's log has a line per measured request at least. */
async function warnIfLoggingWasOff(services: readonly Server[], measured: readonly Measured[]): Promise<void> {
  for (const service of services) {
    const lines = await countLines(service.logFile!);
    const requests = measured.filter((m) => m.server === service.name).reduce((n, m) => n + m.result.requests, 0);
    if (lines < requests) log(`WARNING: the ${service.name} log has ${lines} lines for ${requests} measured requests: was request logging on?`);
  }
}

/** A run with any answer but a 200 means nothing: stop it. */
function checkAll200(what: string, result: LoadResult): void {
  const other = Object.entries(result.statusCodes).filter(([code]) => code !== '200');
  if (result.requests === 0 || result.non2xx + result.errors + result.timeouts > 0 || other.length > 0) {
    throw new Error(`INVALID RUN: ${what}: ${result.requests} answers, ${result.non2xx} non-2xx [${other.map(([c, n]) => `${c}: ${n}`).join(', ')}], ${result.errors} errors, ${result.timeouts} timeouts`);
  }
}

/** The table: each server's req/s and latency, over the ceiling and over SQLite (medians of the rounds' own ratios). */
function reportOf(targets: Target[], measured: Measured[], connections: number) {
  const lines: string[] = [''];
  const ratios: Record<string, number> = {};
  const checks: { target: string; server: string; goal: string; value: number; pass: boolean }[] = [];
  const table = [['target', 'server', 'req/s', 'p50 ms', 'p99 ms', 'x ceiling', 'x sqlite', 'goals']];
  for (const target of targets) {
    const of = (server: string) => measured.find((m) => m.target === target.name && m.server === server)!;
    const over = (a: Measured, b: Measured) => median(a.rounds.map((r, i) => r.reqPerSec / b.rounds[i]!.reqPerSec));
    for (const row of ['baseline', 'sqlite', 'pg', 'pg-workers'].map(of)) {
      const overCeiling = row.server === 'baseline' ? NaN : over(row, of('baseline'));
      const overSqlite = row.server.startsWith('pg') ? over(row, of('sqlite')) : NaN;
      const p99 = median(row.rounds.map((r) => r.p99Ms));
      const marks: string[] = [];
      if (row.server.startsWith('pg')) {
        ratios[`${target.name}:${row.server}/sqlite`] = overSqlite;
        const ratioPass = overSqlite >= RATIO_GOAL;
        const p99Pass = p99 < P99_GOAL_MS;
        checks.push({ target: target.name, server: row.server, goal: `req/s >= ${RATIO_GOAL} x sqlite`, value: overSqlite, pass: ratioPass });
        checks.push({ target: target.name, server: row.server, goal: `p99 < ${P99_GOAL_MS} ms at ${connections} connections`, value: p99, pass: p99Pass });
        marks.push(`>= ${RATIO_GOAL} x sqlite: ${ratioPass ? 'PASS' : 'MISS'}`, `p99 < ${P99_GOAL_MS} ms: ${p99Pass ? 'PASS' : 'MISS'}`);
      }
      if (row.server !== 'baseline') ratios[`${target.name}:${row.server}/ceiling`] = overCeiling;
      table.push([target.name, row.server, fmt(row.result.reqPerSec, 0), fmt(median(row.rounds.map((r) => r.p50Ms))), fmt(p99), fmt(overCeiling), fmt(overSqlite), marks.join('; ')]);
    }
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  for (const row of table) lines.push(row.map((cell, c) => (c >= 2 && c <= 6 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd());
  lines.push('', 'Ratios are medians of the rounds\' own ratios; p50/p99 the medians of the rounds\'. Goals are issue 30\'s, informational only.');
  return { lines, ratios, checks };
}

function fail(message: string): never {
  throw new Error(message);
}
