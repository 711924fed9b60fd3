import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { importListings } from '../src/import/import.js';
import { openStore } from '../src/storage/index.js';
import { createBenchAccount, generateListings } from './dataset.js';
import { runEach } from './load.js';
import { probe, type Probe, type Server } from './probe.js';
import { freePort, serviceEnv, startChild, stopAll } from './processes.js';
import { numberEnv } from './settings.js';

/**
 * BENCH_MODE=memory: how much memory one instance needs for the listings it serves. For each size
 * (BENCH_MEMORY_SIZES, default 100,000 and 1,000,000 listings) spread evenly over
 * BENCH_MEMORY_TENANTS tenants (default 1,000), a fresh SQLite database is imported and the real
 * service started (serve-with-probe.ts, response caches off so that only the per-tenant indexes
 * grow); every tenant's first page is read once, which builds its index; the process's memory after
 * a full garbage collection is taken before and after. Per listing: the growth of the RSS and of
 * V8's heap in use over the listings indexed. Informational, never part of `npm test`.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROBE = fileURLToPath(new URL('./serve-with-probe.js', import.meta.url));
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

const log = (text = '') => process.stdout.write(`${text}\n`);
const int = (n: number) => Math.round(n).toLocaleString('en-US');

interface Tenant {
  accountId: string;
  key: string;
  listings: number;
}

interface SizeResult {
  listings: number;
  tenants: number;
  importMs: number;
  idle: Pick<Probe, 'rss_bytes' | 'heap_used_bytes' | 'external_bytes'>;
  indexed: Pick<Probe, 'rss_bytes' | 'heap_used_bytes' | 'external_bytes'>;
  rssPerListing: number;
  heapPerListing: number;
  firstPageP99Ms: number;
}

export async function runMemory(): Promise<number> {
  const sizes = (process.env.BENCH_MEMORY_SIZES ?? '100000,1000000').split(',').map((n) => Math.floor(Number(n.trim())));
  if (sizes.some((n) => !Number.isFinite(n) || n < 1)) throw new Error('BENCH_MEMORY_SIZES: a comma-separated list of listing counts');
  const tenants = Math.floor(numberEnv('BENCH_MEMORY_TENANTS', 1000, 1));
  log(`Memory: listings of ${int(tenants)} tenants, one SQLite database per size, the service with response caches off; ${cpus().length} CPUs, Node ${process.version}.`);
  const results: SizeResult[] = [];
  for (const size of sizes) results.push(await measureSize(size, tenants));

  log('');
  log('listings    tenants  RSS idle  RSS indexed  heap indexed  RSS/listing  heap/listing  listings per GiB of RSS');
  for (const r of results) {
    log(
      `${int(r.listings).padStart(9)}  ${int(r.tenants).padStart(7)}  ${`${int(r.idle.rss_bytes / MIB)} MB`.padStart(8)}  ${`${int(r.indexed.rss_bytes / MIB)} MB`.padStart(11)}  ${`${int(r.indexed.heap_used_bytes / MIB)} MB`.padStart(12)}  ${`${int(r.rssPerListing)} B`.padStart(11)}  ${`${int(r.heapPerListing)} B`.padStart(12)}  ${int((GIB - r.idle.rss_bytes) / r.rssPerListing).padStart(23)}`,
    );
  }
  log('');
  log('"listings per GiB": what fits in 1 GiB of RSS after the idle process, at the RSS per listing measured.');
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, 'memory.json');
  writeFileSync(file, `${JSON.stringify({ finishedAt: new Date().toISOString(), node: process.version, results }, null, 2)}\n`);
  log(`Results: ${file}`);
  return 0;
}

async function measureSize(size: number, tenantCount: number): Promise<SizeResult> {
  const workDir = mkdtempSync(join(tmpdir(), 'listings-bench-memory-'));
  const databaseUrl = `file:${join(workDir, 'memory.db')}`;
  try {
    log('');
    log(`${int(size)} listings over ${int(tenantCount)} tenants:`);
    const now = new Date();
    const tenants = await createTenants(databaseUrl, size, tenantCount, now);
    const t0 = Date.now();
    await importAll(databaseUrl, tenants, now);
    const importMs = Date.now() - t0;
    log(`  imported in ${(importMs / 1000).toFixed(1)} s`);

    const port = await freePort();
    const logFile = join(workDir, 'serve.log');
    writeFileSync(logFile, '');
    const child = await startChild({
      name: 'memory',
      args: ['--expose-gc', PROBE],
      cwd: ROOT,
      env: serviceEnv(port, databaseUrl, { READ_CACHE_TTL_MS: '0', LOG_LEVEL: 'warn', WARMUP_MAX_LISTINGS: '0' }),
      port,
      stdoutFile: logFile,
      startTimeoutMs: 120_000,
    });
    const server: Server = { label: 'memory', child, logFile, seq: 0, requests: 0 };
    const idle = await probe(server, true);
    // Every tenant's first page, 4 at a time: each builds that tenant's index.
    const reads = await runEach({
      port,
      concurrency: 4,
      headers: { host: 'api.localhost' },
      requests: tenants.map((t) => ({ path: '/v1/listings?per_page=20', headers: { authorization: `Bearer ${t.key}` } })),
    });
    if (Object.keys(reads.statusCodes).some((code) => code !== '200')) {
      throw new Error(`reading every tenant's first page: ${JSON.stringify(reads.statusCodes)} (0: connection errors)`);
    }
    const indexed = await probe(server, true);
    await child.stop();
    const rssPerListing = (indexed.rss_bytes - idle.rss_bytes) / size;
    const heapPerListing = (indexed.heap_used_bytes + indexed.external_bytes - idle.heap_used_bytes - idle.external_bytes) / size;
    log(`  idle RSS ${int(idle.rss_bytes / MIB)} MB; every index built: RSS ${int(indexed.rss_bytes / MIB)} MB, heap in use ${int(indexed.heap_used_bytes / MIB)} MB; ${int(rssPerListing)} B of RSS and ${int(heapPerListing)} B of heap per listing; first pages p99 ${reads.p99Ms.toFixed(1)} ms`);
    const memory = (p: Probe) => ({ rss_bytes: p.rss_bytes, heap_used_bytes: p.heap_used_bytes, external_bytes: p.external_bytes });
    return {
      listings: size,
      tenants: tenantCount,
      importMs,
      idle: memory(idle),
      indexed: memory(indexed),
      rssPerListing,
      heapPerListing,
      firstPageP99Ms: reads.p99Ms,
    };
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The tenants (organisations in `sg`), each with a key whose limit never refuses; the listings are split evenly. */
async function createTenants(databaseUrl: string, size: number, count: number, now: Date): Promise<Tenant[]> {
  const store = openStore(databaseUrl, { poolSize: 1, statementTimeoutMs: 0 });
  try {
    await store.migrate();
    const tenants: Tenant[] = [];
    for (let i = 0; i < count; i++) {
      const { accountId, key } = await createBenchAccount(store, { name: `Memory Realty ${i + 1}`, label: 'memory', now });
      tenants.push({ accountId, key, listings: Math.floor(size / count) + (i < size % count ? 1 : 0) });
    }
    return tenants;
  } finally {
    await store.close();
  }
}

/** One all-or-nothing import of every tenant's listings, streamed (1,000,000 lines are never held). */
async function importAll(databaseUrl: string, tenants: readonly Tenant[], now: Date): Promise<void> {
  const store = openStore(databaseUrl, { poolSize: 1, statementTimeoutMs: 0 });
  try {
    const lines = function* () {
      for (const [i, t] of tenants.entries()) for (const { line } of generateListings(t.accountId, t.listings, now, 7 + i, { located: true })) yield `${line}\n`;
    };
    await importListings(store, Readable.from(lines()), now);
  } finally {
    await store.close();
  }
}
