import { spawnSync } from 'node:child_process';

/**
 * CPU pinning of a side-by-side run (`--against`): every server process on one CPU and wrk on
 * another (`taskset -c`), so that the load generator never takes the servers' core and a server
 * never moves between cores in the middle of a round. Only with two or more CPUs available to
 * this process, taskset installed, and wrk the load generator (autocannon runs inside the bench
 * process, which is not pinned). BENCH_PIN=off turns it off. PostgreSQL and Redis are not pinned:
 * they are shared services of the machine.
 */
export interface CpuPinning {
  /** The CPU of the servers and the CPU of wrk, when pinned. */
  serverCpu?: number;
  loadCpu?: number;
  /** What the run says about it: pinned to which CPUs, or why not. */
  description: string;
}

/** The pinning of this run, from BENCH_PIN (`auto`, the default, or `off`), the CPUs this process may use and the load generator. */
export function cpuPinning(loadGenerator: 'wrk' | 'autocannon'): CpuPinning {
  const setting = process.env.BENCH_PIN?.trim() || 'auto';
  if (setting !== 'auto' && setting !== 'off') throw new Error(`BENCH_PIN: expected auto or off, got "${setting}"`);
  if (setting === 'off') return { description: 'not pinned (BENCH_PIN=off)' };
  if (loadGenerator !== 'wrk') return { description: 'not pinned (the load generator is autocannon, inside the bench process)' };
  const cpus = allowedCpus();
  if (cpus === undefined) return { description: 'not pinned (taskset is not installed; Debian: util-linux)' };
  if (cpus.length < 2) return { description: `not pinned (one CPU available: ${cpus.join(',')})` };
  const [loadCpu, serverCpu] = [cpus[0]!, cpus[1]!];
  return { serverCpu, loadCpu, description: `pinned with taskset: every server on CPU ${serverCpu}, wrk on CPU ${loadCpu}` };
}

/** The command line that runs `command args` on `cpu` (unchanged when `cpu` is undefined). */
export function onCpu(cpu: number | undefined, command: string, args: readonly string[]): [string, string[]] {
  return cpu === undefined ? [command, [...args]] : ['taskset', ['-c', String(cpu), command, ...args]];
}

/** The CPUs this process may run on (`taskset -cp`), or undefined when taskset is missing. */
function allowedCpus(): number[] | undefined {
  const ran = spawnSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' });
  if (ran.error !== undefined || ran.status !== 0) return undefined;
  // "pid 123's current affinity list: 0,2-3"
  const list = ran.stdout.split(':').at(-1)?.trim() ?? '';
  const cpus: number[] = [];
  for (const part of list.split(',')) {
    const [from, to = from] = part.split('-').map((n) => Number(n));
    if (from === undefined || to === undefined || !Number.isInteger(from) || !Number.isInteger(to)) continue;
    for (let cpu = from; cpu <= to; cpu++) cpus.push(cpu);
  }
  return cpus;
}
