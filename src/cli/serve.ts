import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { redactKeys } from '../auth/key-format.js';
import { loadConfig, type Config } from '../config/index.js';
import { createLogger, type Logger } from '../core/logger.js';
import { apiBaseUrl, curlLine, dashboardUrl } from '../config/urls.js';
import { DEMO_MEMBER_EMAIL, demoLeftovers, ensureDemo, ensureDemoMember } from '../demo/demo-data.js';
import type { ClusterMetrics } from '../metrics/cluster.js';
import { checkDeprecations } from '../http/deprecations.js';
import { ENDPOINTS } from '../http/v1/endpoints/index.js';
import { createService } from '../service.js';
import { openStore, type Store } from '../storage/index.js';
import { checkDatabaseFile } from './database-file.js';
import { listenFailure } from './listen-error.js';
import { CliError } from './output.js';
import { withStore } from './store.js';

/**
 * `serve`: migrations, then the API (and the dashboard) in the foreground until SIGINT/SIGTERM,
 * then a graceful shutdown within SHUTDOWN_TIMEOUT_MS. `--demo` (what `npm start` runs), once the
 * service listens, makes sure the demo data exists and prints a fresh key with a curl line that
 * works. A listener that cannot start (a port in use) ends the command with one line naming its
 * setting (listen-error.ts) before any of that. A missing SQLite file is created with a notice on
 * stderr (database-file.ts).
 *
 * Lines for people (the demo banner, where to find the API and the dashboard) go to stderr, so
 * that stdout carries only the log: a log collector never stores the demo key or password (D20).
 *
 * `--workers N` runs N processes on the one port (node:cluster): the primary applies migrations
 * once, forks N workers that each run the whole service and report when they are serving, and
 * once all of them serve, runs `--demo` once. A worker that fails before that (port in use, database unreachable, failed migration)
 * stops the whole command: exit 1 with one line on stderr, never a restart loop. One that crashes
 * later is restarted with exponential backoff; after MAX_CRASHES crashes within CRASH_WINDOW_MS the
 * command gives up (exit 1, one line). A replacement that cannot start (the database away) is
 * tried again with the same backoff until it does, while the others serve. On SIGTERM/SIGINT the primary stops each serving worker (see
 * drainWorker: no connection is lost between the primary and a worker) and exits 0 once every
 * worker has drained. Default: one worker per core when REDIS_URL is set, else 1.
 * Without REDIS_URL more than one worker is a usage error (exit 2): each worker would keep its own
 * rate limits, multiplying every key's limit by N. With one worker nothing is forked.
 */
export interface ServeOptions {
  demo?: boolean;
  workers?: string;
}

