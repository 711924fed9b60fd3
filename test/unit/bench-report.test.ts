import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { againstFigures, againstTable } from '../../bench/against-report.js';
import type { LoadResult } from '../../bench/load.js';
import { cpuMsOf, type Child } from '../../bench/processes.js';
import { until } from '../support/until.js';

/**
 * `npm run bench -- --against` (bench/README.md): the figures of record are medians of the rounds'
 * own ratios, for req/s and for the CPU an answer took, and the CPU is that of every process of a
 * server (`serve --workers` answers from a forked worker).
 */

const round = (reqPerSec: number, cpuUs?: number): LoadResult => ({
  durationS: 5,
  requests: reqPerSec * 5,
  reqPerSec,
  p50Ms: 1,
  p99Ms: 2,
  p999Ms: 3,
  maxMs: 4,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  statusCodes: { 200: reqPerSec * 5 },
  bytesPerResponse: 100,
  autocannon: { p50: 1, p99: 2, reqPerSecMean: reqPerSec },
  serverCpuUsPerRequest: cpuUs,
});

describe('bench --against: the report', () => {
  const rows = (cpu: boolean) => [
    { target: 'detail', server: 'baseline', rounds: [round(100, cpu ? 10 : undefined), round(200, cpu ? 10 : undefined), round(100, cpu ? 10 : undefined)] },
    { target: 'detail', server: 'fastify', rounds: [round(80), round(160), round(80)] },
    { target: 'detail', server: 'reference', rounds: [round(50, cpu ? 40 : undefined), round(100, cpu ? 20 : undefined), round(40, cpu ? 50 : undefined)] },
    { target: 'detail', server: 'service', rounds: [round(60, cpu ? 30 : undefined), round(80, cpu ? 30 : undefined), round(60, cpu ? 40 : undefined)] },
  ];

  it('takes each ratio round by round, then the median: req/s and CPU per answer', () => {
    const [figures] = againstFigures('sqlite', ['detail'], rows(true));
    // Rounds: 60/50, 80/100, 60/40 -> 1.2, 0.8, 1.5; the median of those, not a ratio of medians (60/50).
    assert.deepEqual(figures!.todayOverReference.rounds, [1.2, 0.8, 1.5]);
    assert.equal(figures!.todayOverReference.median, 1.2);
    // CPU: 30/40, 30/20, 40/50 -> 0.75, 1.5, 0.8.
    assert.deepEqual(figures!.cpuTodayOverReference.rounds, [0.75, 1.5, 0.8]);
    assert.equal(figures!.cpuTodayOverReference.median, 0.8);
    assert.equal(figures!.servers.today!.cpuUsPerRequest, 30);
    assert.equal(figures!.servers.reference!.cpuUsPerRequest, 40);
    const table = againstTable([figures!]);
    assert.match(table[0]!, /CPU us\/req .* CPU x reference$/);
    const today = table.find((line) => / today /.test(line))!.trim().split(/\s+/);
    assert.deepEqual(today.slice(-3), ['0.60', '1.20', '0.80'], 'x ceiling, x reference, CPU x reference');
  });

  it('says "-" where no CPU was measured, rather than a made-up figure', () => {
    const [figures] = againstFigures('sqlite', ['detail'], rows(false));
    assert.ok(Number.isNaN(figures!.cpuTodayOverReference.median));
    const today = againstTable([figures!]).find((line) => / today /.test(line))!.trim().split(/\s+/);
    assert.equal(today.at(-1), '-');
  });
});

describe('bench: the CPU of a server and the processes it forked (cpuMsOf)', () => {
  it('counts a child\'s own CPU and its child\'s', { skip: process.platform !== 'linux' && 'reads Linux /proc' }, async (t) => {
    // A parent that forks a child; each spins until told to stop (stdin closes).
    const spin = 'const end = Date.now() + 60000; process.stdin.on("close", () => process.exit(0)).resume(); (function burn() { const t = Date.now(); while (Date.now() - t < 20); if (Date.now() < end) setImmediate(burn); })();';
    const parentScript = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', ${JSON.stringify(spin)}], { stdio: ['pipe', 'inherit', 'inherit'] });
      process.stdin.on("close", () => { child.stdin.end(); child.once("exit", () => process.exit(0)); }).resume();
      console.log(child.pid);`;
    const proc = spawn(process.execPath, ['-e', parentScript], { stdio: ['pipe', 'pipe', 'inherit'] });
    t.after(() => proc.stdin.end());
    const [pidLine] = (await once(proc.stdout, 'data')) as [Buffer];
    const grandchild = Number(pidLine.toString().trim());
    const child = { process: proc } as unknown as Child;
    const grandchildOnly = { process: { pid: grandchild } } as unknown as Child;

    const start = cpuMsOf(child);
    const grandchildStart = cpuMsOf(grandchildOnly);
    // The parent is idle: what the tree gains is the grandchild's spinning, and the parent's little.
    await until(() => cpuMsOf(grandchildOnly) >= grandchildStart + 300, { what: 'the grandchild to spend 300 ms of CPU' });
    const gained = cpuMsOf(child) - start;
    // One clock tick (10 ms) of rounding on each of the two readings.
    assert.ok(gained >= 280, `the tree gained ${gained} ms while its grandchild spent at least 300 ms`);
    proc.stdin.end();
    await once(proc, 'exit');
    assert.ok(Number.isNaN(cpuMsOf(child)), 'NaN once the process is gone');
  });
});
