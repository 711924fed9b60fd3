import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { againstFigures, againstTable } from './against-report.js';
import { seedThroughCli, writeListingsFile } from './cli-seed.js';
import { benchDataset, seed, type BenchDataset } from './dataset.js';
import { runLoad as runAutocannonLoad, type LoadOptions, type LoadResult } from './load.js';
import { runWrkLoad } from './wrk.js';
import { modeNamed, type BenchMode, type PreparedMode } from './modes.js';
import type { CapturedRouteJson } from './captured-routes.js';
import { cpuPinning, type CpuPinning } from './pinning.js';
import { cleanUpOnExit, countLines, freePort, httpGet, killAllNow, serviceEnv, startChild, stopAll, withServerCpu, type Child } from './processes.js';
import { describeWorkingTree, prepareReference, removeReference, type Reference } from './reference.js';
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
  /** The configurations measured, one after the other: BENCH_MODE's; with --against and no BENCH_MODE, sqlite and postgres-redis. */
  modes: string[];
  /**
   * `--against <ref>` (issue 41): a release of this repository, built in a worktree of its own
   * (reference.ts), measured as one more server in the same rounds as the working tree.
   */
  against: string | undefined;
  /** With --against: the servers on one CPU and wrk on another when the machine allows (pinning.ts). */
  pinning: CpuPinning;
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

/** The configurations `--against` measures when BENCH_MODE does not name one of them. */
const AGAINST_MODES = ['sqlite', 'postgres-redis'];

function settings(against: string | undefined): Settings {
  const targets = (process.env.BENCH_TARGETS ?? TARGETS.map((t) => t.name).join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const t of targets) {
    if (!TARGETS.some((x) => x.name === t)) throw new Error(`BENCH_TARGETS: unknown target "${t}" (available: ${TARGETS.map((x) => x.name).join(', ')})`);
  }
  const compareCounting = process.env.BENCH_COUNTING?.trim() === 'compare';
  if (against !== undefined && compareCounting) throw new Error('--against and BENCH_COUNTING=compare are runs of their own: use one at a time');
  const modes = modesOf(process.env.BENCH_MODE?.trim() || undefined, against);
  const loadGenerator = loadGeneratorEnv();
  return {
    modes,
    against,
    pinning: against === undefined ? { description: 'not pinned (only with --against)' } : cpuPinning(loadGenerator),
    // Side by side: three rounds of 5 s per server (15 s each, in turn); compare: five of 10 s.
    durationS: numberEnv('BENCH_DURATION', compareCounting ? 10 : 5, 1),
    warmupS: numberEnv('BENCH_WARMUP', 2, 0),
    connections: Math.floor(numberEnv('BENCH_CONNECTIONS', 50, 1)),
    listings: Math.floor(numberEnv('BENCH_LISTINGS', 10_000, 1)),
    detailIds: Math.floor(numberEnv('BENCH_DETAIL_IDS', 1000, 1)),
    targets,
    keep: process.env.BENCH_KEEP === '1',
    compareCounting,
    // --against reports medians of at least five rounds (issue 41).
    rounds: Math.floor(numberEnv('BENCH_ROUNDS', compareCounting || against !== undefined ? 5 : 3, against === undefined ? 1 : 5)),
    loadGenerator,
    ceiling: ceilingEnv(),
  };
}

function modesOf(mode: string | undefined, against: string | undefined): string[] {
  if (against === undefined) return [mode ?? 'sqlite'];
  if (mode === undefined) return AGAINST_MODES;
  if (!AGAINST_MODES.includes(mode)) throw new Error(`--against measures BENCH_MODE ${AGAINST_MODES.join(' or ')} (both when BENCH_MODE is unset), not "${mode}"`);
  return [mode];
}

function ceilingEnv(): Settings['ceiling'] {
  const value = process.env.BENCH_CEILING?.trim() || 'response';
  if (value !== 'response' && value !== 'body') throw new Error(`BENCH_CEILING: expected response or body, got "${value}"`);
  return value;
}