export async function serveCommand(opts: ServeOptions): Promise<void> {
  const config = loadConfig();
  // D29: a deprecated prefix must cover an endpoint; checked before migrations or workers start.
  checkDeprecations(config.apiDeprecations, ENDPOINTS.map((endpoint) => endpoint.url));
  // A forked worker re-runs this command line: it serves, nothing more (the primary did the rest).
  if (cluster.isWorker) return runWorker(config);
  const workers = workerCount(opts.workers, config);
  checkDatabaseFile(config.databaseUrl, process.env, { create: true, stderr: (text) => process.stderr.write(text) });
  try {
    if (workers === 1) return await serveOne(config, opts.demo === true);
    return await servePrimary(config, opts.demo === true, workers);
  } catch (error) {
    // A port in use: one line naming PORT, DASHBOARD_PORT or METRICS_PORT (listen-error.ts).
    throw listenFailure(error, config) ?? error;
  }
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

/** A line for people, on stderr (see above). */
const tell = (text: string) => process.stderr.write(`${text}\n`);

function listeningLines(config: Config, workers: number, ports: { api?: number; dashboard?: number } = {}): string[] {
  const processes = workers > 1 ? ` with ${workers} worker processes` : '';
  const lines = [
    `Listings API listening on ${config.host}:${ports.api ?? config.port}${processes}; countries ${config.countries.join(', ')}, e.g. ${apiBaseUrl(config.countries[0]!, config, ports.api)}/v1/listings`,
  ];
  if (config.dashboardPort !== 'off') {
    const url = dashboardUrl(config, ports);
    lines.push(`Dashboard (Settings > Developer: keys and origins) ${url === undefined ? 'on a free port (DASHBOARD_PORT=0)' : `at ${url}`}`);
  }
  return lines;
}

/**
 * The demo banner's lines (`--demo`): a fresh key, the previous demo key revoked, and the demo member's
 * login. Only once the service listens (every worker, with --workers): a server that cannot start
 * (a port in use) prints no credentials and revokes no key, which may be the demo key of the
 * server that holds the port, on the same database.
 */
async function demoBanner(store: Store, config: Config, apiPort?: number): Promise<string[]> {
  // The demo's photos are served here (src/http/demo-images.ts), at the address the banner prints.
  const demo = await ensureDemo(store, new Date(), apiBaseUrl(config.countries[0]!, config, apiPort));
  const lines = [
    '',
    `${demo.created ? 'Created the demo data set' : 'Using the existing demo data set'}: organisation "Demo Realty Pte Ltd", account id ${demo.accountId}.`,
    `Demo API key (sg, shown once):  ${demo.key}`,
    ...(demo.revokedKeyIds.length === 0 ? [] : [`(The earlier demo key${demo.revokedKeyIds.length === 1 ? ' is' : 's are'} revoked: one demo key at a time.)`]),
    `Try:  ${curlLine(config, demo.key)}`,
  ];
  if (config.dashboardPort !== 'off') {
    // The demo organisation's dashboard member, with a new password at every start (only its hash is kept).
    const member = await ensureDemoMember(store, new Date());
    lines.push(`Dashboard sign-in (demo member, new password each start):  ${member.email}  /  ${member.password}`);
  }
  lines.push('These demo credentials are for local use: they are printed here, on stderr, and never logged.', '');
  return lines;
}

/**
 * A plain `serve` on a database where `serve --demo` once ran: the demo member's sign-in ends and
 * the demo keys that still work are named, in the log (a warning) and on stderr, at every start
 * while they work (demoLeftovers; issue 40 item 11). No lines when there is nothing of the demo,
 * and a failed check is a warning, not a reason to stop serving.
 */
async function demoNotice(store: Store, logger: Logger): Promise<string[]> {
  let leftovers;
  try {
    leftovers = await demoLeftovers(store);
  } catch (error) {
    // Serving goes on: the check is for the operator's attention, not a condition of serving.
    logger.warn({ err: error }, 'could not check the database for demo credentials');
    return [];
  }
  const { endedSignIn, workingKeys } = leftovers;
  if (!endedSignIn && workingKeys.length === 0) return [];
  logger.warn(
    { demo_sign_in_ended: endedSignIn, demo_keys: workingKeys.map((k) => ({ key_id: k.id, key_prefix: k.prefix })) },
    'this database holds demo credentials from serve --demo or listings-api demo',
  );
  const lines = ['', 'WARNING: this database was used for the demo (serve --demo, npm start or listings-api demo).'];
  if (endedSignIn) lines.push(`  The demo dashboard sign-in (${DEMO_MEMBER_EMAIL}) is ended: its password no longer works and its sessions are signed out.`);
  if (workingKeys.length > 0) {
    lines.push(
      `  ${workingKeys.length === 1 ? 'This demo API key still works' : 'These demo API keys still work'} on the demo organisation's listings: ${workingKeys.map((k) => `${k.prefix}... (id ${k.id})`).join(', ')}.`,
      `  Revoke ${workingKeys.length === 1 ? 'it' : 'them'} before serving real traffic: listings-api key revoke ${workingKeys.map((k) => k.id).join(' ')}`,
    );
  }
  lines.push('');
  return lines;
}

/** Stops the process on the first SIGINT/SIGTERM: drains and closes, then exits 0 (1 if closing failed). */
function onSignals(stop: (signal: NodeJS.Signals) => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    stop(signal).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', handle);
  process.once('SIGTERM', handle);
}

/** One process serving until a signal: the whole service. A failure to start is thrown (one line, exit 1). */
async function serveOne(config: Config, demo: boolean): Promise<void> {
  const service = await createService(config);
  try {
    await service.listen();
    for (const line of demo ? await demoBanner(service.store, config, service.apiPort()) : await demoNotice(service.store, service.logger)) tell(line);
  } catch (error) {
    await service.close().catch(() => undefined);
    throw error;
  }
  onSignals(() => service.close(), service.logger);
  logCrashes(service.logger);
  for (const line of listeningLines(config, 1, { api: service.apiPort(), dashboard: service.dashboard?.port() })) tell(line);
}

/**
 * A serving process that meets an error nothing handled (an exception thrown from an event, a
 * rejected promise nobody awaited) writes why as a JSON line of its log, with the stack, before
 * it exits 1: the operator's log says why it went, not only stderr (issue 40 item 1). It does
 * not go on: its state is unknown after such an error. With --workers the primary starts a
 * replacement; a service manager restarts a single process.
 */
function logCrashes(logger: Logger): void {
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, `process crashed (${origin === 'unhandledRejection' ? 'a promise rejected with no handler' : 'an uncaught exception'}); exiting`);
    // The log's lines still held are written at exit (core/logger.ts).
    process.exit(1);
  });
}

