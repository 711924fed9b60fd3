import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { TestDatabase } from '../support/database.js';
import type { ServerProcess } from '../support/process.js';
export { prng } from '../support/random.js';

/** The shared Redis of the Redis suites; they skip, saying so, when it is not given. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL?.trim() || undefined;
export const SKIP_NO_REDIS = TEST_REDIS_URL ? false : 'TEST_REDIS_URL is not set: Redis suite skipped';

/** A key prefix no other test (or run) uses, so tests never touch each other's keys. */
export function uniquePrefix(label: string): string {
  return `listings-test:${label}:${process.pid}:${randomBytes(4).toString('hex')}:`;
}

/** Deletes this test's keys only (never FLUSHALL/FLUSHDB on the shared server). */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/** Sum of the per-second counters in a key's hash: what Redis has counted for it. */
/** After a server process on Redis: stop it if it still runs, delete its Redis keys, drop its database. */
export async function cleanUpServerOnRedis(server: ServerProcess | undefined, prefix: string, database: TestDatabase | undefined): Promise<void> {
  if (server?.child.exitCode === null) await server.stop();
  const redis = new Redis(TEST_REDIS_URL!);
  await deleteKeys(redis, prefix);
  await redis.quit();
  await database?.drop();
}

export async function countedInRedis(redis: Redis, key: string): Promise<number> {
  const hash = await redis.hgetall(key);
  return Object.values(hash).reduce((sum, v) => sum + Number(v), 0);
}


export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The redis-server binary for suites that run their own server (REDIS_SERVER overrides). */
export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';
export const HAVE_REDIS_SERVER = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' }).status === 0;

/** A private redis-server on `port` (no persistence), ready to answer when this resolves. */
export async function startRedisServer(port: number): Promise<{ child: ChildProcess; stop(signal?: NodeJS.Signals): Promise<void> }> {
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited early:\n${output}`);
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') break;
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not start:\n${output}`);
    }
    await sleep(50);
  }
  return {
    child,
    async stop(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
