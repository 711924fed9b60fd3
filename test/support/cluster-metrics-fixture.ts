import cluster, { type Worker } from 'node:cluster';
import { Counter, Gauge, Registry } from 'prom-client';
import { answerPrimary, ClusterMetrics } from '../../src/metrics/cluster.js';

/**
 * A primary and its workers using src/metrics/cluster.ts as `serve --workers` does, with counters of
 * chosen values (test/unit/cluster-metrics.test.ts): `node cluster-metrics-fixture.js V1 V2 ...`
 * forks one worker per value, one at a time, scraping after each starts serving; then kills each
 * worker but the last with SIGKILL, scraping after each exit. Every scrape goes to stdout as one
 * JSON string per line.
 */
if (cluster.isWorker) {
  const registry = new Registry();
  new Counter({ name: 'fixture_seconds_total', help: 'A float counter.', registers: [registry] }).inc(Number(process.env.VALUE));
  new Gauge({ name: 'fixture_workers', help: 'One per live worker.', registers: [registry] }).set(1);
  answerPrimary(registry);
  process.send!({ type: 'serving' });
} else {
  const metrics = new ClusterMetrics();
  const scrape = async () => {
    process.stdout.write(`${JSON.stringify(await metrics.scrape())}\n`);
  };
  const workers: Worker[] = [];
  for (const value of process.argv.slice(2)) {
    const worker = cluster.fork({ VALUE: value });
    await new Promise<void>((resolve) =>
      worker.on('message', (message: { type?: string }) => {
        if (message.type !== 'serving') return;
        metrics.workerServing(worker);
        resolve();
      }),
    );
    // One at a time: the primary first hears from the workers in the order they were forked.
    await scrape();
    workers.push(worker);
  }
  for (const worker of workers.slice(0, -1)) {
    await new Promise<void>((resolve) => {
      worker.once('exit', () => {
        metrics.workerExited(worker);
        resolve();
      });
      worker.process.kill('SIGKILL');
    });
    await scrape();
  }
  workers.at(-1)!.process.kill('SIGKILL');
  process.exit(0);
}
