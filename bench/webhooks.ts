import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { importListings } from '../src/import/import.js';
import { openStore, type Store } from '../src/storage/index.js';
import { addWebhook } from '../src/webhooks/endpoints.js';
import { createBenchAccount, generateListings, listingLines } from './dataset.js';
import { freePort, serviceEnv, startChild, stopAll } from './processes.js';
import { median, numberEnv } from './settings.js';
import { runWrkLoad } from './wrk.js';

/**
 * BENCH_MODE=webhooks (issue 32): webhook delivery on the embedded default, the real service in
 * its own process, a receiver in this one answering 204.
 *
 * 1. **Latency**: BENCH_WEBHOOK_CHANGES (default 40) changes of one listing, one at a time, each in
 *    a tenant of its own endpoint: from the import's commit to the message's arrival (D24 promises
 *    a first attempt within 5 s).
 * 2. **Throughput**: an import of BENCH_WEBHOOK_BIG (default 100,000) listings into one tenant:
 *    messages and ids per second until every id has arrived.
 * 3. **The API meanwhile**: wrk on a listing's detail (50 connections) while those messages are
 *    delivered, against the same load with nothing to deliver, in turn (BENCH_ROUNDS, default 3
 *    each): the ratio of req/s (the goal: within 10%).
 *
 * BENCH_WEBHOOK_TENANTS (default 100) tenants each have an endpoint and 100 listings. Informational,
 * never part of `npm test`.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const log = (text = '') => process.stdout.write(`${text}\n`);
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length - 1) * p))] ?? NaN;

interface Tenant {
  accountId: string;
  key: string;
}

/** The receiver: every message's arrival time and ids, by endpoint path. */
function startReceiver() {
  const arrivals: Array<{ at: number; path: string; ids: string[] }> = [];
  const waiters: Array<{ id: string; resolve: (at: number) => void }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => void (body += c.toString()));
    req.on('end', () => {
      const at = performance.now();
      const { data } = JSON.parse(body) as { data: { upserted?: string[]; removed?: string[] } };
      const ids = [...(data.upserted ?? []), ...(data.removed ?? [])];
      arrivals.push({ at, path: req.url ?? '', ids });
      for (const w of waiters.splice(0)) {
        if (ids.includes(w.id)) w.resolve(at);
        else waiters.push(w);
      }
      res.writeHead(204).end();
    });
  });
  return {
    arrivals,
    server,
    /** Resolves with the arrival time of the first message naming `id`. */
    arrivalOf: (id: string) => new Promise<number>((resolve) => waiters.push({ id, resolve })),
  };
}

type Receiver = ReturnType<typeof startReceiver>;

/** Each tenant's listing lines and ids, by account id. */
type ListingsOf = Map<string, { lines: string[]; ids: string[] }>;