interface Row {
  target: string;
  server: 'baseline' | 'fastify' | 'service' | 'counted' | 'reference';
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

async function main(against: string | undefined): Promise<number> {
  const s = settings(against);
  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-'));
  let reference: Reference | undefined;
  /** With --against: today's commit, and whether the working tree had changes, when the run started. */
  let today = '';

  // Children die with us, whatever happens; the temp data goes too (unless BENCH_KEEP=1).
  const removeWorkDir = () => {
    if (!s.keep) rmSync(workDir, { recursive: true, force: true });
  };
  cleanUpOnExit(removeWorkDir);

  try {
    log(`Benchmark: ${s.modes.map((m) => `mode ${m} (${modeNamed(m).description})`).join(', then ')}; load from ${s.loadGenerator}, ${s.connections} connections; per target, each server warmed up for ${s.warmupS} s, then ${s.rounds} rounds of ${s.durationS} s that take the servers in turn`);
    log(`Machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at start; server and load generator share it, so compare ratios, not absolute numbers.`);
    if (s.against !== undefined) {
      log(`CPU: ${s.pinning.description}.`);
      reference = await prepareReference(ROOT, s.against, log);
      today = await describeWorkingTree(ROOT);
      log(`Today: the working tree, ${today}. Reference: ${reference.ref} = ${reference.commit} (${reference.date}: ${reference.subject}).`);
    }
    const outcomes: ModeOutcome[] = [];
    for (const mode of s.modes) outcomes.push(await sideBySide(s, mode, workDir, reference));
    if (reference !== undefined) return reportAgainst(s, { reference, today }, outcomes);
    const outcome = outcomes[0]!;
    printSummary(outcome.goals.table, outcome);
    writeResults(s, outcome);
    return outcome.problems.length === 0 ? 0 : 1;
  } finally {
    await stopAll();
    removeWorkDir();
    if (s.keep) log(`Kept the temp data (BENCH_KEEP=1): ${workDir}`);
    if (reference !== undefined && process.env.BENCH_AGAINST_CACHE?.trim() === '0') {
      await removeReference(ROOT, reference.dir);
      log(`Removed the reference's worktree (BENCH_AGAINST_CACHE=0): ${reference.dir}`);
    }
  }
}

/** What one configuration's side-by-side run found. */
interface ModeOutcome {
  mode: string;
  problems: string[];
  warnings: string[];
  detailIds: string[];
  bodyBytes: Record<string, number>;
  /** With --against: the reference's mean body sizes (its listing object may differ from today's). */
  referenceBodyBytes?: Record<string, number>;
  logs: LogCounts;
  goals: Goals;
  rows: Row[];
}

/** One configuration (BENCH_MODE), side by side: data, services, captures, the replays, the rounds. */
async function sideBySide(s: Settings, modeName: string, baseDir: string, reference: Reference | undefined): Promise<ModeOutcome> {
  const mode = modeNamed(modeName);
  const targets = TARGETS.filter((t) => s.targets.includes(t.name));
  const workDir = join(baseDir, modeName);
  mkdirSync(workDir);
  const prepared: PreparedMode[] = [];
  try {
    if (s.modes.length > 1) log(`\nConfiguration ${modeName}: ${mode.description}`);
    prepared.push(await mode.prepare({ workDir, env: process.env }));
    const data = benchDataset(s.listings);
    const seeded = await seedDatabases({ s, mode, workDir, data, prepared, reference });
    const detailIds = spread(data.ids, s.detailIds);
    log(`Detail rotates over ${detailIds.length} ids.`);

    const runLoad = s.loadGenerator === 'wrk' ? runWrkLoad : runAutocannonLoad;
    const run: SideBySide = {
      s,
      workDir,
      headers: { host: API_HOST, authorization: `Bearer ${seeded.key}` },
      runLoad: (options) => runLoad({ ...options, cpu: s.pinning.loadCpu }),
    };
    const services = await startServices(run, prepared[0]!, seeded.reference);
    const captured = await captureResponses(run, targets, detailIds, services.service);
    const referenceBodyBytes = services.reference === undefined ? undefined : await checkReference(run, targets, captured.pathsOf, services.reference);
    const baseline = await startReplay(run, captured.routesFile, 'baseline', BASELINE);
    // The framework's floor: the same bytes from a Fastify app with nothing of the service in it.
    const floor = await startReplay(run, captured.routesFile, 'fastify', FASTIFY_FLOOR);
    const rows = await measureTargets(run, targets, captured.pathsOf, services, baseline, floor);

    const logs = await stopAndCountLogs(services, [baseline, floor], rows);
    const problems = invalidResponses(rows);
    const warnings = await loggingAndMetricsWarnings(logs);
    const goals = goalsOf(s, targets, rows);
    return { mode: modeName, problems, warnings, detailIds, bodyBytes: captured.bodyBytes, referenceBodyBytes, logs, goals, rows };
  } finally {
    await stopAll();
    for (const p of prepared) await p.cleanup();
  }
}

/** The reference's deployment in one configuration: its database, seeded by its own CLI, and its key. */
interface ReferenceDeployment {
  release: Reference;
  prepared: PreparedMode;
  key: string;
}

/**
 * The data set in today's database, and with --against in the reference's too (a database of its
 * own, of the same mode). Without --against it is written in process (dataset.ts `seed`); with it,
 * each release writes its own through its own CLI (cli-seed.ts), so each schema is the one its
 * code migrates, and the two databases are made the same way.
 */
async function seedDatabases(options: {
  s: Settings;
  mode: BenchMode;
  workDir: string;
  data: BenchDataset;
  prepared: PreparedMode[];
  reference: Reference | undefined;
}): Promise<{ key: string; reference?: ReferenceDeployment }> {
  const { s, mode, workDir, data, prepared, reference } = options;
  const today = prepared[0]!;
  const t0 = Date.now();
  if (reference === undefined) {
    const { key } = await seed(today.databaseUrl, data);
    log(`Data: ${s.listings} listings of one organisation (sg), imported in ${Date.now() - t0} ms.`);
    return { key };
  }
  const listingsFile = join(workDir, 'listings.ndjson');
  writeListingsFile(listingsFile, data);
  const { key } = await seedThroughCli({ bin: BIN, cwd: ROOT, databaseUrl: today.databaseUrl, listingsFile, data });
  const t1 = Date.now();
  const referenceDir = join(workDir, 'reference');
  mkdirSync(referenceDir);
  const referencePrepared = await mode.prepare({ workDir: referenceDir, env: process.env });
  prepared.push(referencePrepared);
  const { databaseUrl } = referencePrepared;
  const { key: referenceKey } = await seedThroughCli({ bin: reference.bin, cwd: reference.dir, databaseUrl, listingsFile, data });
  log(`Data: ${s.listings} listings of one organisation (sg), the same lines written by each release's own CLI (migrate, account create, key create, `
    + `key set-limit, import) into a database of its own: today's in ${t1 - t0} ms, the reference's in ${Date.now() - t1} ms.`);
  return { key, reference: { release: reference, prepared: referencePrepared, key: referenceKey } };
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
  /** With --against: the reference release, on its own database, and the headers with its own key. */
  reference?: StartedService & { headers: Record<string, string> };
}

/** Where a service's code is: today's working tree, or the reference's worktree. */
interface Release {
  bin: string;
  cwd: string;
}

const TODAY: Release = { bin: BIN, cwd: ROOT };

async function startService(
  { s, workDir }: SideBySide,
  prepared: PreparedMode,
  name: 'service' | 'counted' | 'reference',
  extraEnv: Record<string, string>,
  release = TODAY,
): Promise<StartedService> {
  const port = await freePort();
  const logFile = join(workDir, `${name}.log`);
  const child: Child = await startChild({
    name,
    args: [release.bin, ...(prepared.serveArgs ?? ['serve'])],
    cwd: release.cwd,
    env: serviceEnv(port, prepared.databaseUrl, { ...prepared.serviceEnv, ...extraEnv }),
    port,
    stdoutFile: logFile,
    cpu: s.pinning.serverCpu,
  });
  return { child, logFile };
}

/**
 * The service under test; with BENCH_COUNTING=compare, `service` has usage counting and metrics
 * off, `counted` has both on; with --against, the reference beside it, in the same configuration.
 */
async function startServices(run: SideBySide, prepared: PreparedMode, reference?: ReferenceDeployment): Promise<Services> {
  const compare = run.s.compareCounting;
  const metricsPort = compare ? await freePort() : undefined;
  const { child: service, logFile: serviceLog } = await startService(run, prepared, 'service', compare ? { USAGE_COUNTING: 'off', METRICS_PORT: 'off' } : {});
  if (reference !== undefined) {
    const started = await startService(run, reference.prepared, 'reference', {}, { bin: reference.release.bin, cwd: reference.release.dir });
    return { service, serviceLog, reference: { ...started, headers: { host: API_HOST, authorization: `Bearer ${reference.key}` } } };
  }
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

/**
 * With --against: the reference answers every path with a 200 (and full pages) too, under its own
 * key. Its bodies may differ from today's where the listing object changed since: their mean sizes
 * are reported beside today's.
 */
async function checkReference(
  { s }: SideBySide,
  targets: readonly Target[],
  pathsOf: Map<string, string[]>,
  reference: NonNullable<Services['reference']>,
): Promise<Record<string, number>> {
  const bodyBytes: Record<string, number> = {};
  for (const target of targets) {
    const paths = pathsOf.get(target.name)!;
    let total = 0;
    for (const path of paths) {
      const res = await httpGet(reference.child.port, path, reference.headers);
      if (res.status !== 200) throw new Error(`reference: ${target.name}: GET ${path} answered ${res.status}, not 200: ${res.body.toString('utf8').slice(0, 300)}`);
      const problem = target.check?.(JSON.parse(res.body.toString('utf8')), s.listings);
      if (problem !== undefined) throw new Error(`reference: ${target.name}: GET ${path}: ${problem}`);
      total += res.body.length;
    }
    bodyBytes[target.name] = Math.round(total / paths.length);
  }
  log(`The reference answers every path with a 200; its body sizes: ${targets.map((t) => `${t.name} ${bodyBytes[t.name]} B`).join(', ')}.`);
  return bodyBytes;
}

/** A server of the captured bytes (the ceiling, or the framework's floor) in its own process. */
async function startReplay({ s }: SideBySide, routesFile: string, name: string, script: string): Promise<Child> {
  const port = await freePort();
  const env = { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', BENCH_CEILING: s.ceiling };
  return startChild({ name, args: [script, routesFile], cwd: ROOT, env, port, stdoutFile: '/dev/null', cpu: s.pinning.serverCpu });
}

/** A server of the rounds: its name, its process, and the headers of its requests (its own key). */
type MeasuredServer = readonly [Row['server'], Child, Record<string, string>];

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
      const pair: MeasuredServer[] = [['service', services.service, run.headers], ['counted', services.counted.child, run.headers]];
      rows.push(...(await measureInRounds(run, target.name, paths, pair, (round) => ((round + t + firstOrder) % 2 === 0 ? pair : [...pair].reverse()))));
      continue;
    }
    const { reference } = services;
    const servers: MeasuredServer[] = [
      ['baseline', baseline, run.headers],
      ['fastify', floor, run.headers],
      ...(reference === undefined ? [] : [['reference', reference.child, reference.headers] as const]),
      ['service', services.service, run.headers],
    ];
    rows.push(...(await measureInRounds(run, target.name, paths, servers, (round) => servers.map((_, i) => servers[(i + round + t) % servers.length]!))));
  }
  return rows;
}

