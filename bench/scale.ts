import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/storage/index.js';
import { prng } from '../test/support/random.js';
import { createBenchAccount, generateListings } from './dataset.js';
import { runEach, runLoad, runWhile, type ClientResult, type LoadRequest, type LoadResult } from './load.js';
import { cleanUpOnExit, countLines, freePort, httpGet, serviceEnv, startChild, stopAll } from './processes.js';
import { probe, type Probe, type Server } from './probe.js';
import { median, numberEnv, spread } from './settings.js';

/**
 * `BENCH_MODE=scale npm run bench` (or `npm run bench -- scale`): the read path and the importer
 * at scale, through the real code, in one run. See bench/README.md ("Scale benchmark").
 *
 * Data: 1,000 small tenants, a tenant B of 50,000 listings and one of 100,000, one key per tenant
 * (issued with `issueKey`, limit raised with `store.keys.setRateLimit` so the limiter never
 * refuses), listings imported by the real `listings-api import` CLI, spawned and timed.
 * Serving: the real service (bench/serve-with-probe.ts: `createService(loadConfig())` plus an
 * event-loop probe), twice: once with the production settings (caches on) for the cold mixed load
 * and tenant B under writes to tenant A, once with READ_CACHE_TTL_MS=0 (caches off: only the
 * per-tenant index, the read path's structure, stays) for the 100k tenant's figures.
 * Then (unless BENCH_SKIP_MILLION=1) the peak RSS of importing 1,000,000 listings.
 *
 * Informational: targets are printed as met or missed, never enforced. Exit 1 only when something
 * crashed or an answer was not a 200.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const PROBE = fileURLToPath(new URL('./serve-with-probe.js', import.meta.url));
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const API_HOST = 'api.localhost'; // the sg host with API_DOMAIN=localhost (D3)
const TIME = '/usr/bin/time';
const SEED = 20261122;

// ---------------------------------------------------------------------------------------------
// Settings

interface Settings {
  quick: boolean;
  tenants: number;
  smallMean: number;
  big: number;
  b: number;
  detailIds: number;
  million: number;
  skipMillion: boolean;
  durationS: number;
  warmupS: number;
  runs: number;
  connections: number;
  coldConcurrency: number;
  writeIntervalMs: number;
  keep: boolean;
  /** NODE_OPTIONS of the two serving processes only (the CLI and this process keep their own). */
  serveNodeOptions: string | undefined;
}

function settings(): Settings {
  // BENCH_SCALE_QUICK=1: a smaller data set and shorter loads, for trying the bench (about 1 minute).
  const quick = process.env.BENCH_SCALE_QUICK === '1';
  const int = (name: string, full: number, small: number, min: number) => Math.floor(numberEnv(name, quick ? small : full, min));
  return {
    quick,
    tenants: int('BENCH_SCALE_TENANTS', 1000, 100, 1),
    smallMean: int('BENCH_SCALE_SMALL_LISTINGS', 25, 25, 1),
    big: int('BENCH_SCALE_BIG', 100_000, 20_000, 100),
    b: int('BENCH_SCALE_B', 50_000, 10_000, 100),
    detailIds: int('BENCH_SCALE_DETAIL_IDS', 20_000, 5_000, 1),
    million: int('BENCH_SCALE_MILLION', 1_000_000, 100_000, 1),
    skipMillion: process.env.BENCH_SKIP_MILLION === '1' || (quick && process.env.BENCH_SKIP_MILLION !== '0'),
    durationS: numberEnv('BENCH_DURATION', quick ? 2 : 5, 1),
    warmupS: numberEnv('BENCH_WARMUP', quick ? 1 : 2, 0),
    runs: int('BENCH_RUNS', 3, 1, 1),
    connections: int('BENCH_CONNECTIONS', 50, 50, 1),
    coldConcurrency: int('BENCH_SCALE_COLD_CONCURRENCY', 10, 10, 1),
    writeIntervalMs: int('BENCH_SCALE_WRITE_INTERVAL_MS', 1000, 1000, 50),
    keep: process.env.BENCH_KEEP === '1',
    serveNodeOptions: process.env.BENCH_SERVE_NODE_OPTIONS?.trim() || undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// Small helpers

const log = (text = '') => process.stdout.write(`${text}\n`);
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const dec = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const mb = (bytes: number) => `${int(bytes / (1024 * 1024))} MB`;
/** Where a probe's RSS is: V8's heap (in use, of what it holds) and the memory outside it (Buffers). */
const memoryParts = (p: Probe) => `heap ${mb(p.heap_used_bytes)} in use of ${mb(p.heap_total_bytes)}, outside the heap ${mb(p.external_bytes)}`;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Writes lines to a file as they come, waiting for the stream to drain: nothing is held in memory. */
export async function writeLines(file: string, lines: Iterable<string>): Promise<number> {
  const out = createWriteStream(file);
  let count = 0;
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  for (const line of lines) {
    count++;
    if (!out.write(`${line}\n`)) await Promise.race([new Promise<void>((resolve) => out.once('drain', () => resolve())), failed]);
  }
  await Promise.race([new Promise<void>((resolve) => out.end(resolve)), failed]);
  return count;
}

// ---------------------------------------------------------------------------------------------
// The CLI, spawned as an operator runs it

const cliChildren = new Set<ChildProcess>();

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** From spawn to exit. */
  wallMs: number;
  /** Peak resident set size, when measured. */
  peakRssBytes?: number;
  rssMethod?: string;
  /** User + system CPU time (under /usr/bin/time only): moves less than wall time on a shared machine. */
  cpuMs?: number;
}

const haveTime = existsSync(TIME);

/**
 * `node bin/listings-api.js ARGS` with `env`. With `measureRss`: under `/usr/bin/time -v` when it
 * exists (its "Maximum resident set size"), else by polling /proc/PID/status VmHWM (the kernel's
 * own high-water mark, read every 20 ms: at worst a little under the true peak).
 */
function runCli(args: readonly string[], env: NodeJS.ProcessEnv, measureRss = false): Promise<CliRun> {
  const useTime = measureRss && haveTime;
  const [command, argv] = useTime ? [TIME, ['-v', process.execPath, BIN, ...args]] : [process.execPath, [BIN, ...args]];
  const started = performance.now();
  const child = spawn(command, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  cliChildren.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  let polledKb = 0;
  const poller =
    measureRss && !useTime && child.pid !== undefined && process.platform === 'linux'
      ? setInterval(() => {
          try {
            const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
            if (m) polledKb = Math.max(polledKb, Number(m[1]));
          } catch {
            // gone
          }
        }, 20)
      : undefined;
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      if (poller) clearInterval(poller);
      cliChildren.delete(child);
      reject(error);
    });
    child.once('close', (code, signal) => {
      const wallMs = performance.now() - started;
      if (poller) clearInterval(poller);
      cliChildren.delete(child);
      const run: CliRun = { code, signal, stdout, stderr, wallMs };
      if (useTime) {
        const at = stderr.search(/\n?\s*Command being timed:/);
        const report = at === -1 ? '' : stderr.slice(at);
        if (at !== -1) run.stderr = stderr.slice(0, at);
        const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(report);
        if (m) run.peakRssBytes = Number(m[1]) * 1024;
        run.rssMethod = '/usr/bin/time -v';
        const user = /User time \(seconds\): ([\d.]+)/.exec(report);
        const system = /System time \(seconds\): ([\d.]+)/.exec(report);
        if (user && system) run.cpuMs = (Number(user[1]) + Number(system[1])) * 1000;
      } else if (poller) {
        run.peakRssBytes = polledKb * 1024;
        run.rssMethod = '/proc VmHWM polled every 20 ms';
      }
      resolve(run);
    });
  });
}

function cliFailure(what: string, run: CliRun): Error {
  return new Error(`${what} failed (${run.signal ?? `exit ${run.code}`}): ${(run.stderr.trim() || run.stdout.trim()).slice(0, 500)}`);
}

export interface ImportFigures {
  lines: number;
  wallMs: number;
  linesPerSec: number;
  peakRssBytes?: number;
  rssMethod?: string;
  cpuMs?: number;
  counts: { inserted: number; updated: number; unchanged: number };
}

