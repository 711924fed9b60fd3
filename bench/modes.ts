import { join } from 'node:path';

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
  // A later change adds e.g.:
  // 'postgres-redis': {
  //   description: 'PostgreSQL and Redis from DATABASE_URL / REDIS_URL',
  //   async prepare({ env }) {
  //     return { databaseUrl: required(env, 'DATABASE_URL'), serviceEnv: { REDIS_URL: required(env, 'REDIS_URL') }, cleanup: async () => {} };
  //   },
  // },
  // workers: { ..., async prepare(ctx) { return { ...sqlite, serviceEnv: { WORKERS: '2' } } } },
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
