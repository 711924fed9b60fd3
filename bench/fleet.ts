import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createScratchPostgres } from '../test/support/database.js';
import { checkAnswers, type CheckRequest, type CheckResult } from './fleet-check.js';
import { createTenants, hotSet, importTenants, sizeSummary, tenantSampler, trafficShares, zipfSizes, type FleetImport, type FleetTenant } from './fleet-data.js';
import { NGINX, percentile, readAccessLog, startNginx, TAG_HEADER, type LoggedRequest, type Nginx } from './fleet-nginx.js';
import type { LoadRequest, LoadResult } from './load.js';
import { cleanUpOnExit, freePort, httpGet, serviceEnv, startChild, stopAll, type Child } from './processes.js';
import { numberEnv } from './settings.js';
import { runWrkLoad, wrkInstalled } from './wrk.js';

/**
 * BENCH_MODE=fleet (issue 44 item 4): a fleet of three `serve` instances on PostgreSQL + Redis,
 * each with READ_MODEL_MAX_MB=300, behind the repository's nginx configuration, over 3,000,000
 * listings of 10,000 tenants of Zipf-like sizes read with Zipf-like traffic; measured once routed
 * by key and once round robin in the same run, then one instance killed (-9) and restarted under
 * load, and 1,000 answers checked against the database. How it works: bench/README.md.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const INSTANCES = 3;
const PER_PAGE = 20;
const MIB = 2 ** 20;

interface FleetSettings {
  listings: number;
  tenants: number;
  sizeExponent: number;
  trafficExponent: number;
  hotFraction: number;
  fileLines: number;
  maxMb: number;
  /** NODE_OPTIONS of the instances only (a heap cap, say), not of the bench or the import. */
  instanceNodeOptions: string | undefined;
  connections: number;
  warmupS: number;
  durationS: number;
  killS: number;
  killAtS: number;
  restartAfterS: number;
  sample: number;
  sequence: number;
  keep: boolean;
}

function fleetSettings(): FleetSettings {
  const int = (name: string, fallback: number, min: number) => Math.floor(numberEnv(name, fallback, min));
  return {
    listings: int('BENCH_FLEET_LISTINGS', 3_000_000, 1),
    tenants: int('BENCH_FLEET_TENANTS', 10_000, 3),
    sizeExponent: numberEnv('BENCH_FLEET_SIZE_EXPONENT', 1, 0),
    trafficExponent: numberEnv('BENCH_FLEET_TRAFFIC_EXPONENT', 1, 0),
    hotFraction: numberEnv('BENCH_FLEET_HOT_FRACTION', 0.8, 0),
    fileLines: int('BENCH_FLEET_FILE_LINES', 1_000_000, 1),
    maxMb: int('BENCH_FLEET_MAX_MB', 300, 1),
    instanceNodeOptions: process.env.BENCH_FLEET_NODE_OPTIONS,
    connections: int('BENCH_CONNECTIONS', 50, 1),
    warmupS: int('BENCH_FLEET_WARMUP', 20, 1),
    durationS: int('BENCH_FLEET_DURATION', 60, 1),
    killS: int('BENCH_FLEET_KILL_DURATION', 30, 8),
    killAtS: 3,
    restartAfterS: 2,
    sample: int('BENCH_FLEET_SAMPLE', 1000, 0),
    sequence: int('BENCH_FLEET_SEQUENCE', 20_000, 100),
    keep: process.env.BENCH_KEEP === '1',
  };
}

