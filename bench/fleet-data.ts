import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../src/storage/index.js';
import { prng } from '../test/support/random.js';
import { createBenchAccount, generateListings } from './dataset.js';
import { importFile, writeLines, type ImportFigures } from './scale.js';

/**
 * The fleet benchmark's data (BENCH_MODE=fleet, bench/fleet.ts): tenants of Zipf-like sizes, each
 * an organisation in `sg` with one key, and Zipf-like traffic over them. Accounts and keys are
 * made in this process through the store (`createBenchAccount`: `issueKey`, limit raised), as
 * thousands of CLI runs would take longer than the rest of the benchmark; the listings are imported
 * by the real `listings-api import` CLI, which takes any number of owners in one file (each line
 * names its `owner_account_id`), so a few files of up to BENCH_FLEET_FILE_LINES lines carry every
 * tenant, the biggest first, and every listing goes through the operator's own command.
 */

export interface FleetTenant {
  /** Size rank - 1: tenant 0 is the biggest. */
  index: number;
  accountId: string;
  key: string;
  listings: number;
  /** A few of its listing ids (the first generated: random with respect to D9), for details. */
  ids: string[];
  /** Its share of the requests (the weights of all tenants sum to 1). */
  traffic: number;
}

/** Ids kept per tenant for the detail requests: the bench never holds every id of millions of listings. */
const IDS_KEPT = 20;
const SEED = 20261207;

/**
 * Listing counts by size rank, ~ C / rank^s, at least 1 each, summing to `total` exactly: the
 * rounding remainder goes one listing at a time to the biggest tenants.
 */
export function zipfSizes(total: number, tenants: number, exponent: number): number[] {
  const weights = Array.from({ length: tenants }, (_, i) => 1 / (i + 1) ** exponent);
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = weights.map((w) => Math.max(1, Math.floor((w / sum) * total)));
  let left = total - sizes.reduce((a, b) => a + b, 0);
  for (let i = 0; left !== 0; i = (i + 1) % tenants) {
    if (left > 0) {
      sizes[i]!++;
      left--;
    } else if (sizes[i]! > 1) {
      sizes[i]!--;
      left++;
    }
  }
  return sizes;
}

/**
 * Each tenant's share of the traffic: Zipf over a traffic rank that is a seeded permutation of the
 * tenants, independent of their size rank (the busiest site need not be the biggest catalogue).
 */
export function trafficShares(tenants: number, exponent: number): number[] {
  const rand = prng(SEED ^ 0x7aff1c);
  const rankOf = Array.from({ length: tenants }, (_, i) => i);
  for (let i = tenants - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [rankOf[i], rankOf[j]] = [rankOf[j]!, rankOf[i]!];
  }
  const weights = rankOf.map((rank) => 1 / (rank + 1) ** exponent);
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / sum);
}

/** The smallest set of the busiest tenants that takes at least `fraction` of the requests. */
export function hotSet(tenants: readonly FleetTenant[], fraction: number): Set<number> {
  const byTraffic = [...tenants].sort((a, b) => b.traffic - a.traffic);
  const hot = new Set<number>();
  let taken = 0;
  for (const t of byTraffic) {
    if (taken >= fraction) break;
    hot.add(t.index);
    taken += t.traffic;
  }
  return hot;
}

/** A sampler of tenants by their traffic share (inverse CDF over a seeded generator). */
export function tenantSampler(tenants: readonly FleetTenant[], seed: number): () => FleetTenant {
  const cumulative: number[] = [];
  let sum = 0;
  for (const t of tenants) cumulative.push((sum += t.traffic));
  const rand = prng(seed);
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return tenants[lo]!;
  };
}

