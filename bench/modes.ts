import { join } from 'node:path';
import { createScratchPostgres } from '../test/support/database.js';

/**
 * How the service under test is deployed. A mode says where the data lives and how the service
 * process is started; everything else (data set, baseline, load, report) is shared, so adding a
 * mode is one entry in MODES. Select with BENCH_MODE (default `sqlite`).
 */
export interface ModeContext {
  /** A fresh temp folder owned by this run (removed at the end). */
  workDir: string;
  env: NodeJS.ProcessEnv;
}

export interface PreparedMode {
  /** DATABASE_URL for both the seeding (openStore, run here) and the service process. */
  databaseUrl: string;
  /** Extra environment for the service process (REDIS_URL, worker counts, ...). */
  serviceEnv: Record<string, string>;
  /** The `serve` command line after `node bin/listings-api.js`; default ['serve']. */
  serveArgs?: string[];
  /** Removes what `prepare` made outside workDir (workDir itself is removed by the runner). */
  cleanup(): Promise<void>;
}

export interface BenchMode {
  description: string;
  prepare(ctx: ModeContext): Promise<PreparedMode>;
}

export const MODES: Record<string, BenchMode> = {
  sqlite: {
    description: 'one process, embedded SQLite in a fresh temp file, in-memory rate limiter',
    async prepare({ workDir }) {
      return { databaseUrl: `file:${join(workDir, 'bench.db')}`, serviceEnv: {}, cleanup: async () => {} };
    },
  },
  'postgres-redis': {
    description: 'one process on PostgreSQL (a fresh database) with rate limits in Redis',
    prepare: (ctx) => postgresRedis(ctx, ['--workers', '1']),
  },
  workers: {
    description: 'PostgreSQL and Redis, `serve --workers 2`: two processes on one port',
    prepare: (ctx) => postgresRedis(ctx, ['--workers', '2']),
  },
};

/** An environment variable a mode cannot run without. */
export function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') throw new Error(`this benchmark mode needs ${name} in the environment`);
  return value.trim();
}

export function modeNamed(name: string): BenchMode {
  const mode = MODES[name];
  if (mode === undefined || !Object.hasOwn(MODES, name)) {
    throw new Error(`BENCH_MODE=${name} is not a benchmark mode (available: ${Object.keys(MODES).join(', ')})`);
  }
  return mode;
}

/**
 * A fresh PostgreSQL database made from BENCH_DATABASE_URL (default: TEST_DATABASE_URL, else the
 * local server) and dropped afterwards; Redis from REDIS_URL (default: TEST_REDIS_URL, else local)
 * with a key prefix of this run's own.
 */
async function postgresRedis({ env }: ModeContext, serveArgs: string[]): Promise<PreparedMode> {
  const admin = env.BENCH_DATABASE_URL ?? env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const redisUrl = env.REDIS_URL ?? env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const database = await createScratchPostgres(admin, 'listings_bench');
  return {
    databaseUrl: database.url,
    serviceEnv: { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `${new URL(database.url).pathname.slice(1)}:rl:` },
    serveArgs: ['serve', ...serveArgs],
    cleanup: database.drop,
  };
}