const log = (text = '') => process.stdout.write(`${text}\n`);
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const dec = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const started = Date.now();
const step = (text: string) => log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s] ${text}`);

interface FleetRun {
  s: FleetSettings;
  workDir: string;
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  tenants: FleetTenant[];
  hot: Set<number>;
}

// ---------------------------------------------------------------------------------------------
// Requests

/** `count` requests drawn from the traffic: half first pages, a fifth deeper pages (up to page 50), the rest details. */
function drawRequests(tenants: readonly FleetTenant[], count: number, seed: number): CheckRequest[] {
  const next = tenantSampler(tenants, seed);
  let x = seed >>> 0;
  const rand = () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 4294967296);
  return Array.from({ length: count }, () => {
    const tenant = next();
    const pages = Math.ceil(tenant.listings / PER_PAGE);
    const r = rand();
    if (r < 0.3 && tenant.ids.length > 0) return { tenant, kind: 'detail', path: `/v1/listings/${tenant.ids[Math.floor(rand() * tenant.ids.length)]}` };
    if (r < 0.5 && pages >= 2) return { tenant, kind: 'deep', path: `/v1/listings?page=${2 + Math.floor(rand() * (Math.min(pages, 50) - 1))}&per_page=${PER_PAGE}` };
    return { tenant, kind: 'first', path: `/v1/listings?page=1&per_page=${PER_PAGE}` };
  });
}

/** The wrk requests: each with its tenant's key and a tag for the access log (`<tenant>.<f|p|d>`). */
const asLoad = (requests: readonly CheckRequest[]): LoadRequest[] => requests.map((r) => ({
  path: r.path,
  headers: { authorization: `Bearer ${r.tenant.key}`, [TAG_HEADER]: `${r.tenant.index}.${r.kind === 'first' ? 'f' : r.kind === 'deep' ? 'p' : 'd'}` },
}));

function wrk(port: number, s: FleetSettings, durationS: number, requests: readonly LoadRequest[]): Promise<LoadResult> {
  return runWrkLoad({ port, connections: s.connections, durationS, headers: { host: 'api.localhost' }, paths: requests });
}

// ---------------------------------------------------------------------------------------------
// Instances, their memory and their metrics

interface Instance {
  name: string;
  port: number;
  metricsPort: number;
  child: Child;
  /** The highest VmHWM seen of each of its processes (a restart is a new process), in bytes. */
  peakRss: Map<number, number>;
}

function startInstance(run: FleetRun, name: string, port: number, metricsPort: number): Promise<Child> {
  return startChild({
    name,
    args: [BIN, 'serve', '--workers', '1'],
    cwd: ROOT,
    // Warm-up off: every phase starts cold alike, and a tenant's first read is what is measured.
    env: serviceEnv(port, run.databaseUrl, {
      REDIS_URL: run.redisUrl, REDIS_KEY_PREFIX: run.redisPrefix, READ_MODEL_MAX_MB: String(run.s.maxMb), LOG_LEVEL: 'warn',
      TRUST_PROXY: '1', METRICS_PORT: String(metricsPort), WARMUP_MAX_LISTINGS: '0',
      ...(run.s.instanceNodeOptions !== undefined && { NODE_OPTIONS: run.s.instanceNodeOptions }),
    }),
    port,
    stdoutFile: join(run.workDir, `${name}.log`),
    startTimeoutMs: 120_000,
  });
}

/** The kernel's high-water mark of the process's resident set (VmHWM), in bytes; 0 when it is gone. */
function vmHwm(pid: number | undefined): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples every instance's VmHWM twice a second (a process killed with -9 keeps its last sample). */
function sampleMemory(instances: readonly Instance[]): () => void {
  const sample = () => {
    for (const i of instances) {
      const pid = i.child.process.pid ?? 0;
      i.peakRss.set(pid, Math.max(i.peakRss.get(pid) ?? 0, vmHwm(pid)));
    }
  };
  const timer = setInterval(sample, 500);
  return () => {
    sample();
    clearInterval(timer);
  };
}

const METRIC_NAMES = {
  builds: 'listings_index_builds_total',
  evictions: 'listings_index_evictions_total',
  coldReads: 'listings_cold_reads_total',
  tenants: 'listings_indexed_tenants',
  listings: 'listings_indexed_listings',
  indexBytes: 'listings_index_bytes',
  // Where an instance's memory is (prom-client's default metrics): what READ_MODEL_MAX_MB bounds is only part of it.
  rss: 'process_resident_memory_bytes',
  heapUsed: 'nodejs_heap_size_used_bytes',
  heapTotal: 'nodejs_heap_size_total_bytes',
  external: 'nodejs_external_memory_bytes',
} as const;
type Metrics = Record<keyof typeof METRIC_NAMES | 'requests', number>;

/** One scrape of an instance's /metrics: the read model's counts and its API answers of the listing routes (src/metrics/index.ts). */
async function scrape(instance: Instance): Promise<Metrics> {
  const res = await httpGet(instance.metricsPort, '/metrics', { host: '127.0.0.1' }).catch((error: Error) => {
    // An instance that died (out of memory, say) is the finding: say how, with what it printed.
    const { exitCode, signalCode } = instance.child.process;
    if (exitCode === null && signalCode === null) throw error;
    throw new Error(`${instance.name} exited (${signalCode ?? `code ${exitCode}`}):\n${instance.child.stderrTail()}`);
  });
  if (res.status !== 200) throw new Error(`${instance.name}: GET /metrics answered ${res.status}`);
  const text = res.body.toString('utf8');
  const sum = (name: string, labels?: RegExp) => text.split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .filter((line) => labels === undefined || labels.test(line))
    .reduce((n, line) => n + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  const out = { requests: sum('listings_http_requests_total', /route="\/v1\/listings/) } as Metrics;
  for (const [key, name] of Object.entries(METRIC_NAMES)) out[key as keyof typeof METRIC_NAMES] = sum(name);
  return out;
}

/** Counters over a window (after - before); the gauges (what is held) as they are at its end. */
const GAUGES = new Set(['tenants', 'listings', 'indexBytes', 'rss', 'heapUsed', 'heapTotal', 'external']);
const delta = (after: Metrics, before: Metrics): Metrics =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, GAUGES.has(k) ? v : v - before[k as keyof Metrics]])) as Metrics;

// ---------------------------------------------------------------------------------------------
// A phase: three fresh instances behind nginx, routed by key or round robin

interface InstanceFigures {
  name: string;
  port: number;
  peakRssBytes: number;
  /** Per process, in start order (the killed one, then its replacement). */
  peakRssByProcess: number[];
  measured: Metrics;
  whole: Metrics;
  hitRatio: number;
}

interface PhaseFigures {
  name: string;
  routed: boolean;
  warmup: LoadResult;
  load: LoadResult;
  instances: InstanceFigures[];
  logged: {
    requests: number; reqPerSec: number; p50Ms: number; p99Ms: number; hotRequests: number; hotP99Ms: number; hotP50Ms: number;
    byKind: Record<string, { requests: number; p50Ms: number; p99Ms: number }>;
  };
  cold: { firstPages: number; firstPageP50Ms: number; firstPageP99Ms: number; firstPageMaxMs: number; anyKind: number; anyKindP99Ms: number };
  answeredBy: Record<string, number>;
  kill?: KillFigures;
  check?: CheckResult;
}

interface KillFigures {
  load: LoadResult;
  victim: string;
  restartReadyMs: number;
  /** Each instance's peak RSS over the phase, the kill test included (the restarted instance: its new process). */
  peakRssBytes: number[];
  failed: number;
  loggedNon200: Record<string, number>;
  retried: number;
  /** 499s of requests in flight when wrk ended its run and closed its connections. */
  closedAtEnd: number;
  afterRestartOnVictim: number;
}

/**
 * Hit ratio: the share of the instance's answers of the listing routes that did not have to build
 * their tenant's index (1 - index builds / answers over the window).
 */
const hitRatio = (m: Metrics) => (m.requests === 0 ? NaN : 1 - m.builds / m.requests);

function instanceFigures(inst: Instance, start: Metrics, before: Metrics, after: Metrics): InstanceFigures {
  const measured = delta(after, before);
  const peaks = [...inst.peakRss.values()];
  return {
    name: inst.name, port: inst.port, peakRssBytes: Math.max(...peaks), peakRssByProcess: peaks,
    measured, whole: delta(after, start), hitRatio: hitRatio(measured),
  };
}

async function runPhase(run: FleetRun, name: string, routed: boolean): Promise<PhaseFigures> {
  const { s } = run;
  step(`${name}: starting ${INSTANCES} instances (READ_MODEL_MAX_MB=${s.maxMb}) and nginx (${routed ? 'hash $http_authorization consistent' : 'round robin: the hash line removed'})...`);
  const instances: Instance[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const child = await startInstance(run, `${routed ? 'routed' : 'rr'}-${i + 1}`, port, metricsPort);
    instances.push({ name: `instance ${i + 1}`, port, metricsPort, child, peakRss: new Map() });
  }
  const nginx = await startNginx(join(run.workDir, `nginx-${routed ? 'routed' : 'rr'}`), await freePort(), instances.map((i) => i.port), routed);
  const stopSampling = sampleMemory(instances);
  try {
    const start = await Promise.all(instances.map(scrape));
    step(`${name}: warm-up ${s.warmupS} s (cold: every tenant's first read on its instance), wrk ${s.connections} connections through nginx...`);
    const warmup = await wrk(nginx.port, s, s.warmupS, asLoad(drawRequests(run.tenants, s.sequence, 101)));
    const before = await Promise.all(instances.map(scrape));
    const measureFrom = Date.now();
    step(`${name}: measuring ${s.durationS} s...`);
    const load = await wrk(nginx.port, s, s.durationS, asLoad(drawRequests(run.tenants, s.sequence, 202)));
    const measureTo = Date.now();
    const after = await Promise.all(instances.map(scrape));
    step(`${name}: ${int(load.reqPerSec)} req/s, p50 ${dec(load.p50Ms, 2)} ms, p99 ${dec(load.p99Ms, 2)} ms; non-2xx ${load.non2xx}, errors ${load.errors + load.timeouts}`);
    stopSampling();
    const figures = instances.map((inst, i) => instanceFigures(inst, start[i]!, before[i]!, after[i]!));
    const kill = routed ? await killTest(run, nginx, instances) : undefined;
    const check = routed && s.sample > 0 ? await correctness(run, nginx) : undefined;
    await nginx.stop();
    const logged = await readAccessLog(nginx.accessLog);
    if (kill !== undefined) summariseKillLog(kill, logged, instances[1]!.port);
    const analysis = logAnalysis(run, logged, instances, { from: measureFrom, to: measureTo }, kill?.startedAt ?? Infinity);
    return { name, routed, warmup, load, instances: figures, ...analysis, kill, check };
  } finally {
    stopSampling();
    await nginx.stop();
    await stopAll();
  }
}