/** `listings-api import FILE --json`, timed; throws unless it exits 0 having inserted `lines`. */
export async function importFile(file: string, lines: number, databaseUrl: string, measureRss: boolean): Promise<ImportFigures> {
  const run = await runCli(['import', file, '--json'], { ...process.env, DATABASE_URL: databaseUrl }, measureRss);
  if (run.code !== 0) throw cliFailure(`listings-api import ${file}`, run);
  const counts = JSON.parse(run.stdout) as ImportFigures['counts'];
  if (counts.inserted + counts.updated !== lines) throw new Error(`listings-api import ${file}: expected ${lines} lines, the CLI reports ${JSON.stringify(counts)}`);
  return {
    lines,
    wallMs: run.wallMs,
    linesPerSec: lines / (run.wallMs / 1000),
    peakRssBytes: run.peakRssBytes,
    rssMethod: run.rssMethod,
    cpuMs: run.cpuMs,
    counts,
  };
}

// ---------------------------------------------------------------------------------------------
// Data

interface Tenant {
  name: string;
  accountId: string;
  key: string;
  keyId: string;
  listings: number;
  /** Listing ids, in file order. */
  ids: string[];
}

/** The listing count of a small tenant: from 1 to 2 x mean - 1 (seeded: the same every run). */
function smallSize(mean: number, rand: () => number): number {
  return 1 + Math.floor(rand() * (2 * mean - 1));
}

// ---------------------------------------------------------------------------------------------
// Validity: every answer must be a 200

const problems: string[] = [];

function checkLoad(what: string, r: LoadResult | undefined): void {
  if (r === undefined) return;
  const other = Object.entries(r.statusCodes).filter(([code]) => code !== '200');
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0 || other.length > 0) {
    problems.push(`${what}: ${r.non2xx} non-2xx [${other.map(([c, n]) => `${c}: ${n}`).join(', ')}], ${r.errors} errors, ${r.timeouts} timeouts`);
  }
  if (r.requests === 0) problems.push(`${what}: no responses`);
}

function checkClient(what: string, r: ClientResult): void {
  const other = Object.entries(r.statusCodes).filter(([code]) => code !== '200');
  if (other.length > 0) problems.push(`${what}: answers other than 200 [${other.map(([c, n]) => `${c === '0' ? 'connection error' : c}: ${n}`).join(', ')}]`);
  if (r.requests === 0) problems.push(`${what}: no responses`);
}

// ---------------------------------------------------------------------------------------------
// One run: what its phases share

interface ScaleRun {
  s: Settings;
  workDir: string;
  dbUrl: string;
  /** The clock of the generated accounts and listings. */
  now: Date;
  /** Date.now() at the start, for the progress lines and the total time. */
  started: number;
  /** Written to bench/results/scale-latest.json at the end. */
  results: Record<string, unknown>;
  /** Every phase bracketed by probes, for the per-phase table of event-loop delay. */
  eldRows: Array<{ phase: string; probe: Probe }>;
  /** Both serving processes, for the check that request logging was on. */
  servers: Server[];
  /** A progress line, prefixed with the time since the start. */
  step: (text: string) => void;
}

/** The paths a load takes in turn, each with its own headers or the load's. */
type Paths = readonly (string | LoadRequest)[];

/** A measured autocannon load and the probe that closed it. */
interface Measurement {
  result: LoadResult;
  probe: Probe;
}

const auth = (t: Tenant) => ({ authorization: `Bearer ${t.key}` });
const baseHeaders = { host: API_HOST };
const listPath = (page: number, perPage: number) => `/v1/listings?page=${page}&per_page=${perPage}`;

const importLine = (f: ImportFigures) =>
  `${secs(f.wallMs)} wall${f.cpuMs === undefined ? '' : ` (CPU ${secs(f.cpuMs)})`}, ${int(f.linesPerSec)} lines/s, peak RSS ${f.peakRssBytes === undefined ? 'not measured' : mb(f.peakRssBytes)}`;
const clientLine = (r: ClientResult) => `${int(r.requests)} requests in ${int(r.wallMs)} ms: ${int(r.reqPerSec)} req/s, p50 ${dec(r.p50Ms)} ms, p99 ${dec(r.p99Ms)} ms, max ${dec(r.maxMs)} ms`;
const cpuPerRequest = (p: Probe, requests: number) => ((p.cpu_ms.user + p.cpu_ms.system) * 1000) / requests;
const eldLine = (p: Probe) => `event-loop delay p50 ${dec(p.eld_ms.p50 ?? NaN)} / p99 ${dec(p.eld_ms.p99 ?? NaN)} / max ${dec(p.eld_ms.max ?? NaN)} ms`;
/** A measurement: req/s and latency (autocannon), the server's CPU per request and its event-loop delay (probe). */
const loadLine = ({ result: r, probe: p }: Measurement) =>
  `${int(r.reqPerSec)} req/s, p50 ${dec(r.p50Ms)} ms, p99 ${dec(r.p99Ms)} ms; server CPU ${int(cpuPerRequest(p, r.requests))} µs/request; ${eldLine(p)}`;
const medianRps = (ms: readonly Measurement[]) => median(ms.map((m) => m.result.reqPerSec));
const medianP99 = (ms: readonly Measurement[]) => median(ms.map((m) => m.result.p99Ms));
const cpuOf = (ms: readonly Measurement[]) => median(ms.map((m) => cpuPerRequest(m.probe, m.result.requests)));

// ---------------------------------------------------------------------------------------------
// The serving process and its probe

async function startServer(run: ScaleRun, label: string, extraEnv: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const logFile = join(run.workDir, `${label}.log`);
  writeFileSync(logFile, '');
  const child = await startChild({
    name: label,
    // --expose-gc only for the last probe's full collection (probe(server, true)).
    args: ['--expose-gc', PROBE],
    cwd: ROOT,
    env: serviceEnv(port, run.dbUrl, run.s.serveNodeOptions === undefined ? extraEnv : { NODE_OPTIONS: run.s.serveNodeOptions, ...extraEnv }),
    port,
    stdoutFile: logFile,
    startTimeoutMs: 60_000,
  });
  const server: Server = { label, child, logFile, seq: 0, requests: 0 };
  run.servers.push(server);
  const idle = await probe(server);
  run.step(`${label}: started, RSS ${mb(idle.rss_bytes)} before any request.`);
  return server;
}

/** Runs `fn` between two probes; the second one's delay histogram is the phase's. */
async function phase<T>(run: ScaleRun, server: Server, name: string, fn: () => Promise<T>): Promise<{ value: T; probe: Probe }> {
  await probe(server);
  const value = await fn();
  const p = await probe(server);
  run.eldRows.push({ phase: `${server.label}: ${name}`, probe: p });
  return { value, probe: p };
}

/** One autocannon measurement: a warm-up (not counted), then the measured load, bracketed by probes. */
async function measure(run: ScaleRun, server: Server, name: string, paths: Paths, headers: Record<string, string>): Promise<Measurement> {
  const load = { port: server.child.port, connections: run.s.connections, headers: { ...baseHeaders, ...headers }, paths };
  const warmup = run.s.warmupS > 0 ? await runLoad({ ...load, durationS: run.s.warmupS }) : undefined;
  checkLoad(`${name} (warm-up)`, warmup);
  server.requests += warmup?.requests ?? 0;
  const { value: result, probe: p } = await phase(run, server, name, () => runLoad({ ...load, durationS: run.s.durationS }));
  checkLoad(name, result);
  server.requests += result.requests;
  return { result, probe: p };
}

/** `BENCH_RUNS` measurements of the same load, each printed. */
async function runsOf(run: ScaleRun, server: Server, name: string, paths: Paths, headers: Record<string, string>): Promise<Measurement[]> {
  const out: Measurement[] = [];
  for (let r = 0; r < run.s.runs; r++) {
    const m = await measure(run, server, name, paths, headers);
    out.push(m);
    log(`    ${name}, run ${r + 1}: ${loadLine(m)}`);
  }
  return out;
}

/** Each small tenant's first page once, `coldConcurrency` at a time. */
function readSmallFirstPages(run: ScaleRun, server: Server, data: DataSet): Promise<ClientResult> {
  return runEach({ port: server.child.port, concurrency: run.s.coldConcurrency, headers: baseHeaders, requests: smallFirstPages(data) });
}

const smallFirstPages = (data: DataSet): LoadRequest[] => data.small.map((t) => ({ path: listPath(1, 20), headers: auth(t) }));

// ---------------------------------------------------------------------------------------------