export async function runWebhooks(): Promise<number> {
  const tenantCount = Math.floor(numberEnv('BENCH_WEBHOOK_TENANTS', 100, 1));
  const changes = Math.floor(numberEnv('BENCH_WEBHOOK_CHANGES', 40, 1));
  const big = Math.floor(numberEnv('BENCH_WEBHOOK_BIG', 100_000, 1000));
  const rounds = Math.floor(numberEnv('BENCH_ROUNDS', 3, 1));
  const durationS = numberEnv('BENCH_DURATION', 5, 1);
  log(`Webhooks: ${tenantCount} tenants with an endpoint each, SQLite, the service in its own process; ${cpus().length} CPUs, Node ${process.version}.`);

  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-webhooks-'));
  const databaseUrl = `file:${join(workDir, 'webhooks.db')}`;
  const receiver = startReceiver();
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  const receiverPort = (receiver.server.address() as { port: number }).port;
  const store = openStore(databaseUrl, { poolSize: 1, statementTimeoutMs: 0, listenForChanges: true });
  try {
    await store.migrate();
    await store.start();
    const { tenants, bigTenant, listings } = await setUpTenants(store, tenantCount, receiverPort);
    const port = await freePort();
    await startChild({
      name: 'webhooks',
      args: [BIN, 'serve'],
      cwd: ROOT,
      env: serviceEnv(port, databaseUrl, { WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn' }),
      port,
      stdoutFile: join(workDir, 'serve.log'),
      startTimeoutMs: 120_000,
    });

    const latencies = await measureLatency(store, receiver, tenants, listings, changes, join(workDir, 'serve.log'));

    // 3. The API with nothing to deliver, then while the big import's messages are delivered, in turn.
    const detailPath = `/v1/listings/${listings.get(tenants[0]!.accountId)!.ids[0]}`;
    const load = () => runWrkLoad({ port, connections: 50, durationS, headers: { host: 'api.localhost', authorization: `Bearer ${tenants[0]!.key}` }, paths: [detailPath] });
    const quiet: number[] = [];
    const delivering: number[] = [];
    let throughput: Throughput | undefined;
    for (let round = 0; round < rounds; round++) {
      quiet.push((await load()).reqPerSec);
      const during = await loadWhileDelivering(store, receiver, bigTenant, big, round, load);
      delivering.push(during.reqPerSec);
      if (round === 0) throughput = during.throughput;
      log(`  round ${round + 1}: detail ${Math.round(quiet.at(-1)!)} req/s with nothing to deliver, ${Math.round(delivering.at(-1)!)} req/s while ${during.throughput.messages} messages (${during.throughput.ids} ids) were delivered in ${during.throughput.seconds.toFixed(1)} s`);
    }
    const ratios = quiet.map((q, i) => delivering[i]! / q);
    log(`Throughput: ${throughput!.messages} messages, ${throughput!.ids} ids in ${throughput!.seconds.toFixed(1)} s: ${(throughput!.messages / throughput!.seconds).toFixed(1)} messages/s, ${Math.round(throughput!.ids / throughput!.seconds)} ids/s.`);
    log(`The API while delivering / with nothing to deliver (detail req/s): ${ratios.map((r) => r.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} (goal: within 10%, >= 0.90).`);

    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, 'webhooks.json');
    writeFileSync(file, `${JSON.stringify({ finishedAt: new Date().toISOString(), node: process.version, tenants: tenantCount, latenciesMs: latencies, throughput, quiet, delivering, ratios }, null, 2)}\n`);
    log(`Results: ${file}`);
    return 0;
  } finally {
    await stopAll();
    await store.close();
    receiver.server.close();
    if (process.env.BENCH_KEEP === undefined) rmSync(workDir, { recursive: true, force: true });
    else log(`Kept ${workDir}`);
  }
}

/** `count` tenants of 100 listings each and the big tenant (none yet), each with an endpoint at the receiver. */
async function setUpTenants(store: Store, count: number, receiverPort: number): Promise<{ tenants: Tenant[]; bigTenant: Tenant; listings: ListingsOf }> {
  const now = new Date();
  const tenants = await createTenants(store, count + 1, now);
  const bigTenant = tenants.pop()!;
  // Each tenant's listings as imported (ids are random: keep the lines to change them later).
  const listings: ListingsOf = new Map(tenants.map((t, i) => [t.accountId, listingLines(t.accountId, 100, now, 11 + i)]));
  await importListings(store, Readable.from([...listings.values()].map((l) => l.lines.join('\n')).join('\n')), now);
  await store.changes.caughtUp();
  for (const [i, t] of [...tenants, bigTenant].entries()) {
    await addWebhook(store, Date.now, { accountId: t.accountId, country: 'sg', url: `http://127.0.0.1:${receiverPort}/hook/${i}` });
  }
  return { tenants, bigTenant, listings };
}

/** 1. Latency of single changes: from each import's commit to its message's arrival. */
async function measureLatency(
  store: Store,
  receiver: Receiver,
  tenants: readonly Tenant[],
  listings: ListingsOf,
  changes: number,
  serveLog: string,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < changes; i++) {
    const tenant = tenants[i % tenants.length]!;
    const { ids, lines } = listings.get(tenant.accountId)!;
    const id = ids[i % 100]!;
    const arrived = receiver.arrivalOf(id);
    const line = JSON.stringify({ ...JSON.parse(lines[i % 100]!), title: `Changed ${i}` });
    await importListings(store, Readable.from([line]), new Date());
    const committed = performance.now();
    const timedOut = new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`no message for ${id} within 30 s; the service's log: ${readFileSync(serveLog, 'utf8').slice(-2000)}`)), 30_000).unref());
    latencies.push((await Promise.race([arrived, timedOut])) - committed);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  log(`Latency, commit to arrival, ${changes} single changes: p50 ${pct(latencies, 0.5).toFixed(0)} ms, p99 ${pct(latencies, 0.99).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms (D24: first attempt within 5 s).`);
  return latencies;
}

interface Throughput {
  messages: number;
  ids: number;
  seconds: number;
}

/** 2. A big import into one tenant, then the load while its messages go out, until every id has arrived. */
async function loadWhileDelivering(
  store: Store,
  receiver: Receiver,
  bigTenant: Tenant,
  big: number,
  round: number,
  load: () => Promise<{ reqPerSec: number }>,
): Promise<{ reqPerSec: number; throughput: Throughput }> {
  const before = receiver.arrivals.length;
  const ids = new Set<string>();
  const lines = function* () {
    for (const { id, line } of generateListings(bigTenant.accountId, big, new Date(), 97 + round)) {
      ids.add(id);
      yield `${line}\n`;
    }
  };
  await importListings(store, Readable.from(lines()), new Date());
  const committed = performance.now();
  const during = load();
  const drained = (async () => {
    for (;;) {
      const got = new Set(receiver.arrivals.slice(before).flatMap((a) => a.ids));
      if ([...ids].every((id) => got.has(id))) return performance.now();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const { reqPerSec } = await during;
  const done = await drained;
  return { reqPerSec, throughput: { messages: receiver.arrivals.length - before, ids: ids.size, seconds: (done - committed) / 1000 } };
}

/** Organisations in `sg`, each with a key whose limit never refuses. */
async function createTenants(store: Store, count: number, now: Date): Promise<Tenant[]> {
  const tenants: Tenant[] = [];
  for (let i = 0; i < count; i++) {
    const { accountId, key } = await createBenchAccount(store, { name: `Webhook Realty ${i + 1}`, label: 'bench', now });
    tenants.push({ accountId, key });
  }
  return tenants;
}