/** One target on `servers`: a warm-up each, then BENCH_ROUNDS rounds in the order `orderOf` gives; a row per server. */
async function measureInRounds(
  { s, runLoad }: SideBySide,
  target: string,
  paths: string[],
  servers: readonly MeasuredServer[],
  orderOf: (round: number) => readonly MeasuredServer[],
): Promise<Row[]> {
  const loadOf = (child: Child, headers: Record<string, string>) => ({ port: child.port, connections: s.connections, headers, paths });
  const warmups = new Map<string, LoadResult | undefined>();
  for (const [name, child, headers] of servers) {
    warmups.set(name, s.warmupS > 0 ? await runLoad({ ...loadOf(child, headers), durationS: s.warmupS }) : undefined);
  }
  const parts = new Map<string, LoadResult[]>(servers.map(([name]) => [name, []]));
  for (let round = 0; round < s.rounds; round++) {
    for (const [name, child, headers] of orderOf(round)) {
      parts.get(name)!.push(await withServerCpu(child, () => runLoad({ ...loadOf(child, headers), durationS: s.durationS })));
    }
  }
  const rows: Row[] = [];
  for (const [name] of servers) {
    const rounds = parts.get(name)!;
    const result = combine(rounds);
    rows.push({ target, server: name, warmup: warmups.get(name), result, rounds });
    const faults = result.non2xx + result.errors + result.timeouts > 0 ? `  (${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts)` : '';
    log(`  ${target.padEnd(8)} ${name.padEnd(9)} ${fmt(result.reqPerSec, 0).padStart(7)} req/s  p50 ${fmt(result.p50Ms)} ms  p99 ${fmt(result.p99Ms)} ms (${s.rounds} rounds of ${s.durationS} s: ${rounds.map((p) => fmt(p.reqPerSec, 0)).join(', ')} req/s)${faults}`);
  }
  return rows;
}

