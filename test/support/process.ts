import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { BIN } from './cli.js';
import { httpCall } from './server.js';

/** Ports freePort has handed out in this process: the kernel may offer a just-released one again. */
const handedOut = new Set<number>();

/**
 * A free TCP port on loopback (bound then released), never one this process was given before:
 * two calls in a row (a server's PORT and its METRICS_PORT) must not get the same port.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        const bound = typeof address === 'object' && address ? address.port : 0;
        server.close(() => resolve(bound));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

export interface ServerProcess {
  port: number;
  child: ChildProcess;
  /** stdout and stderr as they arrived, interleaved. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Resolves with the exit code once the process has exited (by itself or after stop()). */
  exited: Promise<number | null>;
}

/**
 * Starts `listings-api serve` as operators run it, in its own process, and waits until it is
 * healthy. The environment is the product's defaults (the dashboard on the API's port under
 * `dashboard.localhost`) plus `env`.
 */
export async function startServerProcess(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    output += c.toString();
    stdout += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    output += c.toString();
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${output}`);
    try {
      if ((await httpCall(port, '/healthz')).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    child,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

export { isRunning } from './pids.js';
