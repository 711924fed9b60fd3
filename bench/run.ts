import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchDataset, seed } from './dataset.js';
import { runLoad as runAutocannonLoad, type LoadOptions, type LoadResult } from './load.js';
import { runWrkLoad } from './wrk.js';
import { modeNamed, type PreparedMode } from './modes.js';
import type { CapturedRouteJson } from './captured-routes.js';
import { cleanUpOnExit, countLines, freePort, httpGet, killAllNow, serviceEnv, startChild, stopAll, type Child } from './processes.js';
import { combine, loadGeneratorEnv, median, numberEnv, spread } from './settings.js';
import { TARGETS, type Target } from './targets.js';

/**
 * `npm run bench`: the real service (a separate `serve` process, logging on) against a bare
 * node:http ceiling serving the same bytes, per target, alternately, in one run. See bench/README.md.
 * Informational only: never part of `npm test`, never gates CI. Exit 0 unless something crashed or
 * the run is invalid (a response that was not 200).
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const BASELINE = fileURLToPath(new URL('./baseline-server.js', import.meta.url));
const FASTIFY_FLOOR = fileURLToPath(new URL('./fastify-floor-server.js', import.meta.url));
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const API_HOST = 'api.localhost'; // the sg host with API_DOMAIN=localhost (D3)
const P99_GOAL_MS = 10;

interface Settings {
  mode: string;
  durationS: number;
  warmupS: number;
  connections: number;
  listings: number;
  detailIds: number;
  targets: string[];
  keep: boolean;
  /**
   * BENCH_COUNTING=compare (issue 12): a second service process with usage counting and metrics on,
   * measured next to one with both off (`USAGE_COUNTING=off`, no METRICS_PORT), in the same run.
   */
  compareCounting: boolean;
  /**
   * BENCH_ROUNDS: rounds of BENCH_DURATION seconds each per server and target, the servers taken in
   * turn (the ceiling, the floor and the service; with BENCH_COUNTING=compare, the two services).
   */
  rounds: number;
  /**
   * BENCH_LOAD: the load generator of the side-by-side runs: wrk (wrk.ts) when it is installed,
   * else autocannon; or either one by name.
   */
  loadGenerator: 'autocannon' | 'wrk';
  /**
   * BENCH_CEILING: what the ceiling and the floor replay of each captured answer: `response`, all of
   * it (its header fields too); `body`, the body with Content-Type and Content-Length only, as the
   * bench did until 2026-11-25 (for comparisons with older figures).
   */
  ceiling: 'response' | 'body';
}

function settings(): Settings {
  const targets = (process.env.BENCH_TARGETS ?? TARGETS.map((t) => t.name).join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const t of targets) {
    if (!TARGETS.some((x) => x.name === t)) throw new Error(`BENCH_TARGETS: unknown target "${t}" (available: ${TARGETS.map((x) => x.name).join(', ')})`);
  }
  const compareCounting = process.env.BENCH_COUNTING?.trim() === 'compare';
  return {
    mode: process.env.BENCH_MODE?.trim() || 'sqlite',
    // Side by side: three rounds of 5 s per server (15 s each, in turn); compare: five of 10 s.
    durationS: numberEnv('BENCH_DURATION', compareCounting ? 10 : 5, 1),
    warmupS: numberEnv('BENCH_WARMUP', 2, 0),
    connections: Math.floor(numberEnv('BENCH_CONNECTIONS', 50, 1)),
    listings: Math.floor(numberEnv('BENCH_LISTINGS', 10_000, 1)),
    detailIds: Math.floor(numberEnv('BENCH_DETAIL_IDS', 1000, 1)),
    targets,
    keep: process.env.BENCH_KEEP === '1',
    compareCounting,
    rounds: Math.floor(numberEnv('BENCH_ROUNDS', compareCounting ? 5 : 3, 1)),
    loadGenerator: loadGeneratorEnv(),
    ceiling: ceilingEnv(),
  };
}

function ceilingEnv(): Settings['ceiling'] {
  const value = process.env.BENCH_CEILING?.trim() || 'response';
  if (value !== 'response' && value !== 'body') throw new Error(`BENCH_CEILING: expected response or body, got "${value}"`);
  return value;
}

interface Row {
  target: string;
  server: 'baseline' | 'fastify' | 'service' | 'counted';
  warmup: LoadResult | undefined;
  result: LoadResult;
  /** BENCH_COUNTING=compare: the rounds `result` sums. */
  rounds?: LoadResult[];
}