export async function runScale(): Promise<number> {
  const s = settings();
  const workDir = mkdtempSync(join(tmpdir(), 'listings-scale-'));
  const removeWorkDir = () => {
    if (!s.keep) rmSync(workDir, { recursive: true, force: true });
  };
  const killCliNow = () => {
    for (const child of cliChildren) child.kill('SIGKILL');
    cliChildren.clear();
  };
  cleanUpOnExit(() => {
    killCliNow();
    removeWorkDir();
  });

  const started = Date.now();
  const run: ScaleRun = {
    s,
    workDir,
    dbUrl: `file:${join(workDir, 'scale.db')}`,
    now: new Date(),
    started,
    results: { settings: s },
    eldRows: [],
    servers: [],
    step: (text) => log(`[${secs(Date.now() - started).padStart(6)}] ${text}`),
  };
  const loadStart = loadavg()[0]!;
  try {
    printIntroduction(s);
    const data = await createTenants(run);
    const files = await writeImportFiles(run, data);
    const imports = await importDataSet(run, data, files);
    const production = await runProductionSettings(run, data, files.aLine);
    const cachesOff = await runCachesOff(run, data);
    const logCheck = await checkRequestLogging(run);
    const million = s.skipMillion ? undefined : await importMillion(run);
    const report: ScaleReport = { data, imports, production, cachesOff, million, logCheck, loadStart };
    const rows = tableRows(run, report);
    printReport(run, report, rows);
    writeResults(run, report, rows);
    return problems.length === 0 ? 0 : 1;
  } finally {
    killCliNow();
    await stopAll();
    removeWorkDir();
    if (s.keep) log(`Kept the temp data (BENCH_KEEP=1): ${workDir}`);
  }
}

function printIntroduction(s: Settings): void {
  log(`Scale benchmark${s.quick ? ' (BENCH_SCALE_QUICK=1: a smaller data set, shorter loads)' : ''}: ${s.tenants} small tenants, tenant B of ${int(s.b)} listings, a tenant of ${int(s.big)}; ` +
    `${s.connections} connections, ${s.durationS} s per measurement after a ${s.warmupS} s warm-up, median of ${s.runs} run${s.runs === 1 ? '' : 's'} where noted.`);
  log(`Machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), ${mb(totalmem())} RAM, Node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at start. ` +
    'The load generator (this process), the server and the CLI share these cores: absolute figures move from run to run.');
  if (s.serveNodeOptions !== undefined) log(`The serving processes run with NODE_OPTIONS="${s.serveNodeOptions}" (BENCH_SERVE_NODE_OPTIONS); the CLI and the load generator without.`);
}

// ---------------------------------------------------------------------------------------------
// The data set, through the store and the real CLI

interface DataSet {
  small: Tenant[];
  /** The tenant whose listing is rewritten while B is read: the first small one. */
  tenantA: Tenant;
  tenantB: Tenant;
  big: Tenant;
  all: Tenant[];
  smallListings: number;
}

/** Accounts and keys, through the store: the small tenants, B and the big tenant (no listings yet). */
async function createTenants(run: ScaleRun): Promise<DataSet> {
  const { s } = run;
  const rand = prng(SEED);
  const small: Tenant[] = [];
  const t0 = Date.now();
  const store = openStore(run.dbUrl, { poolSize: 2 });
  const makeTenant = async (name: string, listings: number): Promise<Tenant> => {
    const { accountId, keyId, key } = await createBenchAccount(store, { name, label: 'scale benchmark', now: run.now });
    return { name, accountId, key, keyId, listings, ids: [] };
  };
  let big: Tenant;
  let tenantB: Tenant;
  try {
    await store.migrate();
    for (let i = 0; i < s.tenants; i++) small.push(await makeTenant(`Small Realty ${i + 1}`, smallSize(s.smallMean, rand)));
    tenantB = await makeTenant('Tenant B Realty', s.b);
    big = await makeTenant('Big Realty', s.big);
  } finally {
    await store.close();
  }
  const all = [...small, tenantB, big];
  run.step(`Created ${int(all.length)} accounts and ${int(all.length)} keys (one per tenant, limit raised to 1e9/min) through the store in ${secs(Date.now() - t0)}.`);
  return { small, tenantA: small[0]!, tenantB, big, all, smallListings: small.reduce((n, t) => n + t.listings, 0) };
}

interface ImportFiles {
  smallFile: string;
  bFile: string;
  bigFile: string;
  /** Tenant A's listing as imported, which the background loop rewrites. */
  aLine: string;
}

/** The import files, streamed to disk; each tenant's ids are collected as its lines are written. */
async function writeImportFiles(run: ScaleRun, data: DataSet): Promise<ImportFiles> {
  const { s, workDir, now } = run;
  const { small, tenantA, tenantB, big } = data;
  const t0 = Date.now();
  const smallFile = join(workDir, 'small.ndjson');
  let aLine = '';
  await writeLines(smallFile, (function* () {
    for (const [i, tenant] of small.entries()) {
      for (const { id, line } of generateListings(tenant.accountId, tenant.listings, now, SEED + 1 + i, { located: true })) {
        tenant.ids.push(id);
        if (tenant === tenantA && aLine === '') aLine = line;
        yield line;
      }
    }
  })());
  const bFile = join(workDir, 'tenant-b.ndjson');
  await writeLines(bFile, (function* () {
    for (const { id, line } of generateListings(tenantB.accountId, tenantB.listings, now, SEED + 100_001, { located: true })) {
      tenantB.ids.push(id);
      yield line;
    }
  })());
  const bigFile = join(workDir, 'big.ndjson');
  await writeLines(bigFile, (function* () {
    for (const { id, line } of generateListings(big.accountId, big.listings, now, SEED + 100_002, { located: true })) {
      big.ids.push(id);
      yield line;
    }
  })());
  run.step(`Generated the import files (${int(data.smallListings + s.b + s.big)} lines, ${mb(statSync(smallFile).size + statSync(bFile).size + statSync(bigFile).size)}) in ${secs(Date.now() - t0)}.`);
  return { smallFile, bFile, bigFile, aLine };
}

interface DataImports {
  small: ImportFigures;
  b: ImportFigures;
  big: ImportFigures;
  totalListings: number;
  dbBytes: number;
}

/** The three imports, through the real CLI: the small tenants, then B, then the big tenant. */
async function importDataSet(run: ScaleRun, data: DataSet, files: ImportFiles): Promise<DataImports> {
  const { s, workDir, dbUrl } = run;
  const small = await importFile(files.smallFile, data.smallListings, dbUrl, true);
  run.step(`import of the ${s.tenants} small tenants (${int(data.smallListings)} lines): ${importLine(small)}.`);
  const b = await importFile(files.bFile, s.b, dbUrl, true);
  run.step(`import of tenant B (${int(s.b)} lines): ${importLine(b)}.`);
  const big = await importFile(files.bigFile, s.big, dbUrl, true);
  run.step(`import of the big tenant (${int(s.big)} lines, into a database of ${int(data.smallListings + s.b)} listings): ${importLine(big)}.`);
  for (const f of [files.smallFile, files.bFile, files.bigFile]) rmSync(f, { force: true });
  run.results.imports = { small, b, big };
  const totalListings = data.smallListings + s.b + s.big;
  const dbBytes = statSync(join(workDir, 'scale.db')).size;
  if (s.keep) {
    // For what-if runs by hand against the kept database (a throw-away one: these keys open nothing else).
    writeFileSync(join(workDir, 'tenants.json'), `${JSON.stringify(data.all.map((t) => ({ name: t.name, accountId: t.accountId, key: t.key, listings: t.listings, ids: t.ids.slice(0, 20_000) })))}\n`);
  }
  const sizes = data.small.map((t) => t.listings);
  run.step(`Data: ${int(data.all.length)} tenants (${s.tenants} small of ${int(Math.min(...sizes))} to ${int(Math.max(...sizes))} listings, B of ${int(s.b)}, one of ${int(s.big)}), ${int(totalListings)} listings, ${int(data.all.length)} keys; SQLite file ${mb(dbBytes)}.`);
  return { small, b, big, totalListings, dbBytes };
}

// =============================================================================================
// Server 1: production settings (response caches on). Cold mixed load, then B under A's writes.

interface ProductionFigures {
  mixed: MixedColdFigures;
  /** The small tenants' first pages again (warm, caches on). */
  warm: ClientResult;
  hot: TenantBFigures;
  end: Probe;
  endGc: Probe;
}

