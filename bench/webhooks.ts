import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { importListings } from '../src/import/import.js';
import { openStore, type Store } from '../src/storage/index.js';
import { addWebhook } from '../src/webhooks/endpoints.js';
import { createScratchPostgres } from '../test/support/database.js';
import { prng } from '../test/support/random.js';
import { createBenchAccount, generateListings, type BenchAccount } from './dataset.js';
import { cpuPinning } from './pinning.js';
import { freePort, serviceEnv, startChild, stopAll, type Child } from './processes.js';
import { median, numberEnv } from './settings.js';
import { runWrkLoad } from './wrk.js';

/**
 * BENCH_MODE=webhooks (issue 43 item 4): webhook delivery as a fleet. BENCH_WEBHOOK_ENDPOINTS
 * (default 500) endpoints across BENCH_WEBHOOK_TENANTS (200) organisations, answered by a receiver
 * in this process: 10% answer after 9 s, 5% never answer (the sender's 10 s timeout ends them),
 * the rest at once. For BENCH_WEBHOOK_SECONDS (40) a round commits BENCH_WEBHOOK_RATE (10) changes
 * a second, each a new listing of a random organisation, and halfway through one organisation
 * (with three healthy endpoints) imports BENCH_WEBHOOK_BIG (100,000) listings through the CLI.
 * wrk asks for a listing's detail meanwhile (50 connections), and for as long with nothing
 * committed just before (interleaved, BENCH_ROUNDS rounds, default 3).
 *
 * The instance wrk asks is pinned to one CPU, and everything else of the run (wrk, the second
 * instance, this process with its receiver and commits, the big import) to the other (pinning.ts;
 * PostgreSQL is not pinned): on two cores the ratio is then what delivering costs the instance
 * that serves, not what the rest of the benchmark takes from it.
 *
 * Reported per set-up (SQLite with one `serve`; PostgreSQL with two `serve` instances sharing the
 * work; BENCH_WEBHOOK_SETUPS picks): the first-attempt latency of healthy endpoints from the
 * commit to the message's arrival (p50, p99, max; D24 promises 5 s), messages a second, and the
 * API's req/s while delivering against none. Informational, never part of `npm test`.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const log = (text = '') => process.stdout.write(`${text}\n`);
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length - 1) * p))] ?? NaN;

type Behaviour = 'healthy' | 'slow' | 'hanging';

interface Endpoint {
  path: string;
  tenant: number;
  behaviour: Behaviour;
}

interface Settings {
  tenants: number;
  endpoints: number;
  big: number;
  seconds: number;
  rate: number;
  rounds: number;
  durationS: number;
}

/** The receiver: when each endpoint first heard of each id. Slow endpoints answer after 9 s; hanging ones never. */
function startReceiver(endpoints: ReadonlyMap<string, Endpoint>) {
  const firstArrival = new Map<string, number>();
  let messages = 0;
  const held = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      messages++;
      const { data } = JSON.parse(Buffer.concat(chunks).toString()) as { data?: { upserted?: string[]; removed?: string[] } };
      for (const id of [...(data?.upserted ?? []), ...(data?.removed ?? [])]) {
        const key = `${req.url} ${id}`;
        if (!firstArrival.has(key)) firstArrival.set(key, at);
      }
      const behaviour = endpoints.get(req.url ?? '')?.behaviour ?? 'healthy';
      if (behaviour === 'healthy') return void res.writeHead(204).end();
      held.add(res);
      res.on('close', () => held.delete(res));
      if (behaviour === 'slow') setTimeout(() => res.writeHead(204).end(), 9000).unref();
    });
  });
  return {
    server,
    firstArrival,
    messages: () => messages,
    close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

type Receiver = ReturnType<typeof startReceiver>;

interface SetUp {
  name: string;
  databaseUrl: string;
  instances: number;
  drop(): Promise<void>;
}

export async function runWebhooks(): Promise<number> {
  const s: Settings = {
    tenants: Math.floor(numberEnv('BENCH_WEBHOOK_TENANTS', 200, 2)),
    endpoints: Math.floor(numberEnv('BENCH_WEBHOOK_ENDPOINTS', 500, 3)),
    big: Math.floor(numberEnv('BENCH_WEBHOOK_BIG', 100_000, 1000)),
    seconds: numberEnv('BENCH_WEBHOOK_SECONDS', 40, 10),
    rate: numberEnv('BENCH_WEBHOOK_RATE', 10, 1),
    rounds: Math.floor(numberEnv('BENCH_ROUNDS', 3, 1)),
    durationS: 0,
  };
  s.durationS = s.seconds;
  const setups = (process.env.BENCH_WEBHOOK_SETUPS ?? 'sqlite,postgres').split(',').map((x) => x.trim());
  log(`Webhooks as a fleet: ${s.endpoints} endpoints of ${s.tenants} organisations (10% answer after 9 s, 5% never), ${s.rate} changes/s for ${s.seconds} s a round, `
    + `${s.big.toLocaleString('en')} listings imported halfway; ${cpus().length} CPUs, Node ${process.version}.`);
  const pin = cpuPinning('wrk');
  // This process (its receiver, its commits) and the big import it starts run on the load's CPU.
  if (pin.loadCpu !== undefined) spawnSync('taskset', ['-a', '-cp', String(pin.loadCpu), String(process.pid)]);
  log(`CPUs: ${pin.description}; this process, the big import and every other instance with wrk.`);
  const results: Record<string, unknown> = {};
  for (const name of setups) {
    const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-webhooks-'));
    const setup = await prepare(name, workDir);
    try {
      results[name] = await runSetUp(setup, s, workDir, pin);
    } finally {
      await stopAll();
      await setup.drop();
      if (process.env.BENCH_KEEP === undefined) rmSync(workDir, { recursive: true, force: true });
      else log(`Kept ${workDir}`);
    }
  }
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, 'webhooks.json');
  writeFileSync(file, `${JSON.stringify({ finishedAt: new Date().toISOString(), node: process.version, settings: s, results }, null, 2)}\n`);
  log(`Results: ${file}`);
  return 0;
}