/** A summary of the sizes: the biggest, how many in each band, the median. */
export function sizeSummary(sizes: readonly number[]): string {
  const bands: Array<[string, (n: number) => boolean]> = [
    ['>= 100,000', (n) => n >= 100_000], ['10,000-99,999', (n) => n >= 10_000 && n < 100_000], ['1,000-9,999', (n) => n >= 1000 && n < 10_000],
    ['100-999', (n) => n >= 100 && n < 1000], ['< 100', (n) => n < 100],
  ];
  const sorted = [...sizes].sort((a, b) => b - a);
  const counts = bands.map(([name, test]) => `${name}: ${sizes.filter(test).length.toLocaleString('en-US')}`).join(', ');
  const top = sorted.slice(0, 5).map((n) => n.toLocaleString('en-US')).join(', ');
  return `biggest ${top}; ${counts}; median ${sorted[sorted.length >> 1]}, smallest ${sorted.at(-1)}`;
}

/** The organisations and their keys, 8 at a time through one store (each key's limit raised so the limiter never refuses). */
export async function createTenants(databaseUrl: string, sizes: readonly number[], traffic: readonly number[], now: Date): Promise<FleetTenant[]> {
  const store = openStore(databaseUrl, { poolSize: 8, statementTimeoutMs: 0 });
  try {
    await store.migrate();
    const tenants: FleetTenant[] = new Array(sizes.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < sizes.length; i = next++) {
        const { accountId, key } = await createBenchAccount(store, { name: `Fleet Realty ${i + 1}`, label: 'fleet', now });
        tenants[i] = { index: i, accountId, key, listings: sizes[i]!, ids: [], traffic: traffic[i]! };
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return tenants;
  } finally {
    await store.close();
  }
}

export interface FleetImport {
  files: Array<ImportFigures & { tenants: number }>;
  wallMs: number;
  peakRssBytes: number;
  rssMethod?: string;
}

/** Tenants grouped into files of at most `fileLines` lines, in size order (a bigger tenant gets a file of its own). */
function importGroups(tenants: readonly FleetTenant[], fileLines: number): FleetTenant[][] {
  const groups: FleetTenant[][] = [];
  let current: FleetTenant[] = [];
  let lines = 0;
  for (const t of tenants) {
    if (current.length > 0 && lines + t.listings > fileLines) {
      groups.push(current);
      current = [];
      lines = 0;
    }
    current.push(t);
    lines += t.listings;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/**
 * Every tenant's listings, a file at a time: written to `workDir` (streamed, never held), imported
 * by the CLI under /usr/bin/time -v (its peak RSS), then removed. Keeps a few ids per tenant.
 */
export async function importTenants(
  workDir: string,
  databaseUrl: string,
  tenants: readonly FleetTenant[],
  now: Date,
  fileLines: number,
  step: (text: string) => void,
): Promise<FleetImport> {
  const files: FleetImport['files'] = [];
  for (const [n, group] of importGroups(tenants, fileLines).entries()) {
    const file = join(workDir, `listings-${n + 1}.ndjson`);
    const lines = function* () {
      for (const t of group) {
        for (const { id, line } of generateListings(t.accountId, t.listings, now, SEED + t.index, { located: true })) {
          if (t.ids.length < IDS_KEPT) t.ids.push(id);
          yield line;
        }
      }
    };
    const count = await writeLines(file, lines());
    step(`file ${n + 1}: ${group.length.toLocaleString('en-US')} tenants, ${count.toLocaleString('en-US')} lines written; importing through the CLI...`);
    const figures = await importFile(file, count, databaseUrl, true);
    rmSync(file, { force: true });
    files.push({ ...figures, tenants: group.length });
    const rss = figures.peakRssBytes === undefined ? '-' : `${Math.round(figures.peakRssBytes / 2 ** 20)} MB`;
    step(`file ${n + 1}: imported in ${(figures.wallMs / 1000).toFixed(1)} s (${Math.round(figures.linesPerSec).toLocaleString('en-US')} lines/s), peak RSS ${rss}`);
  }
  return {
    files,
    wallMs: files.reduce((a, f) => a + f.wallMs, 0),
    peakRssBytes: Math.max(...files.map((f) => f.peakRssBytes ?? 0)),
    rssMethod: files[0]?.rssMethod,
  };
}