async function runProductionSettings(run: ScaleRun, data: DataSet, aLine: string): Promise<ProductionFigures> {
  log('');
  log(`Server 1: production settings (READ_CACHE_TTL_MS ${process.env.READ_CACHE_TTL_MS ?? 'unset: 5000 ms'}), a fresh process: every tenant is read for the first time.`);
  const prod = await startServer(run, 'production-settings', {});
  const mixed = await mixedColdLoad(run, prod, data);

  const warm = await phase(run, prod, 'small tenants, repeated read', () => readSmallFirstPages(run, prod, data));
  checkClient('small tenants, repeated read (caches on)', warm.value);
  prod.requests += warm.value.requests;
  run.step(`Small tenants, the same first pages again (warm, caches on): ${clientLine(warm.value)}`);

  const hot = await tenantBUnderWrites(run, prod, data, aLine);

  const end = await probe(prod);
  const endGc = await probe(prod, true);
  run.step(`Server 1 after its phases: RSS ${mb(end.rss_bytes)} (${memoryParts(end)}), with every tenant's index and the response caches; after a full garbage collection RSS ${mb(endGc.rss_bytes)} (${memoryParts(endGc)}).`);
  await prod.child.stop(15_000);
  return { mixed, warm: warm.value, hot, end, endGc };
}

interface MixedColdFigures {
  probe: Probe;
  smallCold: ClientResult;
  bigReads: ClientResult;
  bReads: ClientResult;
  /** The first answer of each big tenant, which waited for its index to be built. */
  bigFirstMs: number;
  bFirstMs: number;
}

/** In the fresh process: each small tenant's first page once while the big tenant and B are read cold. */
async function mixedColdLoad(run: ScaleRun, prod: Server, data: DataSet): Promise<MixedColdFigures> {
  const { s } = run;
  const coldRand = prng(SEED + 7);
  let smallDone = false;
  /**
   * Reads of a big tenant, 2 at a time, while the small tenants are read for the first time:
   * list pages and details at random. The first ones wait for the tenant's index to be built.
   */
  const coldReads = (t: Tenant) => {
    const pages = Math.ceil(t.listings / 20);
    let n = 0;
    return runWhile({
      port: prod.child.port,
      concurrency: 2,
      headers: baseHeaders,
      next: () => {
        if (smallDone && n > 0) return undefined;
        n++;
        const r = coldRand();
        if (r < 0.3) return { path: listPath(1, 20), headers: auth(t) };
        if (r < 0.6) return { path: listPath(1 + Math.floor(coldRand() * pages), 20), headers: auth(t) };
        return { path: `/v1/listings/${t.ids[Math.floor(coldRand() * t.ids.length)]!}`, headers: auth(t) };
      },
    });
  };
  const mixed = await phase(run, prod, 'mixed cold load', async () => {
    const bigReads = coldReads(data.big);
    const bReads = coldReads(data.tenantB);
    const smallCold = await readSmallFirstPages(run, prod, data);
    smallDone = true;
    return { smallCold, bigReads: await bigReads, bReads: await bReads };
  });
  const { smallCold, bigReads, bReads } = mixed.value;
  checkClient('mixed cold load: small tenants', smallCold);
  checkClient('mixed cold load: big tenant', bigReads);
  checkClient('mixed cold load: tenant B', bReads);
  prod.requests += smallCold.requests + bigReads.requests + bReads.requests;
  // The first request of each big tenant waited for its index to be built.
  const bigFirstMs = bigReads.latencies[0] ?? NaN;
  const bFirstMs = bReads.latencies[0] ?? NaN;
  run.step(`Mixed cold load (${secs(mixed.probe.since_ms)}): the ${s.tenants} small tenants' first reads (${s.coldConcurrency} at a time) while the ${int(s.big)} tenant and B are read cold (2 connections each).`);
  log(`    small tenants, first read: ${clientLine(smallCold)}`);
  log(`    ${int(s.big)} tenant: first answer after ${int(bigFirstMs)} ms (index built), then ${int(bigReads.requests)} reads, p99 ${dec(bigReads.p99Ms)} ms; tenant B: first answer after ${int(bFirstMs)} ms, ${int(bReads.requests)} reads`);
  log(`    ${eldLine(mixed.probe)} over ${int(mixed.probe.eld_ms.count)} samples; server CPU ${int(mixed.probe.cpu_ms.user + mixed.probe.cpu_ms.system)} ms`);
  return { probe: mixed.probe, smallCold, bigReads, bReads, bigFirstMs, bFirstMs };
}

// --- Tenant B read hot while tenant A is written -------------------------------------------------

interface LoopStats { runs: number; failures: string[]; wallMs: number[] }

/** The imports of tenant A's listing: each sets a new view_count, the last of which the server must show. */
interface TenantAWrites {
  aLine: string;
  serial: number;
  lastViewCount?: number;
}

/** A background loop: one CLI command about every `writeIntervalMs` until stopped. */
function startBackgroundLoop(run: ScaleRun, kind: 'import' | 'key list', tenantA: Tenant, writes: TenantAWrites) {
  const cliEnv = { ...process.env, DATABASE_URL: run.dbUrl };
  const stats: LoopStats = { runs: 0, failures: [], wallMs: [] };
  let stopped = false;
  let wake: (() => void) | undefined;
  const done = (async () => {
    while (!stopped) {
      const began = performance.now();
      let cli: CliRun;
      if (kind === 'import') {
        const line = JSON.parse(writes.aLine) as Record<string, unknown>;
        const viewCount = 1_000_000 + ++writes.serial;
        line.view_count = viewCount;
        const file = join(run.workDir, 'tenant-a-change.ndjson');
        writeFileSync(file, `${JSON.stringify(line)}\n`);
        cli = await runCli(['import', file, '--json'], cliEnv);
        if (cli.code === 0) {
          const counts = JSON.parse(cli.stdout) as { updated: number; unchanged: number };
          if (counts.updated !== 1 || counts.unchanged !== 0) stats.failures.push(`import reported ${cli.stdout.trim()}`);
          else writes.lastViewCount = viewCount;
        }
      } else {
        cli = await runCli(['key', 'list', '--account', tenantA.accountId, '--json'], cliEnv);
      }
      stats.runs++;
      stats.wallMs.push(cli.wallMs);
      if (cli.code !== 0) stats.failures.push(cliFailure(`listings-api ${kind}`, cli).message);
      const wait = run.s.writeIntervalMs - (performance.now() - began);
      if (wait > 0 && !stopped) await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, wait);
      });
    }
  })();
  return {
    async stop(): Promise<LoopStats> {
      stopped = true;
      wake?.();
      await done;
      return stats;
    },
  };
}

interface TenantBFigures {
  rounds: Record<'writes' | 'control', Array<Measurement & { loop: LoopStats }>>;
  writesMedian: number;
  controlMedian: number;
  ratio: number;
  cpuRatio: number;
  aVisible: string;
}