interface Check {
  target: string;
  goal: string;
  value: number;
  pass: boolean;
}

const log = (text: string) => process.stdout.write(`${text}\n`);
const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

/** What the phases of one side-by-side run share. */
interface SideBySide {
  s: Settings;
  workDir: string;
  /** The headers of every request: the API host and the key. */
  headers: Record<string, string>;
  /** The load generator of BENCH_LOAD. */
  runLoad: (options: LoadOptions) => Promise<LoadResult>;
}

async function main(): Promise<number> {
  const s = settings();
  const mode = modeNamed(s.mode);
  const targets = TARGETS.filter((t) => s.targets.includes(t.name));
  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-'));
  let prepared: PreparedMode | undefined;

  // Children die with us, whatever happens; the temp data goes too (unless BENCH_KEEP=1).
  const removeWorkDir = () => {
    if (!s.keep) rmSync(workDir, { recursive: true, force: true });
  };
  cleanUpOnExit(removeWorkDir);

  try {
    log(`Benchmark: mode ${s.mode} (${mode.description}); load from ${s.loadGenerator}, ${s.connections} connections; per target, each server warmed up for ${s.warmupS} s, then ${s.rounds} rounds of ${s.durationS} s that take the servers in turn`);
    log(`Machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at start; server and load generator share it, so compare ratios, not absolute numbers.`);
    prepared = await mode.prepare({ workDir, env: process.env });

    const t0 = Date.now();
    const data = await seed(prepared.databaseUrl, benchDataset(s.listings));
    const detailIds = spread(data.listingIds, s.detailIds);
    log(`Data: ${s.listings} listings of one organisation (sg), imported in ${Date.now() - t0} ms; detail rotates over ${detailIds.length} ids.`);

    const run: SideBySide = {
      s,
      workDir,
      headers: { host: API_HOST, authorization: `Bearer ${data.key}` },
      runLoad: s.loadGenerator === 'wrk' ? runWrkLoad : runAutocannonLoad,
    };
    const services = await startServices(run, prepared);
    const captured = await captureResponses(run, targets, detailIds, services.service);
    const baseline = await startReplay(run, captured.routesFile, 'baseline', BASELINE);
    // The framework's floor: the same bytes from a Fastify app with nothing of the service in it.
    const floor = await startReplay(run, captured.routesFile, 'fastify', FASTIFY_FLOOR);
    const rows = await measureTargets(run, targets, captured.pathsOf, services, baseline, floor);

    const logs = await stopAndCountLogs(services, [baseline, floor], rows);
    const problems = invalidResponses(rows);
    const warnings = await loggingAndMetricsWarnings(logs);
    const goals = goalsOf(s, targets, rows);
    printSummary(goals.table, logs, warnings, problems);
    writeResults({ s, problems, warnings, detailIds, bodyBytes: captured.bodyBytes, logs, goals, rows });
    return problems.length === 0 ? 0 : 1;
  } finally {
    await stopAll();
    await prepared?.cleanup();
    removeWorkDir();
    if (s.keep) log(`Kept the temp data (BENCH_KEEP=1): ${workDir}`);
  }
}

interface StartedService {
  child: Child;
  logFile: string;
}

interface Services {
  service: Child;
  serviceLog: string;
  /** BENCH_COUNTING=compare: the second service, usage counting and metrics on, and its metrics port. */
  counted?: StartedService & { metricsPort: number };
}

async function startService({ workDir }: SideBySide, prepared: PreparedMode, name: 'service' | 'counted', extraEnv: Record<string, string>): Promise<StartedService> {
  const port = await freePort();
  const logFile = join(workDir, `${name}.log`);
  const child: Child = await startChild({
    name,
    args: [BIN, ...(prepared.serveArgs ?? ['serve'])],
    cwd: ROOT,
    env: serviceEnv(port, prepared.databaseUrl, { ...prepared.serviceEnv, ...extraEnv }),
    port,
    stdoutFile: logFile,
  });
  return { child, logFile };
}