/** What the access log says of a phase: latency of the measured window (all, hot set), the cold first reads, who answered. */
function logAnalysis(run: FleetRun, logged: readonly LoggedRequest[], instances: readonly Instance[], window: { from: number; to: number }, killAt: number) {
  // 499: a request wrk gave up on when its run ended (it closes its connections), not an answer.
  const measured = logged.filter((r) => r.startMs >= window.from && r.startMs < window.to && r.status !== 499);
  const hot = measured.filter((r) => run.hot.has(r.tenant)).map((r) => r.ms);
  const all = measured.map((r) => r.ms);
  // Cold: the first request an instance received for a tenant since it started (before the kill test).
  const seen = new Set<string>();
  const coldFirst: number[] = [];
  const coldAny: number[] = [];
  for (const r of logged) {
    if (r.startMs >= killAt) break;
    if (r.status === 499) continue;
    const key = `${r.instance}:${r.tenant}`;
    if (seen.has(key)) continue;
    seen.add(key);
    coldAny.push(r.ms);
    if (r.kind === 'f') coldFirst.push(r.ms);
  }
  const byKind = Object.fromEntries(['f', 'p', 'd'].map((kind) => {
    const ms = measured.filter((r) => r.kind === kind).map((r) => r.ms);
    return [{ f: 'first page', p: 'deeper page', d: 'detail' }[kind]!, { requests: ms.length, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) }];
  }));
  const answeredBy: Record<string, number> = {};
  for (const r of measured) {
    const name = instances.find((i) => i.port === r.instance)?.name ?? `port ${r.instance}`;
    answeredBy[name] = (answeredBy[name] ?? 0) + 1;
  }
  // wrk's req/s counts the time it took to load its script; this is over the answers themselves.
  const span = measured.length < 2 ? NaN : (measured.reduce((end, r) => Math.max(end, r.startMs + r.ms), 0) - measured[0]!.startMs) / 1000;
  return {
    logged: {
      requests: measured.length, reqPerSec: measured.length / span, p50Ms: percentile(all, 50), p99Ms: percentile(all, 99),
      hotRequests: hot.length, hotP50Ms: percentile(hot, 50), hotP99Ms: percentile(hot, 99), byKind,
    },
    cold: {
      firstPages: coldFirst.length, firstPageP50Ms: percentile(coldFirst, 50), firstPageP99Ms: percentile(coldFirst, 99),
      firstPageMaxMs: coldFirst.reduce((a, b) => Math.max(a, b), 0), anyKind: coldAny.length, anyKindP99Ms: percentile(coldAny, 99),
    },
    answeredBy,
  };
}