/** Tenant B read hot, in rounds, while A is imported or while the control loop runs. */
async function tenantBUnderWrites(run: ScaleRun, prod: Server, data: DataSet, aLine: string): Promise<TenantBFigures> {
  const { s } = run;
  const { tenantA, tenantB } = data;
  const bPages = Math.ceil(s.b / 20);
  const bPaths: LoadRequest[] = spread(tenantB.ids, 1000).map((id, i) =>
    i % 10 === 0 ? { path: listPath(1 + ((i / 10) % Math.min(100, bPages)), 20) } : { path: `/v1/listings/${id}` },
  );
  const writes: TenantAWrites = { aLine, serial: 0 };
  const rounds: TenantBFigures['rounds'] = { writes: [], control: [] };
  run.step(`Tenant B read hot (${bPaths.length} paths: 9 details to 1 list page) while a loop runs a CLI command about every ${s.writeIntervalMs} ms: ` +
    `"import" of one changed listing of tenant A, or "key list --account A" (writes nothing) as the control; ${s.runs} round${s.runs === 1 ? '' : 's'}, order alternating.`);
  // B is made hot first (its index, caches and the JIT), so that the first measured run is not the coldest.
  const bWarm = await runLoad({
    port: prod.child.port,
    connections: s.connections,
    headers: { ...baseHeaders, ...auth(tenantB) },
    paths: bPaths,
    durationS: Math.max(s.warmupS, s.durationS),
  });
  checkLoad('tenant B, heating up', bWarm);
  prod.requests += bWarm.requests;
  for (let round = 0; round < s.runs; round++) {
    const order: Array<'control' | 'writes'> = round % 2 === 0 ? ['control', 'writes'] : ['writes', 'control'];
    for (const which of order) {
      const loop = startBackgroundLoop(run, which === 'writes' ? 'import' : 'key list', tenantA, writes);
      const m = await measure(run, prod, `tenant B hot, ${which === 'writes' ? 'A imported' : 'control loop'}`, bPaths, auth(tenantB));
      const stats = await loop.stop();
      rounds[which].push({ ...m, loop: stats });
      for (const f of stats.failures) problems.push(`background ${which} loop: ${f}`);
      log(`    round ${round + 1}, ${which === 'writes' ? 'A imported ' : 'control    '}: ${loadLine(m)}; ${stats.runs} CLI runs (median ${int(median(stats.wallMs))} ms each)`);
    }
  }
  const writesMedian = medianRps(rounds.writes);
  const controlMedian = medianRps(rounds.control);
  const ratio = writesMedian / controlMedian;
  // The same comparison by the server's own CPU per request (control over writes: < 1 when B's requests cost more under A's writes).
  const cpuRatio = cpuOf(rounds.control) / cpuOf(rounds.writes);
  const aVisible = await checkLastWriteVisible(prod, tenantA, writes);
  run.step(`Tenant B: ${int(writesMedian)} req/s while A is imported vs ${int(controlMedian)} req/s with the control loop (medians): ratio ${dec(ratio)}; by server CPU per request ${dec(cpuRatio)} (${int(cpuOf(rounds.control))} vs ${int(cpuOf(rounds.writes))} µs). A's last import visible to the server: ${aVisible}.`);
  return { rounds, writesMedian, controlMedian, ratio, cpuRatio, aVisible };
}

/** The writes really reached the serving process: tenant A's listing shows the last one. */
async function checkLastWriteVisible(prod: Server, tenantA: Tenant, writes: TenantAWrites): Promise<string> {
  if (writes.lastViewCount === undefined) return 'no write was made';
  const aId = JSON.parse(writes.aLine).id as string;
  const res = await httpGet(prod.child.port, `/v1/listings/${aId}`, { ...baseHeaders, ...auth(tenantA) });
  const seen = res.status === 200 ? (JSON.parse(res.body.toString('utf8')) as { view_count: number }).view_count : undefined;
  if (seen !== writes.lastViewCount) problems.push(`tenant A's listing shows view_count ${seen} (status ${res.status}) after the import that set ${writes.lastViewCount}`);
  return seen === writes.lastViewCount ? `yes (view_count ${seen} after ${writes.serial} imports)` : `NO (view_count ${seen}, expected ${writes.lastViewCount})`;
}

// =============================================================================================
// Server 2: caches off. The 100k tenant, then the small tenants.

interface CachesOffFigures {
  /** The big tenant's first read, alone: its index is built. */
  build: { value: ClientResult; probe: Probe };
  pages: PageFigures;
  detail: { ids: number; runs: Measurement[]; medianReqPerSec: number; medianP99Ms: number };
  filtered: FilteredFigures;
  search: SearchFigures;
  feed: ChangeFeedFigures;
  small: { cold: ClientResult; warm: ClientResult; sustained: Measurement };
  end: Probe;
  endGc: Probe;
}

async function runCachesOff(run: ScaleRun, data: DataSet): Promise<CachesOffFigures> {
  const { s } = run;
  log('');
  log('Server 2: READ_CACHE_TTL_MS=0 (response caches off; the per-tenant index stays), a fresh process.');
  const off = await startServer(run, 'caches-off', { READ_CACHE_TTL_MS: '0' });
  const bigHeaders = auth(data.big);
  const build = await phase(run, off, `${int(s.big)} tenant, first read`, () =>
    runEach({ port: off.child.port, concurrency: 1, headers: { ...baseHeaders, ...bigHeaders }, requests: [{ path: listPath(1, 20) }] }),
  );
  checkClient('big tenant, first read', build.value);
  off.requests += build.value.requests;
  run.step(`${int(s.big)} tenant, first read (its index is built): ${int(build.value.maxMs)} ms; ${eldLine(build.probe)}.`);

  const pages = await pagesOfBigTenant(run, off, bigHeaders);
  const detailIds = spread(data.big.ids, s.detailIds);
  run.step(`${int(s.big)} tenant, detail rotating over ${int(detailIds.length)} different ids:`);
  const details = await runsOf(run, off, `detail over ${int(detailIds.length)} ids`, detailIds.map((id) => `/v1/listings/${id}`), bigHeaders);
  const detail = { ids: detailIds.length, runs: details, medianReqPerSec: medianRps(details), medianP99Ms: medianP99(details) };
  const filtered = await filteredPage(run, off, bigHeaders);
  const search = await searchAndPlace(run, off, bigHeaders);
  const feed = await changeFeed(run, off, bigHeaders);
  const small = await smallTenantsCachesOff(run, off, data);

  const end = await probe(off);
  const endGc = await probe(off, true);
  run.step(`Server 2 after the bench: RSS ${mb(end.rss_bytes)} (${memoryParts(end)}), serving the ${int(s.big)} tenant and the ${s.tenants} small ones; after a full garbage collection RSS ${mb(endGc.rss_bytes)} (${memoryParts(endGc)}).`);
  await off.child.stop(15_000);
  return { build, pages, detail, filtered, search, feed, small, end, endGc };
}

interface PageFigures {
  list20: Measurement[];
  list20Rps: number;
  list20P99: number;
  lastPage: number;
  first100: Measurement[];
  last100: Measurement[];
  first100Rps: number;
  last100Rps: number;
  /** Page 1's server CPU per request over page `lastPage`'s. */
  cpuRatio: number;
}

/** List page 1 at per_page=20, then the first and the last page at per_page=100, alternating. */
async function pagesOfBigTenant(run: ScaleRun, off: Server, bigHeaders: Record<string, string>): Promise<PageFigures> {
  const { s } = run;
  // Sanity of what is measured: the first and last pages at per_page=100 answer full pages.
  const lastPage = Math.ceil(s.big / 100);
  for (const [page, expected] of [[1, 100], [lastPage, s.big - (lastPage - 1) * 100]] as const) {
    const res = await httpGet(off.child.port, listPath(page, 100), { ...baseHeaders, ...bigHeaders });
    const json = res.status === 200 ? (JSON.parse(res.body.toString('utf8')) as { items: unknown[]; total: number }) : undefined;
    if (json?.items.length !== expected || json.total !== s.big) throw new Error(`page ${page} at per_page=100 answered ${res.status} with ${json?.items.length} items of ${json?.total}, expected ${expected} of ${s.big}`);
  }

  run.step(`${int(s.big)} tenant, list page 1 at per_page=20:`);
  const list20 = await runsOf(run, off, 'list page 1, per_page=20', [listPath(1, 20)], bigHeaders);
  run.step(`${int(s.big)} tenant, first and last page (${lastPage}) at per_page=100, alternating:`);
  const first100: Measurement[] = [];
  const last100: Measurement[] = [];
  for (let r = 0; r < s.runs; r++) {
    const order = r % 2 === 0 ? (['first', 'last'] as const) : (['last', 'first'] as const);
    for (const which of order) {
      const page = which === 'first' ? 1 : lastPage;
      const m = await measure(run, off, `per_page=100, page ${page}`, [listPath(page, 100)], bigHeaders);
      (which === 'first' ? first100 : last100).push(m);
      log(`    per_page=100, page ${String(page).padEnd(5)} run ${r + 1}: ${loadLine(m)}`);
    }
  }
  return {
    list20,
    list20Rps: medianRps(list20),
    list20P99: medianP99(list20),
    lastPage,
    first100,
    last100,
    first100Rps: medianRps(first100),
    last100Rps: medianRps(last100),
    cpuRatio: cpuOf(first100) / cpuOf(last100),
  };
}

interface FilteredFigures {
  path: string;
  total: number;
  first: { value: ClientResult; probe: Probe };
  runs: Measurement[];
  medianReqPerSec: number;
  medianP99Ms: number;
}

/**
 * D23: a filtered and sorted page. Its first request computes the view of the index (once per
 * index generation, in slices); the load then reads pages of it, as it would an unfiltered one.
 */