/** Messages a worker sends its primary. `stop`: the worker was sent a signal; the primary stops it. */
type WorkerMessage = { type: 'serving' } | { type: 'failed'; reason: string } | { type: 'stop'; signal: NodeJS.Signals };
/** Messages the primary sends a worker. */
type PrimaryMessage = { type: 'drain' };

/** A worker: serves like `serveOne`, tells the primary when it serves, or why it could not start. */
async function runWorker(config: Config): Promise<void> {
  let service: Awaited<ReturnType<typeof createService>> | undefined;
  try {
    // With METRICS_PORT, the primary listens for scrapes and sums every worker's metrics.
    service = await createService(config, { clusterWorker: true });
    await service.listen();
  } catch (error) {
    const reason = oneLine(listenFailure(error, config) ?? error);
    await service?.close().catch(() => undefined);
    process.send?.({ type: 'failed', reason } satisfies WorkerMessage, () => process.exit(1));
    return;
  }
  const running = service;
  logCrashes(running.logger);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    running.logger.info('shutting down: finishing in-flight requests');
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        running.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // The primary says when to stop, after the last connection it handed this worker (drainWorker).
  // The worker's listeners are closed before stop() returns (service.close), so that a
  // connection handed to it is never refused and sent back to a primary that is closing.
  process.on('message', (message: PrimaryMessage) => {
    if (message?.type === 'drain') stop();
  });
  // A signal sent to the worker itself (Ctrl-C reaches the whole process group, and a service
  // manager may signal every process of the unit): the primary stops it, as above. Without a
  // primary, it stops by itself.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    if (process.connected) process.send?.({ type: 'stop', signal } satisfies WorkerMessage);
    else stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.send?.({ type: 'serving' } satisfies WorkerMessage);
}