/** The service under test; with BENCH_COUNTING=compare, `service` has usage counting and metrics off, `counted` has both on. */
async function startServices(run: SideBySide, prepared: PreparedMode): Promise<Services> {
  const compare = run.s.compareCounting;
  const metricsPort = compare ? await freePort() : undefined;
  const { child: service, logFile: serviceLog } = await startService(run, prepared, 'service', compare ? { USAGE_COUNTING: 'off', METRICS_PORT: 'off' } : {});
  if (metricsPort === undefined) return { service, serviceLog };
  const counted = await startService(run, prepared, 'counted', { USAGE_COUNTING: 'on', METRICS_PORT: String(metricsPort) });
  log(`Comparing usage counting and metrics: "service" runs with USAGE_COUNTING=off and no METRICS_PORT, "counted" with USAGE_COUNTING=on and METRICS_PORT=${metricsPort}.`);
  return { service, serviceLog, counted: { ...counted, metricsPort } };
}

interface CapturedResponses {
  /** The captures, for the baseline and the floor. */
  routesFile: string;
  /** Each target's mean body size. */
  bodyBytes: Record<string, number>;
  /** Each target's paths. */
  pathsOf: Map<string, string[]>;
}

/**
 * Captures the real response of every benchmarked path once; the baseline serves these bytes,
 * header fields included (captured-routes.ts).
 */
async function captureResponses(
  { s, workDir, headers }: SideBySide,
  targets: readonly Target[],
  detailIds: string[],
  service: Child,
): Promise<CapturedResponses> {
  const t0 = Date.now();
  const routes: Record<string, CapturedRouteJson> = {};
  const bodyBytes: Record<string, number> = {};
  const pathsOf = new Map<string, string[]>();
  for (const target of targets) {
    const paths = target.paths(detailIds);
    pathsOf.set(target.name, paths);
    let total = 0;
    for (const path of paths) {
      const res = await httpGet(service.port, path, headers);
      if (res.status !== 200) throw new Error(`${target.name}: GET ${path} answered ${res.status}, not 200: ${res.body.toString('utf8').slice(0, 300)}`);
      const problem = target.check?.(JSON.parse(res.body.toString('utf8')), s.listings);
      if (problem !== undefined) throw new Error(`${target.name}: GET ${path}: ${problem}`);
      routes[path] = { status: res.status, contentType: res.contentType, rawHeaders: res.rawHeaders, body: res.body.toString('base64') };
      total += res.body.length;
    }
    bodyBytes[target.name] = Math.round(total / paths.length);
  }
  const routesFile = join(workDir, 'baseline-routes.json');
  writeFileSync(routesFile, JSON.stringify(routes));
  log(`Captured ${Object.keys(routes).length} real responses in ${Date.now() - t0} ms; body sizes: ${targets.map((t) => `${t.name} ${bodyBytes[t.name]} B`).join(', ')}.`);
  log(s.ceiling === 'response'
    ? 'The ceiling and the floor replay each answer whole: its status, header fields (request id, rate-limit headers, ETag and the rest) and body.'
    : 'BENCH_CEILING=body: the ceiling and the floor replay each body with its Content-Type and Content-Length only, as the bench did until 2026-11-25.');
  return { routesFile, bodyBytes, pathsOf };
}