async function filteredPage(run: ScaleRun, off: Server, bigHeaders: Record<string, string>): Promise<FilteredFigures> {
  const path = '/v1/listings?page=1&per_page=20&usage_type=Office,Retail&min_size_sqft=1000&sort=-price';
  const first = await phase(run, off, 'first filtered page (view computed)', () =>
    runEach({ port: off.child.port, concurrency: 1, headers: { ...baseHeaders, ...bigHeaders }, requests: [{ path }] }),
  );
  checkClient('first filtered page', first.value);
  off.requests += first.value.requests;
  const total = (JSON.parse((await httpGet(off.child.port, path, { ...baseHeaders, ...bigHeaders })).body.toString('utf8')) as { total: number }).total;
  run.step(`${int(run.s.big)} tenant, filtered and sorted page 1 at per_page=20 (${path.split('?')[1]}; ${int(total)} match), first request ${dec(first.value.maxMs, 1)} ms; ${eldLine(first.probe)}:`);
  const runs = await runsOf(run, off, 'filtered page 1, per_page=20', [path], bigHeaders);
  return { path, total, first, runs, medianReqPerSec: medianRps(runs), medianP99Ms: medianP99(runs) };
}

/** One kind of D26-D28 request over several queries: the first request of each (its view or counts computed), then the load. */
interface SearchLoad {
  queries: number;
  /** Each query's first request, one at a time: what computing its view (or counts) costs. */
  first: ClientResult;
  /** How many listings the queries select, the fewest and the most. */
  matches: { min: number; max: number };
  runs: Measurement[];
  medianReqPerSec: number;
  medianP99Ms: number;
}

interface SearchFigures {
  q: SearchLoad;
  facets: SearchLoad;
  facetsFiltered: SearchLoad;
  near: SearchLoad;
}

/** Words of the bench's titles, building names and streets (dataset.ts), one per query of `q`. */
const SEARCH_WORDS = ['marina', 'bright', 'office', 'cafe', 'orchard', 'tower', 'spacious', 'warehouse', 'keppel', 'robinson', 'fitted', 'kiosk', 'harbour', 'plaza', 'quiet', 'clinic', 'changi', 'exchange', 'sea', 'prime'];
/** Points on the island (dataset.ts places its buildings there), one per query of `near`. */
const NEAR_POINTS = Array.from({ length: 20 }, (_, i) => `${(1.26 + (i % 5) * 0.04).toFixed(4)},${(103.66 + Math.floor(i / 5) * 0.08).toFixed(4)}`);

/**
 * D26-D28 on the big tenant, caches off: a one-word `q`, the facets without a filter and with two,
 * and `near` with 5 km, each over several queries in turn. A query's first request computes its
 * view (or counts) from the tenant's index, once per index generation; the load then reads pages
 * of it. Both are reported: the first requests one at a time, and the load.
 */
async function searchAndPlace(run: ScaleRun, off: Server, bigHeaders: Record<string, string>): Promise<SearchFigures> {
  const q = await searchLoad(run, off, bigHeaders, 'one-word q, page 1 at per_page=20', SEARCH_WORDS.map((w) => `/v1/listings?per_page=20&q=${w}`));
  const facets = await searchLoad(run, off, bigHeaders, 'facets, no filter', ['/v1/listings/facets']);
  const facetsFiltered = await searchLoad(run, off, bigHeaders, 'facets, two filters', SEARCH_WORDS.slice(0, 10).map((w) => `/v1/listings/facets?usage_type=Office,Retail&q=${w}`));
  const near = await searchLoad(run, off, bigHeaders, 'near 5 km, page 1 at per_page=20', NEAR_POINTS.map((p) => `/v1/listings?per_page=20&near=${p}&radius_m=5000`));
  return { q, facets, facetsFiltered, near };
}

async function searchLoad(run: ScaleRun, off: Server, bigHeaders: Record<string, string>, name: string, paths: string[]): Promise<SearchLoad> {
  const headers = { ...baseHeaders, ...bigHeaders };
  const first = await phase(run, off, `${name}: first requests`, () => runEach({ port: off.child.port, concurrency: 1, headers, requests: paths.map((path) => ({ path })) }));
  checkClient(`${name}: first requests`, first.value);
  off.requests += first.value.requests;
  const totals: number[] = [];
  for (const path of paths) {
    const res = await httpGet(off.child.port, path, headers);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
    totals.push((JSON.parse(res.body.toString('utf8')) as { total: number }).total);
  }
  const matches = { min: Math.min(...totals), max: Math.max(...totals) };
  run.step(`${int(run.s.big)} tenant, ${name} over ${paths.length} queries (${int(matches.min)} to ${int(matches.max)} match): first request of each ${clientLine(first.value)}:`);
  const runs = await runsOf(run, off, name, paths, bigHeaders);
  return { queries: paths.length, first: first.value, matches, runs, medianReqPerSec: medianRps(runs), medianP99Ms: medianP99(runs) };
}

interface ChangeFeedFigures {
  replay: { events: number; requests: number; ms: number; cursor: string };
  polls: Measurement[];
  pollRps: number;
  pollP99: number;
}