interface LogCounts {
  logLines: number;
  serviceRequests: number;
  /** BENCH_COUNTING=compare only. */
  counted?: { logLines: number; requests: number; scrape: string };
  /** --against only. */
  reference?: { logLines: number; requests: number };
}

/** Stops the service first so its log is complete, then counts its lines against its requests. */
async function stopAndCountLogs(services: Services, replays: readonly Child[], rows: readonly Row[]): Promise<LogCounts> {
  const { counted, reference } = services;
  const requestsOf = (server: Row['server']) => rows.filter((r) => r.server === server).reduce((n, r) => n + r.result.requests + (r.warmup?.requests ?? 0), 0);
  let scrape: string | undefined;
  if (counted !== undefined) scrape = (await httpGet(counted.metricsPort, '/metrics', { host: '127.0.0.1' })).body.toString('utf8');
  await services.service.stop();
  await counted?.child.stop();
  await reference?.child.stop();
  for (const replay of replays) await replay.stop();
  const logLines = await countLines(services.serviceLog);
  const serviceRequests = requestsOf('service');
  if (reference !== undefined) return { logLines, serviceRequests, reference: { logLines: await countLines(reference.logFile), requests: requestsOf('reference') } };
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
async function loggingAndMetricsWarnings({ logLines, serviceRequests, counted, reference }: LogCounts): Promise<string[]> {
  const warnings: string[] = [];
  if (logLines < serviceRequests) warnings.push(`the service log has ${logLines} lines for ${serviceRequests} requests: was request logging on?`);
  if (reference !== undefined && reference.logLines < reference.requests) {
    warnings.push(`the reference's log has ${reference.logLines} lines for ${reference.requests} requests: was request logging on?`);
  }
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
function printSummary(table: string[][], outcome: ModeOutcome): void {
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const numeric = new Set([2, 3, 4, 5]);
  log('');
  for (const [i, row] of table.entries()) {
    log(row.map((cell, c) => (numeric.has(c) && i > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd());
  }
  log('');
  log(`Goals are the issue's, informational only (never a CI gate). Service log: ${outcome.logs.logLines} lines for ${outcome.logs.serviceRequests} requests (logging on).`);
  printValidity(outcome);
}

/** The warnings, and whether every answer of the configuration was a 200. */
function printValidity({ mode, warnings, problems }: ModeOutcome, withMode = false): void {
  const of = withMode ? ` (${mode})` : '';
  for (const w of warnings) log(`WARNING${of}: ${w}`);
  if (problems.length > 0) {
    log(`INVALID RUN${of}: not every benchmark response was a 200, so these numbers mean nothing:`);
    for (const p of problems) log(`  - ${p}`);
  } else {
    log(`Valid run${of}: every response (warm-ups included) was a 200.`);
  }
}

/** One configuration's results as JSON: everything of the run, per-run details included. */
function outcomeJson(s: Settings, outcome: ModeOutcome) {
  const { problems, logs } = outcome;
  return {
    mode: outcome.mode,
    valid: problems.length === 0,
    problems,
    warnings: outcome.warnings,
    dataset: { listings: s.listings, detailIds: outcome.detailIds.length, bodyBytes: outcome.bodyBytes, referenceBodyBytes: outcome.referenceBodyBytes },
    serviceLogLines: logs.logLines,
    countedLogLines: logs.counted?.logLines,
    referenceLogLines: logs.reference?.logLines,
    ratios: outcome.goals.ratios,
    checks: outcome.goals.checks,
    rows: outcome.rows,
  };
}

const machineJson = () => ({
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model.trim(),
  node: process.version,
  platform: process.platform,
  loadAverageAtEnd: loadavg(),
});

function writeJson(name: string, value: unknown): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const resultsFile = join(RESULTS_DIR, name);
  writeFileSync(resultsFile, `${JSON.stringify(value, null, 2)}\n`);
  log(`Results: ${resultsFile}`);
}

/** bench/results/latest.json: everything of the run, per-run details included. */
function writeResults(s: Settings, outcome: ModeOutcome): void {
  writeJson('latest.json', { finishedAt: new Date().toISOString(), settings: s, machine: machineJson(), ...outcomeJson(s, outcome) });
}

/**
 * --against: the table of every configuration (against-report.ts), each configuration's validity,
 * and bench/results/against.json. Exit 1 when any answer was not a 200.
 */
function reportAgainst(s: Settings, { reference, today }: { reference: Reference; today: string }, outcomes: readonly ModeOutcome[]): number {
  const figures = outcomes.flatMap((o) => againstFigures(o.mode, s.targets, o.rows));
  log('');
  log(`Today (the working tree, ${today}) against the reference ${reference.ref} = ${reference.commit} (${reference.date}: ${reference.subject}).`);
  log(`Per configuration and target, ${s.rounds} rounds of ${s.durationS} s that take the four servers in turn; load from ${s.loadGenerator}, ${s.connections} connections; ${s.pinning.description}.`);
  log('');
  for (const line of againstTable(figures)) log(line);
  log('');
  log('req/s, p50 and p99: medians of the rounds. x ceiling, x reference: medians of the rounds\' own ratios (a server over the node:http ceiling, today over the reference).');
  for (const outcome of outcomes) {
    const { reference: ref } = outcome.logs;
    log(`${outcome.mode}: today's log ${outcome.logs.logLines} lines for ${outcome.logs.serviceRequests} requests, the reference's ${ref?.logLines} for ${ref?.requests} (logging on).`);
    printValidity(outcome, true);
  }
  writeJson('against.json', {
    finishedAt: new Date().toISOString(),
    today,
    reference: { ref: reference.ref, commit: reference.commit, date: reference.date, subject: reference.subject },
    settings: s,
    machine: machineJson(),
    figures,
    configurations: outcomes.map((o) => outcomeJson(s, o)),
  });
  return outcomes.every((o) => o.problems.length === 0) ? 0 : 1;
}

const USAGE = 'usage: run.js [scale] [--against <git ref>] (see bench/README.md)';

/** The command line: `scale` (the scale benchmark), `--against <ref>` / `--against=<ref>`. Exit 2 on anything else. */
function parseArguments(args: readonly string[]): { scale: boolean; against?: string } {
  let scale = false;
  let against: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === 'scale' && !scale) scale = true;
    else if (arg === '--against' && against === undefined && args[i + 1] !== undefined) against = args[++i];
    else if (arg.startsWith('--against=') && against === undefined) against = arg.slice('--against='.length);
    else usageError(`unknown or repeated argument "${arg}"${arg === '--against' ? ' (it needs a git ref)' : ''}`);
  }
  return { scale, against };
}

function usageError(message: string): never {
  process.stderr.write(`benchmark: ${message}; ${USAGE}\n`);
  process.exit(2);
}

// `BENCH_MODE=scale` (or `npm run bench -- scale`), `production`, `memory`, `webhooks` and `fleet` are runs
// of their own (bench/scale.ts, bench/production.ts, bench/memory.ts, bench/webhooks.ts, bench/fleet.ts); every other mode is the
// side-by-side run above.
const commandLine = parseArguments(process.argv.slice(2));
const benchMode = commandLine.scale ? 'scale' : process.env.BENCH_MODE?.trim();
const runsOfTheirOwn = ['scale', 'production', 'memory', 'webhooks', 'fleet'];
if (commandLine.against !== undefined && runsOfTheirOwn.includes(benchMode ?? '')) {
  usageError(`--against measures the side-by-side run (BENCH_MODE ${AGAINST_MODES.join(' or ')}), not ${benchMode}`);
}
const run = benchMode === 'scale' ? import('./scale.js').then((m) => m.runScale())
  : benchMode === 'production' ? import('./production.js').then((m) => m.runProduction())
  : benchMode === 'memory' ? import('./memory.js').then((m) => m.runMemory())
  : benchMode === 'webhooks' ? import('./webhooks.js').then((m) => m.runWebhooks())
  : benchMode === 'fleet' ? import('./fleet.js').then((m) => m.runFleet())
  : main(commandLine.against);
run.then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    killAllNow();
    process.exit(1);
  },
);