function oneLine(error: unknown): string {
  return redactKeys((error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ').trim());
}

/** Longest wait for workers to finish after a signal before they are killed (exit 1): their own drain limit, plus a margin. */
const graceMs = (config: Config) => config.shutdownTimeoutMs + 5_000;
/** A crash loop is given up after this many crashes of serving workers within CRASH_WINDOW_MS. */
export const MAX_CRASHES = 5;
export const CRASH_WINDOW_MS = 60_000;
/** Restart delay after the n-th recent crash: 100 ms, doubling, at most 5 s. */
export const restartDelayMs = (recentCrashes: number) => Math.min(5_000, 100 * 2 ** Math.max(0, recentCrashes - 1));

async function servePrimary(config: Config, demo: boolean, workers: number): Promise<void> {
  const logger = await createLogger(config.logLevel);
  await migrateOnce(config);
  const metrics = await listenForSummedScrapes(config, logger);
  new WorkerSupervisor(config, demo, workers, logger, metrics).start();
}

/** Once, before any worker exists: workers then find nothing to migrate. */
async function migrateOnce(config: Config): Promise<void> {
  const store = openStore(config.databaseUrl, {
    poolSize: 1,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    busyTimeoutMs: config.databaseBusyTimeoutMs,
  });
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
}

/**
 * METRICS_PORT: one scrape of the primary shows every worker's counts, summed, those of workers
 * that exited included, so that no counter ever drops; it asks only serving workers, and never
 * waits long (src/metrics/cluster.ts).
 */
async function listenForSummedScrapes(config: Config, logger: Logger): Promise<ClusterMetrics | undefined> {
  if (config.metricsPort === 'off') return undefined;
  const [{ listenForScrapes }, clusterMetrics] = await Promise.all([import('../metrics/index.js'), import('../metrics/cluster.js')]);
  const summed = new clusterMetrics.ClusterMetrics();
  await listenForScrapes(() => summed.scrape(), config.metricsPort, config.host, (error) => logger.error({ err: error }, 'metrics scrape failed'));
  return summed;
}

/**
 * The primary's side of `--workers` (see the comment at the top): forks the workers, announces
 * once all of them serve, restarts those that crash, and stops them all on a signal or a failure.
 */
class WorkerSupervisor {
  private readonly alive = new Set<Worker>();
  private readonly serving = new Set<Worker>();
  private readonly drained = new Set<Worker>();
  private readonly startFailures = new Map<Worker, string>();
  private readonly crashes: number[] = [];
  private announced = false;
  private startFailuresInARow = 0;
  private stopping = false;
  private forwarded: NodeJS.Signals | undefined;
  private exitCode: 0 | 1 = 0;

  constructor(
    private readonly config: Config,
    private readonly demo: boolean,
    private readonly workers: number,
    private readonly logger: Logger,
    private readonly metrics: ClusterMetrics | undefined,
  ) {}

  start(): void {
    cluster.on('exit', (worker, code, signal) => this.exited(worker, code, signal));
    process.once('SIGINT', () => this.stopAll('SIGINT', 0));
    process.once('SIGTERM', () => this.stopAll('SIGTERM', 0));
    for (let i = 0; i < this.workers; i++) this.fork();
  }

  /**
   * Stops a serving worker without losing a connection. In cluster mode the primary accepts the
   * connections and hands them to the workers; a worker that closes its listener by itself is
   * still handed connections until the primary hears of it, and refuses them, and Node gives
   * those back to the primary, which loses them if every worker has closed meanwhile (they were
   * answered by no one until the process exited). So the primary first tells the worker to drain
   * (the message reaches it after every connection handed to it, which it answers), then
   * disconnects it (worker.disconnect(): at once, the primary hands it nothing more, and once no
   * worker is left it stops accepting). The worker exits when it has drained.
   */
  private drainWorker(worker: Worker): void {
    if (this.drained.has(worker) || !worker.isConnected()) return;
    this.drained.add(worker);
    worker.send({ type: 'drain' } satisfies PrimaryMessage);
    worker.disconnect();
  }

  private fork(): void {
    const worker = cluster.fork();
    this.alive.add(worker);
    this.logger.info({ worker_pid: worker.process.pid }, 'worker started');
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'failed') this.startFailures.set(worker, message.reason);
      // A worker that was sent a signal itself. Outside a shutdown it is replaced once it exits.
      if (message.type === 'stop') this.drainWorker(worker);
      if (message.type !== 'serving') return;
      this.serving.add(worker);
      this.metrics?.workerServing(worker);
      this.logger.info({ worker_pid: worker.process.pid }, 'worker serving');
      // It got to serve while the command was stopping: it stops too.
      if (this.stopping) this.drainWorker(worker);
      if (!this.announced && this.serving.size >= this.workers) {
        this.announced = true;
        void this.announce();
      }
    });
  }

  /**
   * Once every worker serves: the demo banner (demoBanner, its key confirmed by every worker on
   * PostgreSQL before it is shown, as any command's change is: D4), then where to find the service.
   */
  private async announce(): Promise<void> {
    let banner: string[];
    try {
      banner = await withStore(
        (store) => (this.demo ? demoBanner(store, this.config) : demoNotice(store, this.logger)),
        { migrate: false, env: process.env },
      );
    } catch (error) {
      if (this.demo) {
        this.stopAll('SIGTERM', 1, `could not create the demo data: ${oneLine(error)}`);
        return;
      }
      this.logger.warn({ err: error }, 'could not check the database for demo credentials');
      banner = [];
    }
    if (!this.stopping) for (const line of [...banner, ...listeningLines(this.config, this.workers)]) tell(line);
  }

  /** Stops every worker and exits with `code`; `reason` (one line) goes to stderr. */
  private stopAll(signal: NodeJS.Signals, code: 0 | 1, reason?: string): void {
    if (this.stopping) return;
    this.stopping = true;
    this.forwarded = signal;
    this.exitCode = code;
    if (reason !== undefined) process.stderr.write(`listings-api: ${reason}\n`);
    this.logger.info({ signal }, 'shutting down: stopping the workers');
    if (this.alive.size === 0) process.exit(this.exitCode);
    for (const worker of this.alive) {
      // One still starting has no connection to answer: the signal ends it (or, if it already
      // serves and its 'serving' message is on its way, it asks to be stopped: drainWorker).
      if (this.serving.has(worker)) this.drainWorker(worker);
      else worker.process.kill(signal);
    }
    setTimeout(() => {
      this.logger.error('workers did not stop in time; killing them');
      for (const worker of this.alive) worker.process.kill('SIGKILL');
      process.exit(1);
    }, graceMs(this.config)).unref();
  }

  private exited(worker: Worker, code: number, signal: string | null): void {
    this.alive.delete(worker);
    this.metrics?.workerExited(worker);
    const hadServed = this.serving.delete(worker);
    if (this.stopping) {
      // A worker killed by the forwarded signal itself had not installed its handlers yet: it was
      // not serving anything to finish. Any other failure to stop cleanly fails the command.
      if (code !== 0 && signal !== this.forwarded) this.exitCode = 1;
      if (this.alive.size === 0) process.exit(this.exitCode);
      return;
    }
    const startFailure = this.startFailures.get(worker);
    this.startFailures.delete(worker);
    if (!hadServed && !this.announced) {
      // It never got to serve (port in use, database unreachable, failed migration): restarting
      // would only loop. Its reason is the one line the operator needs.
      const reason = startFailure ?? `exited with ${signal ?? `code ${code}`} before it could serve`;
      this.stopAll('SIGTERM', 1, `a worker could not start: ${reason}`);
      return;
    }
    if (!hadServed) return this.replacementFailed(worker, code, signal, startFailure);
    this.startFailuresInARow = 0;
    this.crashed(worker, code, signal);
  }

  /**
   * A replacement for a crashed worker could not start, once the command had served: what it
   * needs may be away for a while (the database during a failover), and the other workers go on
   * serving meanwhile. It is tried again with the same backoff, for as long as it takes; these
   * are not crashes of serving workers, so they never end the command (issue 40 item 1).
   */
  private replacementFailed(worker: Worker, code: number, signal: string | null, reason: string | undefined): void {
    this.startFailuresInARow++;
    const delay = restartDelayMs(this.startFailuresInARow);
    this.logger.warn(
      { worker_pid: worker.process.pid, code, signal, reason: reason ?? null, restart_in_ms: delay },
      `a replacement worker could not start${reason === undefined ? '' : `: ${reason}`}; trying again`,
    );
    setTimeout(() => {
      if (!this.stopping) this.fork();
    }, delay);
  }

  /** A worker that served exited by itself: started again after a backoff, unless it is a crash loop. */
  private crashed(worker: Worker, code: number, signal: string | null): void {
    const now = Date.now();
    this.crashes.push(now);
    while (this.crashes.length > 0 && this.crashes[0]! <= now - CRASH_WINDOW_MS) this.crashes.shift();
    if (this.crashes.length >= MAX_CRASHES) {
      this.stopAll('SIGTERM', 1, `workers crashed ${this.crashes.length} times within ${CRASH_WINDOW_MS / 1000} s (the last with ${signal ?? `code ${code}`}); giving up`);
      return;
    }
    const delay = restartDelayMs(this.crashes.length);
    // Why it went is the worker's own last log line (logCrashes), or its signal.
    this.logger.warn({ worker_pid: worker.process.pid, code, signal, restart_in_ms: delay }, `worker ${worker.process.pid} exited unexpectedly; starting a replacement`);
    setTimeout(() => {
      if (!this.stopping) this.fork();
    }, delay);
  }
}
