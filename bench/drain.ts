/**
 * Shutdown under load (issue 29 item 5): clients keep hitting `listings-api serve` while SIGTERM
 * arrives, and every request's outcome is counted: answered, refused (ECONNREFUSED, the listener
 * is closed), reset, or closed without an answer; "waited for the deadline" counts the failures
 * that came only when the process exited. Informational, not part of `npm test`.
 *
 *   npm run build && node dist/bench/drain.js [--workers 2] [--rounds 5] [--fresh 8] [--keepalive 8]
 *       [--hold --timeout 5000] [--group] [--repo DIR]
 *
 * --fresh N      clients that open a new connection for every request, back to back
 * --keepalive N  clients that reuse one connection (0-10 ms between requests, so that some are
 *                idle at the signal) and open a new one when the server closes theirs
 * --hold         four connections whose request never completes keep the drain going until
 *                SHUTDOWN_TIMEOUT_MS (--timeout, default 10000), as slow clients would
 * --group        the signal goes to the whole process group (Ctrl-C; systemd's control-group kill)
 * --repo DIR     serve from another checkout's build (compare before/after)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? fallback : args[i + 1]!;
};
const flag = (name: string) => args.includes(`--${name}`);
const workers = Number(option('workers', '1'));
const rounds = Number(option('rounds', '5'));
const freshClients = Number(option('fresh', '8'));
const keepAliveClients = Number(option('keepalive', '8'));
const timeoutMs = Number(option('timeout', '10000'));
const bin = join(option('repo', fileURLToPath(new URL('../..', import.meta.url))), 'bin/listings-api.js');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function open(port: number): Promise<{ socket?: Socket; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const failed = (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message });
    socket.once('error', failed);
    socket.once('connect', () => {
      socket.off('error', failed);
      resolve({ socket });
    });
  });
}

type Outcome = { answered: true; close: boolean } | { answered: false; failure: string };

/** One request on a connected socket, and what became of it. */
function exchange(socket: Socket): Promise<Outcome> {
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    const finish = (outcome: Outcome) => {
      socket.off('data', onData).off('error', onError).off('end', onEnd).off('close', onEnd);
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffer.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffer.length >= end + 4 + length) finish({ answered: true, close: /\r\nconnection: *close/i.test(head) });
    };
    const onError = (error: NodeJS.ErrnoException) => finish({ answered: false, failure: error.code ?? error.message });
    const onEnd = () => finish({ answered: false, failure: 'closed without an answer' });
    socket.on('data', onData).on('error', onError).on('end', onEnd).on('close', onEnd);
    socket.write('GET /v1/listings HTTP/1.1\r\nHost: api.localhost\r\n\r\n');
  });
}

const totals = new Map<string, number>();
const add = (key: string, n = 1) => totals.set(key, (totals.get(key) ?? 0) + n);

for (let round = 0; round < rounds; round++) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bench-drain-'));
  const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `file:${dir}/db.sqlite`, LOG_LEVEL: 'warn', SHUTDOWN_TIMEOUT_MS: String(timeoutMs) };
  if (workers > 1) Object.assign(env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: `bench-drain-${process.pid}-${round}:` });
  const child = spawn(process.execPath, [bin, 'serve', '--workers', String(workers)], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: flag('group') });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  while (!/Listings API listening/.test(stderr)) {
    if (child.exitCode !== null) throw new Error(stderr);
    await sleep(50);
  }

  const held: Socket[] = [];
  if (flag('hold')) {
    for (let i = 0; i < 4; i++) {
      const { socket } = await open(port);
      socket!.on('error', () => {});
      socket!.write('GET /healthz HTTP/1.1\r\nHost: api.localhost\r\n');
      held.push(socket!);
    }
  }

  let signalAt: number | undefined = undefined;
  let stop = false;
  const failures: Array<{ what: string; at: number }> = [];
  const note = (what: string, outcome: Outcome | { refused: true }, started: number) => {
    if ('refused' in outcome) return add(`${what}: refused`);
    if (outcome.answered) return add(`${what}: answered${outcome.close ? ' (Connection: close)' : ''}`);
    add(`${what}: ${outcome.failure}`);
    if (signalAt !== undefined) failures.push({ what: `${what}: ${outcome.failure} (${Date.now() - started} ms after it was sent)`, at: Date.now() });
  };
  const freshLoop = async () => {
    while (!stop) {
      const started = Date.now();
      const { socket, error } = await open(port);
      if (error === 'ECONNREFUSED') {
        note('new connection', { refused: true }, started);
        await sleep(5);
        continue;
      }
      if (socket === undefined) {
        note('new connection', { answered: false, failure: `connect ${error}` }, started);
        continue;
      }
      note('new connection', await exchange(socket), started);
      socket.destroy();
    }
  };
  const keepAliveLoop = async () => {
    let socket: Socket | undefined;
    let serverClosed = false;
    while (!stop) {
      if (socket === undefined || serverClosed) {
        socket?.destroy();
        const opened = await open(port);
        if (opened.socket === undefined) {
          note('keep-alive client', opened.error === 'ECONNREFUSED' ? { refused: true } : { answered: false, failure: `connect ${opened.error}` }, Date.now());
          await sleep(5);
          socket = undefined;
          continue;
        }
        socket = opened.socket;
        serverClosed = false;
        // A good client drops a pooled connection the server closed while it was idle.
        socket.on('end', () => (serverClosed = true)).on('close', () => (serverClosed = true)).on('error', () => (serverClosed = true));
      }
      const started = Date.now();
      const outcome = await exchange(socket);
      note('keep-alive client', outcome, started);
      if (!outcome.answered || outcome.close) socket = undefined;
      await sleep(Math.floor(Math.random() * 10));
    }
    socket?.destroy();
  };
  const load = Promise.all([...Array.from({ length: freshClients }, freshLoop), ...Array.from({ length: keepAliveClients }, keepAliveLoop)]);
  await sleep(1500);
  signalAt = Date.now();
  if (flag('group')) process.kill(-child.pid!, 'SIGTERM');
  else child.kill('SIGTERM');
  const code = await exited;
  const exitAt = Date.now();
  await sleep(200);
  stop = true;
  await load;
  for (const socket of held) socket.destroy();
  rmSync(dir, { recursive: true, force: true });

  // A failure that came when the process exited: a request no one was going to answer.
  const atExit = failures.filter((f) => f.at >= exitAt - 20).length;
  add('failures that came only when the process exited', atExit);
  console.log(`round ${round}: exit ${code} ${exitAt - signalAt} ms after SIGTERM; failures: ${failures.length === 0 ? 'none' : ''}`);
  for (const f of failures) console.log(`  +${f.at - signalAt} ms  ${f.what}`);
}
console.log('\ntotals:');
for (const [key, n] of [...totals].sort()) console.log(`  ${key}: ${n}`);