/** D22: replaying the whole feed from no cursor (what a new mirror does), then polling at its end. */
async function changeFeed(run: ScaleRun, off: Server, bigHeaders: Record<string, string>): Promise<ChangeFeedFigures> {
  const { s } = run;
  const replay = await phase(run, off, 'change feed replay', async () => {
    const t0 = performance.now();
    let cursor: string | undefined;
    let events = 0;
    let requests = 0;
    for (;;) {
      const res = await httpGet(off.child.port, `/v1/listings/changes?limit=1000${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, { ...baseHeaders, ...bigHeaders });
      requests++;
      if (res.status !== 200) throw new Error(`the change feed answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
      const page = JSON.parse(res.body.toString('utf8')) as { items: unknown[]; next_cursor: string; has_more: boolean };
      events += page.items.length;
      cursor = page.next_cursor;
      if (!page.has_more) break;
    }
    return { events, requests, ms: performance.now() - t0, cursor: cursor! };
  });
  off.requests += replay.value.requests;
  if (replay.value.events !== s.big) problems.push(`the change feed replay gave ${replay.value.events} events, expected ${s.big}`);
  run.step(`${int(s.big)} tenant, change feed replayed from no cursor at limit=1000: ${int(replay.value.events)} events in ${int(replay.value.requests)} requests, ${secs(replay.value.ms)} (${int(replay.value.events / (replay.value.ms / 1000))} events/s); ${eldLine(replay.probe)}.`);
  run.step(`${int(s.big)} tenant, change feed polled at its end (no new events):`);
  const polls = await runsOf(run, off, 'change feed at its end', [`/v1/listings/changes?cursor=${encodeURIComponent(replay.value.cursor)}`], bigHeaders);
  return { replay: replay.value, polls, pollRps: medianRps(polls), pollP99: medianP99(polls) };
}

/** Small tenants, caches off: first read of each (index built) vs repeated (index there), then sustained. */
async function smallTenantsCachesOff(run: ScaleRun, off: Server, data: DataSet): Promise<CachesOffFigures['small']> {
  const { s } = run;
  const cold = await phase(run, off, 'small tenants, first read', () => readSmallFirstPages(run, off, data));
  const warm = await phase(run, off, 'small tenants, repeated read', () => readSmallFirstPages(run, off, data));
  checkClient('small tenants, first read (caches off)', cold.value);
  checkClient('small tenants, repeated read (caches off)', warm.value);
  off.requests += cold.value.requests + warm.value.requests;
  run.step(`Small tenants (caches off), first page of each, ${s.coldConcurrency} at a time:`);
  log(`    first read (cold): ${clientLine(cold.value)}; ${eldLine(cold.probe)}`);
  log(`    repeated (warm):   ${clientLine(warm.value)}; ${eldLine(warm.probe)}`);
  const sustained = await measure(run, off, `small tenants, ${s.tenants} keys rotating`, smallFirstPages(data), {});
  run.step(`Small tenants (caches off), sustained: ${s.connections} connections rotating over the ${s.tenants} keys: ${loadLine(sustained)}`);
  return { cold: cold.value, warm: warm.value, sustained };
}

/** Logging really was on: one line per request at least. Removes the logs unless BENCH_KEEP=1. */
async function checkRequestLogging(run: ScaleRun): Promise<string[]> {
  const logCheck: string[] = [];
  for (const server of run.servers) {
    const lines = await countLines(server.logFile);
    if (lines < server.requests) logCheck.push(`WARNING: ${server.label}: ${int(lines)} log lines for ${int(server.requests)} requests: was request logging on?`);
    else logCheck.push(`${server.label}: ${int(lines)} log lines for ${int(server.requests)} requests (request logging on).`);
    if (!run.s.keep) rmSync(server.logFile, { force: true });
  }
  return logCheck;
}

// =============================================================================================
// 1,000,000 listings: peak RSS of the import (the servers are stopped: nothing else runs).

type MillionFigures = ImportFigures & { generateMs: number; fileBytes: number };

async function importMillion(run: ScaleRun): Promise<MillionFigures> {
  const { s, workDir, now } = run;
  log('');
  const millionDb = `file:${join(workDir, 'million.db')}`;
  const mStore = openStore(millionDb, { poolSize: 2 });
  const owner = randomUUID();
  try {
    await mStore.migrate();
    await mStore.accounts.create({ id: owner, name: 'Million Realty', kind: 'organisation', created_at: now.toISOString() });
  } finally {
    await mStore.close();
  }
  const file = join(workDir, 'million.ndjson');
  const t0 = Date.now();
  await writeLines(file, (function* () {
    for (const { line } of generateListings(owner, s.million, now, SEED + 100_003)) yield line;
  })());
  const generateMs = Date.now() - t0;
  const fileBytes = statSync(file).size;
  run.step(`Generated ${int(s.million)} lines (${mb(fileBytes)}) in ${secs(generateMs)}, streamed to disk; importing into a fresh database${haveTime ? ' under /usr/bin/time -v' : ' (no /usr/bin/time: peak RSS from /proc VmHWM)'}...`);
  const million = { ...(await importFile(file, s.million, millionDb, true)), generateMs, fileBytes };
  run.step(`import of ${int(s.million)} listings: ${importLine(million)} (${million.rssMethod ?? 'no method available'}).`);
  rmSync(file, { force: true });
  for (const suffix of ['', '-wal', '-shm']) rmSync(join(workDir, `million.db${suffix}`), { force: true });
  return million;
}

// =============================================================================================
// The report

interface ScaleReport {
  data: DataSet;
  imports: DataImports;
  production: ProductionFigures;
  cachesOff: CachesOffFigures;
  /** Undefined when skipped (BENCH_SKIP_MILLION=1). */
  million: MillionFigures | undefined;
  logCheck: string[];
  /** The load average at the start. */
  loadStart: number;
}

/** One row of the issue's table: what, the figure, the target, whether it is met (undefined: no target). */
type TableRow = [string, string, string, boolean | undefined];

function tableRows({ s }: ScaleRun, { imports, production, cachesOff, million }: ScaleReport): TableRow[] {
  const { pages, detail, filtered, search, feed } = cachesOff;
  const searchRow = (label: string, load: SearchLoad, goal: number): TableRow => [
    `${int(s.big)} tenant, caches off: ${label} (${load.queries} queries in turn)`,
    `${int(load.medianReqPerSec)} req/s, p99 ${dec(load.medianP99Ms, 1)} ms; first request of each p50 ${dec(load.first.p50Ms, 1)} ms, max ${dec(load.first.maxMs, 1)} ms`,
    `>= ${int(goal)} req/s, p99 < 50 ms`,
    load.medianReqPerSec >= goal && load.medianP99Ms < 50,
  ];
  const { mixed, hot } = production;
  const { replay } = feed;
  const eldMixedP99 = mixed.probe.eld_ms.p99 ?? NaN;
  return [
    [`${int(s.big)} tenant, caches off: list page 1 at per_page=20`, `${int(pages.list20Rps)} req/s (p99 ${dec(pages.list20P99, 1)} ms)`, '>= 2,000 req/s', pages.list20Rps >= 2000],
    [`${int(s.big)} tenant, caches off: last page / first page at per_page=100`, `${dec(pages.last100Rps / pages.first100Rps)} (last ${int(pages.last100Rps)}, first ${int(pages.first100Rps)} req/s; by CPU per request ${dec(pages.cpuRatio)})`, 'last >= 0.8 x first', pages.last100Rps >= 0.8 * pages.first100Rps],
    [`${int(s.big)} tenant, caches off: detail over ${int(detail.ids)} different ids`, `${int(detail.medianReqPerSec)} req/s, p99 ${dec(detail.medianP99Ms, 1)} ms`, '>= 5,000 req/s, p99 < 20 ms', detail.medianReqPerSec >= 5000 && detail.medianP99Ms < 20],
    [`${int(s.big)} tenant, caches off: filtered and sorted page 1 at per_page=20 / unfiltered`, `${dec(filtered.medianReqPerSec / pages.list20Rps)} (${int(filtered.medianReqPerSec)} req/s, p99 ${dec(filtered.medianP99Ms, 1)} ms; ${int(filtered.total)} match; first request ${dec(filtered.first.value.maxMs, 1)} ms)`, 'about 1', undefined],
    searchRow('one-word q (D26), page 1 at per_page=20', search.q, 1000),
    searchRow('facets (D27), no filter', search.facets, 500),
    searchRow('facets (D27), two filters', search.facetsFiltered, 1000),
    searchRow('near 5 km (D28), page 1 at per_page=20', search.near, 1000),
    [`${int(s.big)} tenant: change feed replayed from no cursor (limit=1000)`, `${int(replay.events / (replay.ms / 1000))} events/s (${secs(replay.ms)} for ${int(replay.events)})`, '-', undefined],
    [`${int(s.big)} tenant, caches off: change feed polled at its end`, `${int(feed.pollRps)} req/s, p99 ${dec(feed.pollP99, 1)} ms`, '-', undefined],
    [`tenant B (${int(s.b)}) read hot while A gets a one-listing import about every ${dec(s.writeIntervalMs / 1000, 1)} s, vs an equal non-writing load`, `${dec(hot.ratio)} (${int(hot.writesMedian)} vs ${int(hot.controlMedian)} req/s; by CPU per request ${dec(hot.cpuRatio)})`, '>= 0.9', hot.ratio >= 0.9],
    [`event-loop delay p99 under mixed cold load (${s.tenants} tenants read for the first time, ${int(s.big)} tenant cold)`, `${dec(eldMixedP99)} ms (max ${dec(mixed.probe.eld_ms.max ?? NaN, 1)} ms)`, '< 10 ms', eldMixedP99 < 10],
    [`import of ${int(s.big)} listings (wall time, the real CLI)`, `${secs(imports.big.wallMs)} (${int(imports.big.linesPerSec)} lines/s${imports.big.cpuMs === undefined ? '' : `; CPU ${secs(imports.big.cpuMs)}`})`, '<= 6 s', imports.big.wallMs <= 6000],
    [`peak RSS of import of ${int(s.million)} listings`, million === undefined ? 'skipped (BENCH_SKIP_MILLION=1)' : million.peakRssBytes === undefined ? 'not measured' : `${mb(million.peakRssBytes)} (${secs(million.wallMs)}, ${int(million.linesPerSec)} lines/s)`, '<= 300 MB', million?.peakRssBytes === undefined ? undefined : million.peakRssBytes <= 300 * 1024 * 1024],
    [`RSS of the serving process after the bench, caches off (${int(s.big)} tenant + ${s.tenants} small indexed)`, `${mb(cachesOff.end.rss_bytes)} (after a full GC ${mb(cachesOff.endGc.rss_bytes)})`, '<= 250 MB', cachesOff.end.rss_bytes <= 250 * 1024 * 1024],
    [`RSS of the serving process after the bench, production settings (every tenant indexed, caches on)`, `${mb(production.end.rss_bytes)} (after a full GC ${mb(production.endGc.rss_bytes)})`, '<= 250 MB', production.end.rss_bytes <= 250 * 1024 * 1024],
  ];
}

/** The table, the figures around it, the per-phase event-loop table and the run's validity. */
function printReport(run: ScaleRun, report: ScaleReport, rows: TableRow[]): void {
  const { s } = run;
  const { data, imports, production, cachesOff, million } = report;
  const small = cachesOff.small;
  log('');
  printTable(['what', 'measured', 'target', ''], rows.map(([what, value, target, ok]) => [what, value, target, ok === undefined ? '-' : ok ? 'met' : 'MISSED']));
  log('');
  log(`Tenants: ${int(data.all.length)} (${s.tenants} small + B + the ${int(s.big)} tenant), ${int(imports.totalListings)} listings; keys: ${int(data.all.length)} (one per tenant, all used).`);
  log('Small tenants, first page (per_page=20), each tenant once, ' + `${s.coldConcurrency} at a time:`);
  const clientRow = (label: string, r: ClientResult | LoadResult) => [label, int(r.reqPerSec), dec(r.p50Ms), dec(r.p99Ms), dec(r.maxMs)];
  printTable(['', 'req/s', 'p50 ms', 'p99 ms', 'max ms'], [
    clientRow('cold, caches on (during the mixed cold load)', production.mixed.smallCold),
    clientRow('warm, caches on (repeated)', production.warm),
    clientRow('cold, caches off (first read: index built)', small.cold),
    clientRow('warm, caches off (repeated: index there)', small.warm),
    clientRow(`warm, caches off, sustained (${s.connections} connections, autocannon)`, small.sustained.result),
  ], 1);
  log(`First answer of a big tenant in a fresh process (its index built): ${int(s.big)} tenant ${int(cachesOff.build.value.maxMs)} ms alone (caches off), ${int(production.mixed.bigFirstMs)} ms during the mixed cold load; tenant B ${int(production.mixed.bFirstMs)} ms during it.`);
  log(`Import rate (wall time of the CLI, start-up included): small tenants ${int(imports.small.linesPerSec)} lines/s, B ${int(imports.b.linesPerSec)} lines/s, ${int(s.big)} tenant ${int(imports.big.linesPerSec)} lines/s` +
    (million === undefined ? '' : `, ${int(s.million)} listings ${int(million.linesPerSec)} lines/s`) + '.');
  const peaks: Array<[string, ImportFigures]> = [['small', imports.small], ['B', imports.b], [int(s.big), imports.big], ...(million === undefined ? [] : [[int(s.million), million] as [string, ImportFigures]])];
  log(`Peak RSS of the imports: ${peaks.map(([n, f]) => `${n} ${f.peakRssBytes === undefined ? '-' : mb(f.peakRssBytes)}`).join(', ')} (${imports.big.rssMethod ?? 'not measured'}).`);
  log('');
  log('Event-loop delay of the serving process per phase (ms; each sample is one turn of a 1 ms timer, so an idle loop reads about 1.1):');
  printTable(['phase', 'p50', 'p99', 'max', 'samples', 'server CPU ms', 'RSS'], run.eldRows.map(({ phase: name, probe: p }) => [
    name, dec(p.eld_ms.p50 ?? NaN), dec(p.eld_ms.p99 ?? NaN), dec(p.eld_ms.max ?? NaN), int(p.eld_ms.count),
    int(p.cpu_ms.user + p.cpu_ms.system), mb(p.rss_bytes),
  ]), 1);
  log('');
  log(`Informational: targets are the issue's, never enforced. Medians of ${s.runs} run${s.runs === 1 ? '' : 's'} for the req/s figures; the load generator, the server and the CLI share ${cpus().length} cores ` +
    `(load average ${report.loadStart.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at the end${report.loadStart > 0.5 ? ': the machine was not idle at start, other processes took some of its CPU' : ''}). ` +
    'Server CPU per request (from the serving process itself) moves less than req/s when the machine is shared.');
  for (const line of report.logCheck) log(line);
  if (problems.length > 0) {
    log('INVALID RUN: not every answer was a 200, or a CLI command failed:');
    for (const p of problems) log(`  - ${p}`);
  } else {
    log('Valid run: every answer (warm-ups included) was a 200 and every CLI command succeeded.');
  }
  log(`Total time ${secs(Date.now() - run.started)}.`);
}

/** bench/results/scale-latest.json: the settings, the imports, the table and every figure with its runs. */
function writeResults(run: ScaleRun, report: ScaleReport, rows: TableRow[]): void {
  const { s } = run;
  const { data, imports } = report;
  Object.assign(run.results, {
    finishedAt: new Date().toISOString(),
    valid: problems.length === 0,
    problems,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model.trim(), node: process.version, totalMemBytes: totalmem(), loadAverageAtEnd: loadavg() },
    data: {
      tenants: data.all.length,
      small: s.tenants,
      smallListings: data.smallListings,
      b: s.b,
      big: s.big,
      totalListings: imports.totalListings,
      keys: data.all.length,
      dbBytes: imports.dbBytes,
    },
    table: rows.map(([what, measured, target, ok]) => ({ what, measured, target, met: ok })),
    figures: resultFigures(report),
    eventLoop: run.eldRows,
  });
  mkdirSync(RESULTS_DIR, { recursive: true });
  const resultsFile = join(RESULTS_DIR, 'scale-latest.json');
  writeFileSync(resultsFile, `${JSON.stringify(run.results, null, 2)}\n`);
  log(`Results: ${resultsFile}`);
}