// ---------------------------------------------------------------------------------------------
// kill -9 under load, and the answers checked against the database

/**
 * Under wrk through nginx (routed by key): instance 2 is killed with SIGKILL after `killAtS` s,
 * started again on the same port `restartAfterS` s later, and the load goes on to `killS` s.
 */
async function killTest(run: FleetRun, nginx: Nginx, instances: Instance[]): Promise<KillFigures & { startedAt: number; endedAt: number }> {
  const { s } = run;
  const victim = instances[1]!;
  step(`kill -9: wrk for ${s.killS} s; ${victim.name} killed at ${s.killAtS} s, started again ${s.restartAfterS} s later...`);
  const stopSampling = sampleMemory(instances);
  const startedAt = Date.now();
  const loading = wrk(nginx.port, s, s.killS, asLoad(drawRequests(run.tenants, s.sequence, 303)));
  // wrk's duration includes loading its script (seconds for a long sequence on a busy machine):
  // the kill is timed from the first answers, so that it falls under load.
  await waitForTraffic(instances);
  await sleep(s.killAtS * 1000);
  victim.child.process.kill('SIGKILL');
  const killedAt = Date.now();
  await sleep(s.restartAfterS * 1000);
  victim.child = await startInstance(run, 'routed-2-restarted', victim.port, victim.metricsPort);
  const restartReadyMs = Date.now() - killedAt;
  const load = await loading;
  stopSampling();
  const failed = load.non2xx + load.errors + load.timeouts;
  step(`kill -9: restarted instance ready ${int(restartReadyMs)} ms after the kill; wrk: ${int(load.requests)} requests, ${JSON.stringify(load.statusCodes)}, socket errors ${load.errors}, timeouts ${load.timeouts}: ${failed} failed`);
  const peakRssBytes = instances.map((i) => Math.max(...i.peakRss.values()));
  const counted = { loggedNon200: {}, retried: 0, closedAtEnd: 0, afterRestartOnVictim: 0 }; // from nginx's log, once it is written out
  return { load, victim: victim.name, restartReadyMs, peakRssBytes, failed, ...counted, startedAt, endedAt: Date.now() };
}