/** A server of the captured bytes (the ceiling, or the framework's floor) in its own process. */
async function startReplay({ s }: SideBySide, routesFile: string, name: string, script: string): Promise<Child> {
  const port = await freePort();
  return startChild({ name, args: [script, routesFile], cwd: ROOT, env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', BENCH_CEILING: s.ceiling }, port, stdoutFile: '/dev/null' });
}

type MeasuredServer = readonly [Row['server'], Child];

/**
 * Per target, each server is warmed up, then measured in BENCH_ROUNDS rounds that take the
 * servers in turn, so that what else the machine does meanwhile weighs on all of them alike and
 * each round gives a ratio of its own (the table shows their median). Side by side: the
 * baseline, the Fastify floor and the service, each round starting one further along.
 * BENCH_COUNTING=compare: the baseline measured once, then the two services in rounds, alternating
 * which goes first.
 */
async function measureTargets(
  run: SideBySide,
  targets: readonly Target[],
  pathsOf: Map<string, string[]>,
  services: Services,
  baseline: Child,
  floor: Child,
): Promise<Row[]> {
  const { s } = run;
  const rows: Row[] = [];
  const firstOrder = Math.random() < 0.5 ? 0 : 1;
  for (const [t, target] of targets.entries()) {
    const paths = pathsOf.get(target.name)!;
    if (services.counted !== undefined) {
      const base = { port: baseline.port, connections: s.connections, headers: run.headers, paths };
      const baseWarmup = s.warmupS > 0 ? await run.runLoad({ ...base, durationS: s.warmupS }) : undefined;
      const baseResult = await run.runLoad({ ...base, durationS: s.durationS });
      rows.push({ target: target.name, server: 'baseline', warmup: baseWarmup, result: baseResult });
      log(`  ${target.name.padEnd(8)} baseline ${fmt(baseResult.reqPerSec, 0).padStart(7)} req/s  p50 ${fmt(baseResult.p50Ms)} ms  p99 ${fmt(baseResult.p99Ms)} ms`);
      const pair: MeasuredServer[] = [['service', services.service], ['counted', services.counted.child]];
      rows.push(...(await measureInRounds(run, target.name, paths, pair, (round) => ((round + t + firstOrder) % 2 === 0 ? pair : [...pair].reverse()))));
      continue;
    }
    const trio: MeasuredServer[] = [['baseline', baseline], ['fastify', floor], ['service', services.service]];
    rows.push(...(await measureInRounds(run, target.name, paths, trio, (round) => trio.map((_, i) => trio[(i + round + t) % trio.length]!))));
  }
  return rows;
}

/** One target on `servers`: a warm-up each, then BENCH_ROUNDS rounds in the order `orderOf` gives; a row per server. */
async function measureInRounds(
  { s, headers, runLoad }: SideBySide,
  target: string,
  paths: string[],
  servers: readonly MeasuredServer[],
  orderOf: (round: number) => readonly MeasuredServer[],
): Promise<Row[]> {
  const loadOf = (child: Child) => ({ port: child.port, connections: s.connections, headers, paths });
  const warmups = new Map<string, LoadResult | undefined>();
  for (const [name, child] of servers) warmups.set(name, s.warmupS > 0 ? await runLoad({ ...loadOf(child), durationS: s.warmupS }) : undefined);
  const parts = new Map<string, LoadResult[]>(servers.map(([name]) => [name, []]));
  for (let round = 0; round < s.rounds; round++) {
    for (const [name, child] of orderOf(round)) parts.get(name)!.push(await runLoad({ ...loadOf(child), durationS: s.durationS }));
  }
  const rows: Row[] = [];
  for (const [name] of servers) {
    const rounds = parts.get(name)!;
    const result = combine(rounds);
    rows.push({ target, server: name, warmup: warmups.get(name), result, rounds });
    const faults = result.non2xx + result.errors + result.timeouts > 0 ? `  (${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts)` : '';
    log(`  ${target.padEnd(8)} ${name.padEnd(8)} ${fmt(result.reqPerSec, 0).padStart(7)} req/s  p50 ${fmt(result.p50Ms)} ms  p99 ${fmt(result.p99Ms)} ms (${s.rounds} rounds of ${s.durationS} s: ${rounds.map((p) => fmt(p.reqPerSec, 0)).join(', ')} req/s)${faults}`);
  }
  return rows;
}

interface LogCounts {
  logLines: number;
  serviceRequests: number;
  /** BENCH_COUNTING=compare only. */
  counted?: { logLines: number; requests: number; scrape: string };
}

/** Stops the service first so its log is complete, then counts its lines against its requests. */
async function stopAndCountLogs(services: Services, replays: readonly Child[], rows: readonly Row[]): Promise<LogCounts> {
  const { counted } = services;
  const requestsOf = (server: Row['server']) => rows.filter((r) => r.server === server).reduce((n, r) => n + r.result.requests + (r.warmup?.requests ?? 0), 0);
  let scrape: string | undefined;
  if (counted !== undefined) scrape = (await httpGet(counted.metricsPort, '/metrics', { host: '127.0.0.1' })).body.toString('utf8');
  await services.service.stop();
  await counted?.child.stop();
  for (const replay of replays) await replay.stop();
  const logLines = await countLines(services.serviceLog);
  const serviceRequests = requestsOf('service');
  if (counted === undefined) return { logLines, serviceRequests };
  return { logLines, serviceRequests, counted: { logLines: await countLines(counted.logFile), requests: requestsOf('counted'), scrape: scrape! } };
}

/** Validity: every response, warm-ups included, must have been a 200. */
function invalidResponses(rows: readonly Row[]): string[] {
  const problems: string[] = [];
  for (const r of rows) {
    for (const [phase, res] of [['warm-up', r.warmup], ['measured', r.result]] as const) {
      if (res === undefined) continue;
      const other = Object.entries(res.statusCodes).filter(([code]) => code !== '200');
      if (res.non2xx > 0 || res.errors > 0 || res.timeouts > 0 || other.length > 0) {
        problems.push(`${r.target} ${r.server} (${phase}): ${res.non2xx} non-2xx [${other.map(([c, n]) => `${c}: ${n}`).join(', ')}], ${res.errors} errors, ${res.timeouts} timeouts`);
      }
      if (res.requests === 0) problems.push(`${r.target} ${r.server} (${phase}): no responses`);
    }
  }
  return problems;
}

/** Request logging was on (a log line per request at least); with BENCH_COUNTING=compare, the metrics counted. */
async function loggingAndMetricsWarnings({ logLines, serviceRequests, counted }: LogCounts): Promise<string[]> {
  const warnings: string[] = [];
  if (logLines < serviceRequests) warnings.push(`the service log has ${logLines} lines for ${serviceRequests} requests: was request logging on?`);
  if (counted === undefined) return warnings;
  if (counted.logLines < counted.requests) warnings.push(`the counted service log has ${counted.logLines} lines for ${counted.requests} requests: was request logging on?`);
  // The counted service really counted: its metrics saw every measured request (and the captures, and health checks).
  const { default: parse } = await import('parse-prometheus-text-format');
  const family = parse(counted.scrape).find((f) => f.name === 'listings_http_requests_total');
  const scraped = (family?.metrics ?? []).reduce((n, m) => n + Number(m.value ?? 0), 0);
  if (scraped < counted.requests) warnings.push(`the counted service's metrics show ${scraped} requests for ${counted.requests}: were metrics on?`);
  else log(`The counted service's metrics show ${scraped} answers for ${counted.requests} benchmark requests (plus captures and health checks).`);
  return warnings;
}

interface Goals {
  checks: Check[];
  ratios: Record<string, number>;
  /** The printed table, its header first. */
  table: string[][];
}

/** Ratios and the issue's goals (informational), and the table that shows them. */
function goalsOf(s: Settings, targets: readonly Target[], rows: readonly Row[]): Goals {
  const checks: Check[] = [];
  const ratios: Record<string, number> = {};
  const table: string[][] = [['target', 'server', 'req/s', 'p50 ms', 'p99 ms', 'x baseline', 'goals']];
  for (const target of targets) {
    const rowOf = (server: Row['server']) => rows.find((r) => r.target === target.name && r.server === server);
    const baseRow = rowOf('baseline')!;
    const base = baseRow.result;
    const svc = rowOf('service')!.result;
    /** `server` over the ceiling: the median of the rounds' own ratios when the two were measured in the same rounds. */
    const overBaseline = (row: Row): number =>
      row.rounds !== undefined && baseRow.rounds !== undefined && row.rounds.length === baseRow.rounds.length
        ? median(row.rounds.map((part, i) => part.reqPerSec / baseRow.rounds![i]!.reqPerSec))
        : row.result.reqPerSec / base.reqPerSec;
    const ratio = overBaseline(rowOf('service')!);
    ratios[target.name] = ratio;
    const marks: string[] = [];
    if (target.ratioGoal !== undefined) {
      const pass = ratio >= target.ratioGoal;
      checks.push({ target: target.name, goal: `req/s >= ${target.ratioGoal} x baseline`, value: ratio, pass });
      marks.push(`ratio >= ${target.ratioGoal}: ${pass ? 'PASS' : 'MISS'}`);
    }
    const p99Pass = svc.p99Ms < P99_GOAL_MS;
    checks.push({ target: target.name, goal: `p99 < ${P99_GOAL_MS} ms at ${s.connections} connections`, value: svc.p99Ms, pass: p99Pass });
    marks.push(`p99 < ${P99_GOAL_MS} ms: ${p99Pass ? 'PASS' : 'MISS'}`);
    table.push([target.name, 'baseline', fmt(base.reqPerSec, 0), fmt(base.p50Ms), fmt(base.p99Ms), '', '']);
    const frameworkRow = rowOf('fastify');
    if (frameworkRow !== undefined) {
      const framework = frameworkRow.result;
      const frameworkRatio = overBaseline(frameworkRow);
      ratios[`${target.name}:fastify`] = frameworkRatio;
      ratios[`${target.name}:service/fastify`] = ratio / frameworkRatio;
      table.push([target.name, 'fastify', fmt(framework.reqPerSec, 0), fmt(framework.p50Ms), fmt(framework.p99Ms), fmt(frameworkRatio), 'the framework alone']);
      marks.push(`service/fastify ${fmt(ratio / frameworkRatio)}`);
    }
    table.push([target.name, 'service', fmt(svc.reqPerSec, 0), fmt(svc.p50Ms), fmt(svc.p99Ms), fmt(ratio), marks.join('; ')]);
    const on = rowOf('counted')?.result;
    if (on !== undefined) {
      ratios[`${target.name}:counted`] = on.reqPerSec / base.reqPerSec;
      ratios[`${target.name}:counted/service`] = on.reqPerSec / svc.reqPerSec;
      table.push([target.name, 'counted', fmt(on.reqPerSec, 0), fmt(on.p50Ms), fmt(on.p99Ms), fmt(on.reqPerSec / base.reqPerSec), `counting+metrics on / off: ${fmt(on.reqPerSec / svc.reqPerSec, 3)}`]);
    }
  }
  return { checks, ratios, table };
}

/** The table, the logging check and the run's validity. */
function printSummary(table: string[][], logs: LogCounts, warnings: readonly string[], problems: readonly string[]): void {
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const numeric = new Set([2, 3, 4, 5]);
  log('');
  for (const [i, row] of table.entries()) {
    log(row.map((cell, c) => (numeric.has(c) && i > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd());
  }
  log('');
  log(`Goals are the issue's, informational only (never a CI gate). Service log: ${logs.logLines} lines for ${logs.serviceRequests} requests (logging on).`);
  for (const w of warnings) log(`WARNING: ${w}`);
  if (problems.length > 0) {
    log('INVALID RUN: not every benchmark response was a 200, so these numbers mean nothing:');
    for (const p of problems) log(`  - ${p}`);
  } else {
    log('Valid run: every response (warm-ups included) was a 200.');
  }
}

/** bench/results/latest.json: everything of the run, per-run details included. */
function writeResults(outcome: {
  s: Settings;
  problems: string[];
  warnings: string[];
  detailIds: string[];
  bodyBytes: Record<string, number>;
  logs: LogCounts;
  goals: Goals;
  rows: Row[];
}): void {
  const { s, problems, logs } = outcome;
  mkdirSync(RESULTS_DIR, { recursive: true });
  const resultsFile = join(RESULTS_DIR, 'latest.json');
  writeFileSync(
    resultsFile,
    `${JSON.stringify(
      {
        finishedAt: new Date().toISOString(),
        valid: problems.length === 0,
        problems,
        warnings: outcome.warnings,
        settings: s,
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model.trim(), node: process.version, platform: process.platform, loadAverageAtEnd: loadavg() },
        dataset: { listings: s.listings, detailIds: outcome.detailIds.length, bodyBytes: outcome.bodyBytes },
        serviceLogLines: logs.logLines,
        countedLogLines: logs.counted?.logLines,
        ratios: outcome.goals.ratios,
        checks: outcome.goals.checks,
        rows: outcome.rows,
      },
      null,
      2,
    )}\n`,
  );
  log(`Results: ${resultsFile}`);
}

// `BENCH_MODE=scale` (or `npm run bench -- scale`), `production`, `memory` and `webhooks` are runs of
// their own (bench/scale.ts, bench/production.ts, bench/memory.ts, bench/webhooks.ts); every other mode is the side-by-side run above.
const argument = process.argv[2];
if (argument !== undefined && argument !== 'scale') {
  process.stderr.write(`benchmark: unknown argument "${argument}" (the one argument accepted is "scale"; see bench/README.md)\n`);
  process.exit(2);
}
const benchMode = argument ?? process.env.BENCH_MODE?.trim();
const run = benchMode === 'scale' ? import('./scale.js').then((m) => m.runScale())
  : benchMode === 'production' ? import('./production.js').then((m) => m.runProduction())
  : benchMode === 'memory' ? import('./memory.js').then((m) => m.runMemory())
  : benchMode === 'webhooks' ? import('./webhooks.js').then((m) => m.runWebhooks())
  : main();
run.then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    killAllNow();
    process.exit(1);
  },
);