async function prepare(name: string, workDir: string): Promise<SetUp> {
  if (name === 'sqlite') return { name: 'SQLite, one instance', databaseUrl: `file:${join(workDir, 'webhooks.db')}`, instances: 1, drop: async () => {} };
  if (name === 'postgres') {
    const admin = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const database = await createScratchPostgres(admin, 'listings_bench_webhooks');
    return { name: 'PostgreSQL, two instances', databaseUrl: database.url, instances: 2, drop: database.drop };
  }
  throw new Error(`BENCH_WEBHOOK_SETUPS: "${name}" is not sqlite or postgres`);
}

async function runSetUp(setup: SetUp, s: Settings, workDir: string, pin: ReturnType<typeof cpuPinning>) {
  log(`\n${setup.name}`);
  const store = openStore(setup.databaseUrl, { poolSize: 2, statementTimeoutMs: 0, listenForChanges: true });
  const endpoints = new Map<string, Endpoint>();
  const receiver = startReceiver(endpoints);
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  const receiverPort = (receiver.server.address() as { port: number }).port;
  try {
    await store.migrate();
    await store.start();
    const { tenants, detail, bigTenant } = await setUpFleet(store, s, endpoints);
    const bigEndpointCount = 3;
    const instances = await startInstances(setup, workDir, pin);
    const load = () => apiLoad(instances[0]!, pin, s.durationS, tenants[0]!.key, detail.id);

    const delivered: Array<FleetResult & { paused: number; ratio: number; cpuRatio: number }> = [];
    // Delivery paused: no endpoint. Delivering: every endpoint added anew, at the end of the history
    // (D24), so that a round delivers its own commits, not a backlog of the paused round's.
    const setEndpoints = async (delivering: boolean) => {
      await store.webhooksDb.deleteFrom('webhook_endpoints').execute();
      if (!delivering) return;
      for (const e of endpoints.values()) {
        await addWebhook(store, Date.now, { accountId: tenants[e.tenant]!.accountId, country: 'sg', url: `http://127.0.0.1:${receiverPort}${e.path}` });
      }
    };
    let paused = NaN;
    let pausedPerCpu = NaN;
    for (let round = 0; round < 2 * s.rounds; round++) {
      // In turn: the same commits with delivery paused (every endpoint disabled), and delivering.
      const delivering = round % 2 === 1;
      await setEndpoints(delivering);
      const fleet = await fleetRound(store, receiver, endpoints, tenants, bigTenant, s, round, workDir, setup.databaseUrl, load);
      if (!delivering) {
        paused = fleet.reqPerSec;
        pausedPerCpu = fleet.reqPerCpuSecond;
        log(`  round ${round + 1}: delivery paused, the same commits: API ${Math.round(paused)} req/s, ${Math.round(pausedPerCpu)} per CPU second of the instance`);
        continue;
      }
      const ratio = fleet.reqPerSec / paused;
      const cpuRatio = fleet.reqPerCpuSecond / pausedPerCpu;
      delivered.push({ ...fleet, paused, ratio, cpuRatio });
      log(`  round ${round + 1}: healthy first attempts p50 ${fleet.p50.toFixed(0)} ms, p99 ${fleet.p99.toFixed(0)} ms, max ${fleet.max.toFixed(0)} ms`
        + ` (${fleet.latencies} messages, ${fleet.missing} missing); ${fleet.messagesPerSecond.toFixed(0)} messages/s;`
        + ` the big import's ids at its ${bigEndpointCount} endpoints: ${fleet.bigDelivered} of ${s.big} to each`
        + ` ${Number.isNaN(fleet.bigSeconds) ? 'within a minute of the round' : `${fleet.bigSeconds.toFixed(1)} s after it committed`};`
        + ` API ${Math.round(fleet.reqPerSec)} req/s while delivering, ${Math.round(paused)} paused: ${ratio.toFixed(2)};`
        + ` per CPU second of the instance ${Math.round(fleet.reqPerCpuSecond)} and ${Math.round(pausedPerCpu)}: ${cpuRatio.toFixed(2)}`);
    }
    const summary = {
      idle: (await load()).reqPerSec,
      p50: median(delivered.map((r) => r.p50)),
      p99: median(delivered.map((r) => r.p99)),
      max: Math.max(...delivered.map((r) => r.max)),
      messagesPerSecond: median(delivered.map((r) => r.messagesPerSecond)),
      ratio: median(delivered.map((r) => r.ratio)),
      cpuRatio: median(delivered.map((r) => r.cpuRatio)),
      bigSeconds: median(delivered.map((r) => r.bigSeconds)),
    };
    log(`  median of ${delivered.length}: p50 ${summary.p50.toFixed(0)} ms, p99 ${summary.p99.toFixed(0)} ms (goal < 5,000), max ${summary.max.toFixed(0)} ms; `
      + `${summary.messagesPerSecond.toFixed(0)} messages/s; API while delivering / paused ${summary.ratio.toFixed(2)} (goal >= 0.90), `
      + `per CPU second of the instance ${summary.cpuRatio.toFixed(2)}; `
      + `API with no commits and nothing to deliver: ${Math.round(summary.idle)} req/s`);
    return { rounds: delivered, summary };
  } finally {
    receiver.close();
    await stopAll();
    await store.close();
  }
}