/** Resolves once the instances together have answered 50 more requests than when it was called. */
async function waitForTraffic(instances: readonly Instance[]): Promise<void> {
  const count = async () => (await Promise.all(instances.map(scrape))).reduce((n, m) => n + m.requests, 0);
  const from = await count();
  for (let i = 0; i < 600 && (await count()) < from + 50; i++) await sleep(100);
}

/** The kill window in nginx's log: answers other than 200, requests tried on a second instance, and those the restarted instance answered. */
function summariseKillLog(kill: KillFigures & { startedAt: number; endedAt: number }, logged: readonly LoggedRequest[], victimPort: number): void {
  for (const r of logged) {
    if (r.startMs < kill.startedAt) continue;
    if (r.status === 499 && r.startMs + r.ms >= kill.endedAt - 1000) kill.closedAtEnd++;
    else if (r.status !== 200) kill.loggedNon200[r.status] = (kill.loggedNon200[r.status] ?? 0) + 1;
    if (r.instance === victimPort && r.startMs > kill.startedAt + kill.restartReadyMs) kill.afterRestartOnVictim++;
  }
  kill.retried = logged.filter((r) => r.startMs >= kill.startedAt && r.tried > 1).length;
}

async function correctness(run: FleetRun, nginx: Nginx): Promise<CheckResult> {
  step(`checking ${run.s.sample} answers through nginx against PostgreSQL...`);
  const result = await checkAnswers(run.databaseUrl, nginx.port, drawRequests(run.tenants, run.s.sample, 404));
  step(`checked ${result.requests} requests (${JSON.stringify(result.byKind)}), ${int(result.listingsCompared)} listings compared field by field: ${result.wrong} wrong`);
  for (const m of result.mismatches.slice(0, 20)) log(`  WRONG: ${m}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The run

export async function runFleet(): Promise<number> {
  const s = fleetSettings();
  if (NGINX === undefined) throw new Error('BENCH_MODE=fleet needs nginx (Debian: apt-get install nginx-light)');
  if (!wrkInstalled()) throw new Error('BENCH_MODE=fleet needs wrk (Debian: apt-get install wrk)');
  log(`Fleet: ${int(s.listings)} listings over ${int(s.tenants)} tenants on PostgreSQL + Redis; ${INSTANCES} instances, READ_MODEL_MAX_MB=${s.maxMb}${s.instanceNodeOptions === undefined ? '' : `, NODE_OPTIONS=${s.instanceNodeOptions}`}, behind nginx.`);
  log(`Machine: ${cpus().length} CPUs, Node ${process.version}, load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}.`);
  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-fleet-'));
  cleanUpOnExit(() => {
    if (!s.keep) rmSync(workDir, { recursive: true, force: true });
  });
  const admin = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const database = await createScratchPostgres(admin, 'listings_fleet');
  try {
    const redisUrl = process.env.REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
    const run: FleetRun = { s, workDir, databaseUrl: database.url, redisUrl, redisPrefix: `${new URL(database.url).pathname.slice(1)}:rl:`, tenants: [], hot: new Set() };
    const imported = await prepareData(run);
    const routed = await runPhase(run, 'routed by key', true);
    const roundRobin = await runPhase(run, 'round robin', false);
    report(run, imported, [routed, roundRobin]);
    return routed.check !== undefined && routed.check.wrong > 0 ? 1 : 0;
  } finally {
    await stopAll();
    if (s.keep) log(`Kept: ${workDir} (the database ${database.url} is dropped)`);
    await database.drop();
  }
}

async function prepareData(run: FleetRun): Promise<FleetImport & { accountsMs: number }> {
  const { s } = run;
  const sizes = zipfSizes(s.listings, s.tenants, s.sizeExponent);
  step(`sizes (Zipf, s=${s.sizeExponent}): ${sizeSummary(sizes)}`);
  const now = new Date();
  const t0 = Date.now();
  run.tenants = await createTenants(run.databaseUrl, sizes, trafficShares(s.tenants, s.trafficExponent), now);
  const accountsMs = Date.now() - t0;
  step(`${int(s.tenants)} organisations and keys made in ${dec(accountsMs / 1000)} s (in process: createBenchAccount, issueKey)`);
  const imported = await importTenants(run.workDir, run.databaseUrl, run.tenants, now, s.fileLines, step);
  step(`imported ${int(s.listings)} listings in ${imported.files.length} CLI runs: ${dec(imported.wallMs / 1000)} s in all, peak RSS ${int(imported.peakRssBytes / MIB)} MB`);
  run.hot = hotSet(run.tenants, s.hotFraction);
  const hotListings = run.tenants.filter((t) => run.hot.has(t.index)).reduce((n, t) => n + t.listings, 0);
  step(`traffic (Zipf, s=${s.trafficExponent}, over a rank independent of size): the hot set is ${int(run.hot.size)} tenants (${int(hotListings)} listings) taking ${Math.round(s.hotFraction * 100)} % of requests`);
  return { ...imported, accountsMs };
}

// ---------------------------------------------------------------------------------------------
// The report

function report(run: FleetRun, imported: FleetImport & { accountsMs: number }, phases: readonly PhaseFigures[]): void {
  log('');
  log('phase          instance    peak RSS  hit ratio  evictions (measured / whole)  index builds  cold reads  indexed at end (tenants / listings / est. MB)  answered');
  for (const p of phases) {
    for (const i of p.instances) {
      log([
        p.name.padEnd(14), i.name.padEnd(10), `${int(i.peakRssBytes / MIB)} MB`.padStart(9), dec(i.hitRatio * 100, 2).padStart(9) + '%',
        `${int(i.measured.evictions)} / ${int(i.whole.evictions)}`.padStart(29), int(i.whole.builds).padStart(13), int(i.whole.coldReads).padStart(11),
        `${int(i.whole.tenants)} / ${int(i.whole.listings)} / ${int(i.whole.indexBytes / MIB)}`.padStart(46), int(p.answeredBy[i.name] ?? 0).padStart(9),
      ].join('  '));
    }
  }
  log('');
  log('memory at the end of the measured window, MB: RSS = V8 heap (used / allocated) + external (Buffers) + the rest (code, stacks, malloc)');
  for (const p of phases) {
    for (const i of p.instances) {
      const m = i.whole;
      log(`${p.name.padEnd(14)}  ${i.name.padEnd(10)}  RSS ${int(m.rss / MIB)}: heap ${int(m.heapUsed / MIB)} / ${int(m.heapTotal / MIB)}, external ${int(m.external / MIB)}, ` +
        `index (estimated) ${int(m.indexBytes / MIB)}`);
    }
  }
  log('');
  log('phase           req/s   p50 ms   p99 ms   hot-set p99 ms   cold first page p99 ms (n)   cold first request, any kind, p99 ms (n)');
  for (const p of phases) {
    log([
      p.name.padEnd(14), int(p.load.reqPerSec).padStart(6), dec(p.load.p50Ms, 2).padStart(7), dec(p.load.p99Ms, 2).padStart(7),
      dec(p.logged.hotP99Ms, 0).padStart(16), `${dec(p.cold.firstPageP99Ms, 0)} (${int(p.cold.firstPages)})`.padStart(28),
      `${dec(p.cold.anyKindP99Ms, 0)} (${int(p.cold.anyKind)})`.padStart(41),
    ].join('  '));
  }
  log('');
  for (const p of phases) {
    const kinds = Object.entries(p.logged.byKind).map(([kind, k]) => `${kind} ${int(k.requests)}: p50 ${dec(k.p50Ms, 0)} / p99 ${dec(k.p99Ms, 0)} ms`).join('; ');
    log(`${p.name}, nginx's log over the measured window (ms resolution): ${int(p.logged.requests)} answers, ${int(p.logged.reqPerSec)} req/s from the first to the last`);
    log(`  ${kinds}; hot set ${int(p.logged.hotRequests)}: p50 ${dec(p.logged.hotP50Ms, 0)} ms`);
  }
  printVerdicts(run, imported, phases);
  writeResults(run, imported, phases);
}

