import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchDataset } from './dataset.js';
import { seedThroughCli, writeListingsFile } from './cli-seed.js';
import { cleanUpOnExit, freePort, serviceEnv, startChild, stopAll, withServerCpu, type Child } from './processes.js';
import { runLoad as runAutocannonLoad, type LoadResult } from './load.js';
import { cpuPinning } from './pinning.js';
import { loadGeneratorEnv, median, numberEnv } from './settings.js';
import { TARGETS } from './targets.js';
import { runWrkLoad } from './wrk.js';

/**
 * `npm run bench:ab -- NAME=value [NAME=value ...]`: one mechanism on (A: the environment as it
 * is) and off (B: A plus the given variables), the same build on the same SQLite database, two
 * `serve` processes measured in the same rounds, taken in turn (A first in even rounds, B first in
 * odd ones). Issue 41 item 3: every custom mechanism earns its place with a figure from this, in
 * its design record. The switches are listed in bench/README.md ("One mechanism on and off").
 *
 * Reported per target: B/A req/s per round and their median, the median p99 of each, and each
 * process's CPU time per request (from /proc, so what the server spent, not what the machine let
 * it have). BENCH_ROUNDS (default 5), BENCH_DURATION (s, default 5), BENCH_TARGETS (default
 * detail,list20), BENCH_LISTINGS (default 10,000), BENCH_PAUSE (s between rounds, default 0: a
 * pause long enough for the read caches to expire, e.g. 10, measures what a quiet spell costs).
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin', 'listings-api.js');

function parseSwitches(args: readonly string[]): Record<string, string> {
  if (args.length === 0) throw new Error('usage: npm run bench:ab -- NAME=value [NAME=value ...] (B runs with these; A without)');
  const env: Record<string, string> = {};
  for (const arg of args) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(arg);
    if (match === null) throw new Error(`expected NAME=value, got "${arg}"`);
    env[match[1]!] = match[2]!;
  }
  return env;
}

interface Side {
  name: 'A' | 'B';
  child: Child;
  rounds: LoadResult[];
}

async function main(): Promise<void> {
  const switches = parseSwitches(process.argv.slice(2));
  const rounds = Math.floor(numberEnv('BENCH_ROUNDS', 5, 1));
  const durationS = numberEnv('BENCH_DURATION', 5, 1);
  const pauseS = numberEnv('BENCH_PAUSE', 0, 0);
  const listings = Math.floor(numberEnv('BENCH_LISTINGS', 10_000, 1));
  const targetNames = (process.env.BENCH_TARGETS ?? 'detail,list20').split(',').map((t) => t.trim()).filter(Boolean);
  const targets = targetNames.map((name) => {
    const target = TARGETS.find((t) => t.name === name);
    if (target === undefined) throw new Error(`BENCH_TARGETS: unknown target "${name}" (available: ${TARGETS.map((t) => t.name).join(', ')})`);
    return target;
  });
  const generator = loadGeneratorEnv();
  const pinning = cpuPinning(generator);
  const runLoad = generator === 'wrk' ? runWrkLoad : runAutocannonLoad;

  const workDir = mkdtempSync(join(tmpdir(), 'bench-ab-'));
  // At exit, however it comes: the servers are killed (cleanUpOnExit), then the folder removed.
  cleanUpOnExit(() => rmSync(workDir, { recursive: true, force: true }));
  const data = benchDataset(listings);
  const listingsFile = join(workDir, 'listings.ndjson');
  writeListingsFile(listingsFile, data);
  const databaseUrl = `file:${join(workDir, 'bench.db')}`;
  const { key } = await seedThroughCli({ bin: BIN, cwd: ROOT, databaseUrl, listingsFile, data });
  const headers = { host: 'api.localhost', authorization: `Bearer ${key}` };

  const start = async (name: 'A' | 'B', extra: Record<string, string>): Promise<Side> => {
    const port = await freePort();
    const child = await startChild({ name, args: [BIN, 'serve'], cwd: ROOT, env: serviceEnv(port, databaseUrl, extra), port, stdoutFile: join(workDir, `${name}.log`), cpu: pinning.serverCpu });
    return { name, child, rounds: [] };
  };
  const sides = [await start('A', {}), await start('B', switches)];
  console.log(`A/B: B runs with ${Object.entries(switches).map(([k, v]) => `${k}=${v}`).join(' ')}; ${listings} listings (SQLite), ${rounds} rounds of ${durationS} s per target${pauseS > 0 ? `, ${pauseS} s pause before each` : ''}; load from ${generator}, 50 connections; ${pinning.description}.`);

  for (const target of targets) {
    const paths = target.paths(data.ids.slice(0, 1000));
    const load = (side: Side, seconds: number) => runLoad({ port: side.child.port, connections: 50, durationS: seconds, headers, paths, cpu: pinning.loadCpu });
    for (const side of sides) {
      side.rounds = [];
      await load(side, 2); // warm-up
    }
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        if (pauseS > 0) await new Promise((resolve) => setTimeout(resolve, pauseS * 1000));
        const result = await withServerCpu(side.child, () => load(side, durationS));
        if (result.non2xx > 0 || result.errors > 0) throw new Error(`${target.name} ${side.name}: ${result.non2xx} answers other than 2xx, ${result.errors} errors`);
        side.rounds.push(result);
      }
    }
    const [a, b] = sides as [Side, Side];
    const ratios = a.rounds.map((r, i) => b.rounds[i]!.reqPerSec / r.reqPerSec);
    const fmt = (n: number, digits = 2) => n.toFixed(digits);
    const summary = (side: Side) =>
      `${side.name}: ${fmt(median(side.rounds.map((r) => r.reqPerSec)), 0)} req/s, p99 ${fmt(median(side.rounds.map((r) => r.p99Ms)), 1)} ms, CPU ${fmt(median(side.rounds.map((r) => r.serverCpuUsPerRequest ?? NaN)), 1)} us/request`;
    console.log(`${target.name}: B/A req/s ${fmt(median(ratios))} (rounds ${ratios.map((r) => fmt(r)).join(', ')}); ${summary(a)}; ${summary(b)}`);
  }
  await stopAll(); // the exit handler above removes the work folder
}

main().catch((error: unknown) => {
  console.error(`bench:ab: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1; // the exit handler kills the servers
});