/** The setup's `serve` instances: the first on the server's CPU, the others with the load. */
async function startInstances(setup: SetUp, workDir: string, pin: ReturnType<typeof cpuPinning>): Promise<Child[]> {
  const instances: Child[] = [];
  for (let i = 0; i < setup.instances; i++) {
    const port = await freePort();
    instances.push(await startChild({
      name: `webhooks-${i + 1}`,
      args: [BIN, 'serve'],
      cwd: ROOT,
      env: serviceEnv(port, setup.databaseUrl, { WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn', WARMUP_TIMEOUT_MS: '0' }),
      port,
      stdoutFile: join(workDir, `serve-${i + 1}.log`),
      startTimeoutMs: 120_000,
      cpu: i === 0 ? pin.serverCpu : pin.loadCpu,
    }));
  }
  return instances;
}

/**
 * wrk on a listing's detail, and the instance's own CPU time meanwhile: on two cores wrk shares
 * its CPU with the second instance and the receivers, so that req/s can fall because the load did,
 * while requests per CPU second of the instance say what delivering costs the instance itself.
 */
async function apiLoad(instance: Child, pin: ReturnType<typeof cpuPinning>, durationS: number, key: string, listingId: string) {
  const cpuBefore = cpuSeconds(instance.process.pid!);
  const { reqPerSec } = await runWrkLoad({
    cpu: pin.loadCpu,
    port: instance.port,
    connections: 50,
    durationS,
    headers: { host: 'api.localhost', authorization: `Bearer ${key}` },
    paths: [`/v1/listings/${listingId}`],
  });
  return { reqPerSec, reqPerCpuSecond: (reqPerSec * durationS) / (cpuSeconds(instance.process.pid!) - cpuBefore) };
}

/** The CPU time (user and system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  // Fields after the command's closing parenthesis: state is the 3rd of stat, utime the 14th, stime the 15th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The /proc clock tick (USER_HZ), 100 on every Linux architecture this runs on. */
const CLOCK_TICKS = 100;

/** The organisations and their endpoints to be (up to 10 each, D24); the big tenant (the last) gets three healthy ones. */
async function setUpFleet(store: Store, s: Settings, endpoints: Map<string, Endpoint>) {
  const now = new Date();
  const tenants: BenchAccount[] = [];
  for (let i = 0; i < s.tenants; i++) tenants.push(await createBenchAccount(store, { name: `Fleet Realty ${i + 1}`, label: 'bench', now }));
  // A listing, to read during the load.
  const detail = [...generateListings(tenants[0]!.accountId, 1, now, 7)][0]!;
  await importListings(store, Readable.from([detail.line]), now);
  const bigTenant = tenants.length - 1;
  const behaviourOf = (n: number): Behaviour => (n % 20 === 7 ? 'hanging' : n % 10 === 3 ? 'slow' : 'healthy');
  for (let n = 0; n < s.endpoints; n++) {
    const tenant = n < 3 ? bigTenant : n % (tenants.length - 1);
    endpoints.set(`/hook/${n}`, { path: `/hook/${n}`, tenant, behaviour: n < 3 ? 'healthy' : behaviourOf(n) });
  }
  const counts = [...endpoints.values()].reduce((c, e) => ({ ...c, [e.behaviour]: (c[e.behaviour] ?? 0) + 1 }), {} as Record<string, number>);
  log(`  ${endpoints.size} endpoints: ${counts.healthy} healthy, ${counts.slow ?? 0} answering after 9 s, ${counts.hanging ?? 0} never answering`);
  return { tenants, detail, bigTenant };
}

type FleetResult = Awaited<ReturnType<typeof fleetRound>>;

/** One round: changes at the set rate, the big import halfway, wrk throughout; then the first arrivals are read. */
async function fleetRound(
  store: Store,
  receiver: Receiver,
  endpoints: ReadonlyMap<string, Endpoint>,
  tenants: readonly BenchAccount[],
  bigTenant: number,
  s: Settings,
  round: number,
  workDir: string,
  databaseUrl: string,
  load: () => Promise<{ reqPerSec: number; reqPerCpuSecond: number }>,
) {
  const byTenant = new Map<number, Endpoint[]>();
  for (const e of endpoints.values()) byTenant.set(e.tenant, [...(byTenant.get(e.tenant) ?? []), e]);
  // The big import's file, written before the round starts.
  const bigFile = join(workDir, `big-${round}.ndjson`);
  const bigIds: string[] = [];
  const out = createWriteStream(bigFile);
  for (const { id, line } of generateListings(tenants[bigTenant]!.accountId, s.big, new Date(), 1000 + round)) {
    bigIds.push(id);
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  await new Promise((resolve) => out.end(resolve));

  const messagesBefore = receiver.messages();
  const commits: Array<{ id: string; tenant: number; at: number }> = [];
  const started = performance.now();
  const during = load();
  let bigCommitted = 0;
  const big = new Promise<void>((resolve, reject) => setTimeout(() => {
    const child = spawn(process.execPath, [BIN, 'import', bigFile], { env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
    child.on('exit', (code) => {
      bigCommitted = performance.now();
      if (code === 0) resolve();
      else reject(new Error(`the big import failed: ${stderr}`));
    });
  }, (s.seconds * 1000) / 2));
  const rand = prng(round + 1);
  for (let n = 0; performance.now() - started < s.seconds * 1000; n++) {
    const due = started + (n * 1000) / s.rate;
    if (due > performance.now()) await new Promise((resolve) => setTimeout(resolve, due - performance.now()));
    const tenant = Math.floor(rand() * (tenants.length - 1));
    const [listing] = [...generateListings(tenants[tenant]!.accountId, 1, new Date(), 5000 + round * 100_000 + n)];
    await importListings(store, Readable.from([listing!.line]), new Date());
    commits.push({ id: listing!.id, tenant, at: performance.now() });
  }
  const { reqPerSec, reqPerCpuSecond } = await during;
  await big;
  const windowS = (performance.now() - started) / 1000;
  const messages = receiver.messages() - messagesBefore;
  // Every healthy endpoint's messages have arrived within a minute of the last commit, or are missing.
  const bigEndpoints = byTenant.get(bigTenant)!;
  const expected = commits.flatMap((c) => (byTenant.get(c.tenant) ?? []).filter((e) => e.behaviour === 'healthy').map((e) => ({ key: `${e.path} ${c.id}`, at: c.at })));
  const deadline = performance.now() + 60_000;
  const bigArrived = () => bigEndpoints.every((e) => bigIds.every((id) => receiver.firstArrival.has(`${e.path} ${id}`)));
  const allArrived = () => expected.every((x) => receiver.firstArrival.has(x.key)) && bigArrived();
  while (performance.now() < deadline && !allArrived()) await new Promise((resolve) => setTimeout(resolve, 100));
  const latencies = expected.flatMap((x) => (receiver.firstArrival.has(x.key) ? [receiver.firstArrival.get(x.key)! - x.at] : []));
  // When each big endpoint had every id of the import (the ids come in change order, not file order).
  const bigDone = Math.max(...bigEndpoints.map((e) => Math.max(...bigIds.map((id) => receiver.firstArrival.get(`${e.path} ${id}`) ?? NaN))));
  const bigDelivered = Math.min(...bigEndpoints.map((e) => bigIds.filter((id) => receiver.firstArrival.has(`${e.path} ${id}`)).length));
  return {
    reqPerSec,
    reqPerCpuSecond,
    latencies: latencies.length,
    missing: expected.length - latencies.length,
    p50: pct(latencies, 0.5),
    p99: pct(latencies, 0.99),
    max: Math.max(...latencies),
    messagesPerSecond: messages / windowS,
    bigDelivered,
    bigSeconds: (bigDone - bigCommitted) / 1000,
  };
}