function printVerdicts(run: FleetRun, imported: FleetImport & { accountsMs: number }, phases: readonly PhaseFigures[]): void {
  const routed = phases.find((p) => p.routed)!;
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  log('');
  log(`Import: ${imported.files.map((f) => `${int(f.lines)} lines of ${int(f.tenants)} tenants in ${dec(f.wallMs / 1000)} s, peak RSS ${int((f.peakRssBytes ?? 0) / MIB)} MB`).join('; ')}`);
  log(`  in all ${dec(imported.wallMs / 1000)} s, peak RSS ${int(imported.peakRssBytes / MIB)} MB (${imported.rssMethod ?? 'not measured'}); accounts and keys ${dec(imported.accountsMs / 1000)} s before it.`);
  const overRss = routed.instances.filter((i) => i.peakRssBytes > 512 * MIB);
  log(`Goal, routed by key, every instance <= 512 MB RSS: ${verdict(overRss.length === 0)} (${routed.instances.map((i) => `${int(i.peakRssBytes / MIB)} MB`).join(', ')})`);
  log(`Goal, routed by key, hot-set p99 < 20 ms: ${verdict(routed.logged.hotP99Ms < 20)} (${dec(routed.logged.hotP99Ms, 0)} ms, nginx's $request_time: millisecond resolution)`);
  if (routed.kill !== undefined) {
    const k = routed.kill;
    log(`kill -9 of ${k.victim} under load: ${k.failed} failed requests of ${int(k.load.requests)} (wrk: ${JSON.stringify(k.load.statusCodes)}, socket errors ${k.load.errors}, timeouts ${k.load.timeouts}); nginx logged non-200 ${JSON.stringify(k.loggedNon200)} (and ${k.closedAtEnd} 499s: in flight when wrk ended), ${int(k.retried)} requests tried on a second instance; restarted instance ready after ${int(k.restartReadyMs)} ms, answered ${int(k.afterRestartOnVictim)} after it`);
  }
  if (routed.check !== undefined) log(`Correctness: ${routed.check.requests} answers through nginx after the restart, checked against PostgreSQL: ${routed.check.wrong} wrong`);
  const rr = phases.find((p) => !p.routed);
  if (rr !== undefined) log(`Round robin over routed by key: req/s ${dec(rr.load.reqPerSec / routed.load.reqPerSec, 2)}, evictions ${int(sumOf(rr, 'evictions'))} against ${int(sumOf(routed, 'evictions'))} (measured windows)`);
}

const sumOf = (p: PhaseFigures, key: keyof Metrics) => p.instances.reduce((n, i) => n + i.measured[key], 0);

function writeResults(run: FleetRun, imported: FleetImport & { accountsMs: number }, phases: readonly PhaseFigures[]): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, 'fleet.json');
  const tenants = { count: run.tenants.length, sizes: sizeSummary(run.tenants.map((t) => t.listings)), hotSet: run.hot.size };
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model.trim(), node: process.version, loadAverageAtEnd: loadavg() };
  writeFileSync(file, `${JSON.stringify({ finishedAt: new Date().toISOString(), settings: run.s, machine, tenants, imported, phases }, null, 2)}\n`);
  log(`Results: ${file}`);
}
