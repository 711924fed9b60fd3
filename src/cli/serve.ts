import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { loadConfig, type Config } from '../config/index.js';
import { hostForCountry } from '../core/countries.js';
import { dashboardUrl } from '../dashboard/url.js';
import { ensureDemo, ensureDemoMember } from '../demo/demo-data.js';
import { createLogger } from '../core/logger.js';
import { createService } from '../service.js';
import { openStore } from '../storage/index.js';
import { curlLine } from './commands.js';
import { CliError } from './output.js';

/**
 * `serve`: migrations, then the API in the foreground until SIGINT/SIGTERM, then a graceful
 * shutdown (in-flight requests finish). `--demo` (what `npm start` runs) first makes sure the demo
 * data exists and prints a fresh key with a curl line that works.
 *
 * `--workers N` runs N processes on the one port (node:cluster): the primary applies migrations
 * and `--demo` once, forks N workers that each run the whole service, restarts a worker that
 * crashes (with a log line), and on SIGTERM/SIGINT forwards the signal and exits 0 once every
 * worker has shut down gracefully. Default: one worker per core when REDIS_URL is set, else 1.
 * Without REDIS_URL more than one worker is a usage error (exit 2): each worker would keep its
 * own rate limits, multiplying every key's limit by N. With one worker nothing is forked.
 */
export interface ServeOptions {
  demo?: boolean;
  workers?: string;
}

export async function serveCommand(opts: ServeOptions): Promise<void> {
  const config = loadConfig();
  // A forked worker re-runs this command line: it serves, nothing more (the primary did the rest).
  if (cluster.isWorker) return serveOne(config, { demo: false, worker: true });
  const workers = workerCount(opts.workers, config);
  if (workers === 1) return serveOne(config, { demo: opts.demo === true, worker: false });
  return servePrimary(config, opts.demo === true, workers);
}

/** The number of worker processes `--workers` asks for, or the default; usage errors exit 2. */
export function workerCount(raw: string | undefined, config: Config): number {
  if (raw === undefined) return config.redisUrl ? availableParallelism() : 1;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1024) {
    throw new CliError(`--workers: expected a whole number from 1 to 1024, got "${raw}"`, 2);
  }
  const n = Number(raw);
  if (n > 1 && !config.redisUrl) {
    throw new CliError(
      `--workers ${n} needs REDIS_URL: without a shared Redis every worker would keep its own rate limits, multiplying each key's limit by ${n}`,
      2,
    );
  }
  return n;
}

const say = (text: string) => process.stdout.write(`${text}\n`);

function listeningLine(config: Config, workers: number): string {
  const port = config.port === 80 ? '' : `:${config.port}`;
  const processes = workers > 1 ? ` with ${workers} worker processes` : '';
  return `Listings API listening on ${config.host}:${config.port}${processes}; countries ${config.countries.join(', ')}, e.g. http://${hostForCountry(config.countries[0]!, config.apiDomain)}${port}/v1/listings`;
}

async function printDemo(store: Parameters<typeof ensureDemo>[0], config: Config): Promise<void> {
  const demo = await ensureDemo(store, new Date());
  say(demo.created ? '\nCreated the demo data set.' : '\nUsing the existing demo data set.');
  say(`Demo API key (sg, shown once):  ${demo.key}`);
  say(`Try:  ${curlLine(config, demo.key)}\n`);
  if (config.dashboardPort !== null) {
    // The demo organisation's dashboard member, with a new password at every start (only its hash is kept).
    const member = await ensureDemoMember(store, new Date());
    say(`Dashboard sign-in (demo member, new password each start):  ${member.email}  /  ${member.password}\n`);
  }
}

/** Where the dashboard is, once listening (port 0: the one picked), or nothing when DASHBOARD_PORT=off. */
function dashboardLine(config: Config, port?: number): string | undefined {
  if (config.dashboardPort === null) return undefined;
  const url = dashboardUrl(config, port ?? config.dashboardPort);
  return `Dashboard (Settings > Developer: keys and origins) ${url === undefined ? 'on a free port (DASHBOARD_PORT=0)' : `at ${url}`}`;
}

/** One process serving until a signal: the whole service (the default, and each worker). */
async function serveOne(config: Config, opts: { demo: boolean; worker: boolean }): Promise<void> {
  const service = await createService(config);
  if (opts.demo) await printDemo(service.store, config);

  await service.listen();
  if (!opts.worker) say(listeningLine(config, 1));
  const dashboard = opts.worker ? undefined : dashboardLine(config, service.dashboard?.port());
  if (dashboard !== undefined) say(dashboard);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    service.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        service.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

/** Longest wait for workers to finish after a signal before they are killed (exit 1). */
const SHUTDOWN_GRACE_MS = 30_000;

async function servePrimary(config: Config, demo: boolean, workers: number): Promise<void> {
  const logger = await createLogger(config.logLevel);

  // Once, before any worker exists: workers then find nothing to migrate.
  const store = openStore(config.databaseUrl, { poolSize: 1, statementTimeoutMs: config.databaseStatementTimeoutMs });
  try {
    await store.migrate();
    if (demo) await printDemo(store, config);
  } finally {
    await store.close();
  }

  const alive = new Set<Worker>();
  const served = new Set<Worker>();
  let announced = false;
  let stopping = false;
  let failed = false;
  let forwarded: NodeJS.Signals | undefined;
  const restarts: number[] = [];

  const fork = () => {
    const worker = cluster.fork();
    alive.add(worker);
    logger.info({ worker_pid: worker.process.pid }, 'worker started');
  };

  cluster.on('listening', (worker) => {
    served.add(worker);
    if (!announced && served.size >= workers) {
      announced = true;
      say(listeningLine(config, workers));
      const dashboard = dashboardLine(config);
      if (dashboard !== undefined) say(dashboard);
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    alive.delete(worker);
    const hadServed = served.delete(worker);
    if (stopping) {
      // Killed by the forwarded signal itself: it had not installed its handlers yet, so it was
      // not serving anything to finish.
      if (code !== 0 && signal !== forwarded) failed = true;
      if (alive.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    if (!hadServed) {
      // It never got to listen (bad configuration, port taken, database down): restarting would
      // only loop. Its own error is already on stderr.
      logger.error({ worker_pid: worker.process.pid, code, signal }, 'worker exited before it could serve; stopping');
      stopAll('SIGTERM', true);
      return;
    }
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && restarts[0]! < now - 10_000) restarts.shift();
    const delay = restarts.length > 3 ? 1000 : 0; // a crash loop is slowed down, not a tight spin
    logger.warn({ worker_pid: worker.process.pid, code, signal }, `worker ${worker.process.pid} exited unexpectedly; starting a replacement`);
    setTimeout(() => {
      if (!stopping) fork();
    }, delay);
  });

  const stopAll = (signal: NodeJS.Signals, failure = false) => {
    if (stopping) return;
    stopping = true;
    failed = failure;
    forwarded = signal;
    logger.info({ signal }, 'shutting down: stopping the workers');
    if (alive.size === 0) process.exit(failed ? 1 : 0);
    for (const worker of alive) worker.process.kill(signal);
    setTimeout(() => {
      logger.error('workers did not stop in time; killing them');
      for (const worker of alive) worker.process.kill('SIGKILL');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
  };
  process.once('SIGINT', () => stopAll('SIGINT'));
  process.once('SIGTERM', () => stopAll('SIGTERM'));

  for (let i = 0; i < workers; i++) fork();
}
