import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createReadStream, openSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import type { LoadResult } from './load.js';
import { onCpu } from './pinning.js';

/**
 * Child processes of the benchmark (the service and the baseline), started with a robust wait for
 * readiness and always stopped: on normal exit, on error, and on Ctrl-C (see `killAllNow`).
 */
export interface Child {
  name: string;
  port: number;
  process: ChildProcess;
  /** The last few KB of the child's stderr, for error messages. */
  stderrTail(): string;
  /** SIGTERM (the service shuts down gracefully), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<Child>();

/**
 * User and system CPU time, in ms, that a child and every process under it have spent so far:
 * `serve --workers N` answers from worker processes that the child forked. Linux's /proc (a
 * process's stat, and its threads' `children` lists); NaN elsewhere, or once the child is gone.
 * A process that exits between two readings takes its time with it: read while they all run.
 */
export function cpuMsOf(child: Child): number {
  const pid = child.process.pid;
  if (pid === undefined) return NaN;
  try {
    return processTreeTicks(pid) * 10; // clock ticks of 10 ms (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/** Runs `load` against `child` and adds the CPU its processes spent per request meanwhile (`cpuMsOf`). */
export async function withServerCpu(child: Child, load: () => Promise<LoadResult>): Promise<LoadResult> {
  const before = cpuMsOf(child);
  const result = await load();
  return { ...result, serverCpuUsPerRequest: ((cpuMsOf(child) - before) * 1000) / result.requests };
}

function processTreeTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  let ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  let children = '';
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {
    // Gone meanwhile: its own time is what there is.
  }
  for (const child of children.split(' ').filter(Boolean)) {
    try {
      ticks += processTreeTicks(Number(child));
    } catch {
      // A child that exited between the two reads.
    }
  }
  return ticks;
}

/**
 * A free loopback port below the kernel's ephemeral range (32768+ on Linux), so that no other
 * process listening on port 0 (other test servers on this machine) can be handed the same port
 * between our check and the child binding it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('found no free loopback port in 20000-31999');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export interface StartOptions {
  name: string;
  args: string[];
  env: Record<string, string | undefined>;
  port: number;
  /** Where the child's stdout goes (the service's log lines); '/dev/null' to drop it. */
  stdoutFile: string;
  cwd?: string;
  startTimeoutMs?: number;
  /** The CPU the child is pinned to (`taskset -c`, pinning.ts); unset: not pinned. */
  cpu?: number;
}

/** Starts `node <args>` and resolves once GET /healthz answers 200; rejects (and kills it) otherwise. */
export async function startChild(options: StartOptions): Promise<Child> {
  const out = openSync(options.stdoutFile, 'a');
  let proc: ChildProcess;
  try {
    // taskset execs node in its own process: the pid, and so the signals, are node's.
    const [command, args] = onCpu(options.cpu, process.execPath, options.args);
    proc = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', out, 'pipe'] });
  } finally {
    closeSync(out); // the child holds its own descriptor
  }
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  let exited: string | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    proc.once('exit', (code, signal) => {
      exited = signal ?? `code ${code}`;
      running.delete(child);
      resolve();
    });
  });
  proc.once('error', (error) => {
    exited = `spawn error: ${error.message}`;
  });

  const child: Child = {
    name: options.name,
    port: options.port,
    process: proc,
    stderrTail: () => stderr.trim(),
    async stop(graceMs = 5000) {
      if (exited !== undefined) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exitPromise;
      clearTimeout(timer);
    },
  };
  running.add(child);

  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  for (;;) {
    if (exited !== undefined) {
      throw new Error(`${options.name} exited before it was ready (${exited})${stderr.trim() === '' ? '' : `:\n${stderr.trim()}`}`);
    }
    if ((await probe(options.port, '/healthz')) === 200) {
      // Make sure it was our child that answered (not something else on the port): still alive a
      // moment later, i.e. it did not fail to bind.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (exited === undefined) return child;
      continue;
    }
    if (Date.now() > deadline) {
      await child.stop(1000);
      throw new Error(`${options.name} did not answer GET /healthz on port ${options.port} within ${options.startTimeoutMs ?? 30_000} ms${stderr.trim() === '' ? '' : `:\n${stderr.trim()}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The status of one GET, or 0 when the connection fails. */
function probe(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

/** Synchronous last resort (process 'exit', signals): SIGKILL whatever is still running. */
export function killAllNow(): void {
  for (const child of running) {
    try {
      child.process.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
}

/**
 * When the benchmark ends, however it ends (done, a crash, Ctrl-C, SIGTERM): every child is
 * killed, then `cleanUp` runs (the temp data, the benchmark's own children).
 */
export function cleanUpOnExit(cleanUp: () => void): void {
  process.once('exit', () => {
    killAllNow();
    cleanUp();
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the benchmark\n`);
      process.exit(130);
    });
  }
}

export interface HttpResult {
  status: number;
  contentType: string;
  /** The header fields as sent, in order: name, value, name, value (`rawHeaders`). */
  rawHeaders: string[];
  body: Buffer;
}

/** One GET with explicit headers (Host included), for capturing real responses. */
export function httpGet(port: number, path: string, headers: Record<string, string>): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Lines in a file (a child's log): read as a stream, so a log of any size costs little memory. */
export async function countLines(file: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(file)) {
    const buf = chunk as Buffer;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) lines++;
  }
  return lines;
}

/**
 * The environment a benchmarked service runs with: this process's, then the service on `port` of
 * 127.0.0.1 under API_DOMAIN=localhost (so `api.localhost` is the sg host, D3), request logging
 * on as in production (stdout goes to a file), and no dashboard port (the API alone is measured).
 */
export function serviceEnv(port: number, databaseUrl: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    API_DOMAIN: 'localhost',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    DASHBOARD_PORT: 'off',
    ...extra,
  };
}