/** Every figure of the results file, with its runs (the clients' latency lists left out). */
function resultFigures({ production, cachesOff, million }: ScaleReport): Record<string, unknown> {
  const { pages, detail, filtered, feed, small } = cachesOff;
  const { mixed, hot } = production;
  const withoutLatencies = (r: ClientResult) => ({ ...r, latencies: undefined });
  return {
    list20: { medianReqPerSec: pages.list20Rps, medianP99Ms: pages.list20P99, runs: pages.list20.map((m) => m.result) },
    perPage100: {
      lastPage: pages.lastPage,
      firstMedianReqPerSec: pages.first100Rps,
      lastMedianReqPerSec: pages.last100Rps,
      cpuRatio: pages.cpuRatio,
      first: pages.first100.map((m) => m.result),
      last: pages.last100.map((m) => m.result),
    },
    detail: { ids: detail.ids, medianReqPerSec: detail.medianReqPerSec, medianP99Ms: detail.medianP99Ms, runs: detail.runs.map((m) => m.result) },
    filtered: {
      path: filtered.path,
      total: filtered.total,
      firstMs: filtered.first.value.maxMs,
      medianReqPerSec: filtered.medianReqPerSec,
      medianP99Ms: filtered.medianP99Ms,
      runs: filtered.runs.map((m) => m.result),
    },
    search: Object.fromEntries((Object.entries(cachesOff.search) as Array<[string, SearchLoad]>).map(([kind, load]) => [kind, {
      queries: load.queries, matches: load.matches, first: load.first, medianReqPerSec: load.medianReqPerSec, medianP99Ms: load.medianP99Ms,
      runs: load.runs.map((m) => m.result),
    }])),
    changeFeed: { replay: feed.replay, poll: { medianReqPerSec: feed.pollRps, medianP99Ms: feed.pollP99, runs: feed.polls.map((m) => m.result) } },
    tenantB: {
      ratio: hot.ratio,
      cpuRatio: hot.cpuRatio,
      writesMedian: hot.writesMedian,
      controlMedian: hot.controlMedian,
      writes: hot.rounds.writes,
      control: hot.rounds.control,
      aVisible: hot.aVisible,
    },
    mixedCold: {
      probe: mixed.probe,
      bigFirstMs: mixed.bigFirstMs,
      bFirstMs: mixed.bFirstMs,
      small: withoutLatencies(mixed.smallCold),
      big: withoutLatencies(mixed.bigReads),
      b: withoutLatencies(mixed.bReads),
    },
    small: {
      coldCachesOn: withoutLatencies(mixed.smallCold),
      warmCachesOn: withoutLatencies(production.warm),
      coldCachesOff: withoutLatencies(small.cold),
      warmCachesOff: withoutLatencies(small.warm),
      sustainedCachesOff: small.sustained.result,
    },
    bigFirstReadAloneMs: cachesOff.build.value.maxMs,
    million: million ?? 'skipped',
    rss: {
      productionSettings: production.end.rss_bytes,
      cachesOff: cachesOff.end.rss_bytes,
      afterFullGc: { productionSettings: production.endGc.rss_bytes, cachesOff: cachesOff.endGc.rss_bytes },
    },
  };
}

/** A plain-text table; columns from `numericFrom` on are right-aligned. */
function printTable(header: string[], rows: string[][], numericFrom = Infinity): void {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((row) => row[c]!.length)));
  for (const [i, row] of all.entries()) {
    log(row.map((cell, c) => (c >= numericFrom && i > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd());
    if (i === 0) log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}
