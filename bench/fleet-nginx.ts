import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NGINX, unprivilegedNginxConfig } from '../test/support/nginx.js';

/**
 * nginx in front of the fleet (BENCH_MODE=fleet): the repository's own configuration
 * (deploy/nginx/listings-api.conf, issue 44 item 3) with the run's ports, run unprivileged in a
 * folder of its own as test/ops/nginx.test.ts runs it, and an access log of the bench's own: nginx
 * is the one place that sees every request, its latency and the instance that answered it.
 */

const CONF = fileURLToPath(new URL('../../deploy/nginx/listings-api.conf', import.meta.url));
export { NGINX };

/** The header that tells the access log which tenant and kind of request it was (`<tenant>.<kind>`). */
export const TAG_HEADER = 'x-fleet-tag';

/**
 * The shipped site with the run's ports: its `server` line repeated once per instance (same
 * parameters), `listen` on loopback; `routed: false` drops the `hash` line, so nginx balances
 * round robin. Everything else (retries, timeouts, keepalive) is the shipped file's.
 */
export function siteConfig(listen: number, instances: readonly number[], routed: boolean): string {
  const shipped = readFileSync(CONF, 'utf8');
  const servers = [...shipped.matchAll(/^(\s*)server 127\.0\.0\.1:\d+ (.*);$/gm)];
  if (servers.length === 0) throw new Error(`${CONF}: no "server 127.0.0.1:PORT ...;" line in its upstream`);
  const [first, indent, params] = [servers[0]![0], servers[0]![1]!, servers[0]![2]!];
  let site = shipped.replace(first, instances.map((port) => `${indent}server 127.0.0.1:${port} ${params};`).join('\n'));
  for (const other of servers.slice(1)) site = site.replace(`${other[0]}\n`, '');
  site = site.replace(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${listen};`);
  if (!routed) {
    const hashed = /^\s*hash \$http_authorization consistent;\n/m;
    if (!hashed.test(site)) throw new Error(`${CONF}: no "hash $http_authorization consistent;" line to remove for round robin`);
    site = site.replace(hashed, '');
  }
  return site;
}

/** The unprivileged main configuration around the site, logging each request to `accessLog`. */
function mainConfig(dir: string, site: string, accessLog: string): string {
  const tag = TAG_HEADER.replaceAll('-', '_');
  return unprivilegedNginxConfig(dir, site, {
    workerConnections: 4096,
    http: `log_format fleet '$msec $request_time $status $upstream_addr $upstream_status $http_${tag}';\n  access_log ${accessLog} fleet buffer=256k flush=1s;`,
  });
}

export interface Nginx {
  port: number;
  accessLog: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts nginx in `dir` (created) and resolves once it accepts connections on `port`. */
export async function startNginx(dir: string, port: number, instances: readonly number[], routed: boolean): Promise<Nginx> {
  if (NGINX === undefined) throw new Error('BENCH_MODE=fleet needs nginx (Debian: apt-get install nginx-light)');
  mkdirSync(dir, { recursive: true });
  const accessLog = join(dir, 'access.log');
  writeFileSync(join(dir, 'nginx.conf'), mainConfig(dir, siteConfig(port, instances, routed), accessLog));
  const proc = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (c: Buffer) => void (output += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => void (output += c.toString()));
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGQUIT'); // graceful: the access log buffer is written out
    await new Promise((resolve) => proc.once('exit', resolve));
  };
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited (${proc.exitCode}): ${output}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(true));
      socket.on('error', () => resolve(false));
      socket.on('connect', () => socket.destroy());
    });
    if (accepted) return { port, accessLog, process: proc, stop };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await stop();
  throw new Error(`nginx did not listen on ${port}: ${output}`);
}

/** One request as nginx logged it. */
export interface LoggedRequest {
  /** When it started, in ms since the epoch ($msec - $request_time: millisecond resolution). */
  startMs: number;
  ms: number;
  status: number;
  /** The instance port that answered (the last one tried). */
  instance: number;
  /** Instances tried: 2 when nginx retried on the next one. */
  tried: number;
  tenant: number;
  kind: string;
}

/** The access log's requests with a tag, from byte `from` on (a phase's part of the log), in start order. */
export async function readAccessLog(file: string, from = 0): Promise<LoggedRequest[]> {
  const requests: LoggedRequest[] = [];
  const lines = createInterface({ input: createReadStream(file, { start: from }), crlfDelay: Infinity });
  for await (const line of lines) {
    const [msec, time, status, ...rest] = line.split(' ');
    const tag = rest.at(-1) ?? '-';
    const dot = tag.indexOf('.');
    if (dot === -1) continue;
    // $upstream_addr lists every instance tried ("a, b" after a retry): the last one answered.
    const ports = [...line.matchAll(/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
    const ms = Number(time) * 1000;
    requests.push({
      startMs: Number(msec) * 1000 - ms,
      ms,
      status: Number(status),
      instance: ports.at(-1) ?? 0,
      tried: ports.length,
      tenant: Number(tag.slice(0, dot)),
      kind: tag.slice(dot + 1),
    });
  }
  return requests.sort((a, b) => a.startMs - b.startMs);
}

/** The p-th percentile (0-100) of the values, nearest rank; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
