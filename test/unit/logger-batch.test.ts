import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { destination, pino } from 'pino';
import { TurnBatch } from '../../src/core/logger.js';

/**
 * The serving logger's stream (src/core/logger.ts): request lines wait for the end of the turn of
 * the event loop and reach sonic-boom as one write; any other line goes through at once, after the
 * lines before it. Real pino and a real sonic-boom writing a file synchronously, so the file shows
 * exactly what was handed over when.
 */
const dir = mkdtempSync(join(tmpdir(), 'logger-batch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function loggerToFile() {
  const file = join(dir, `log-${++files}.ndjson`);
  const batch = new TurnBatch(destination({ dest: file, sync: true, mkdir: true }));
  const logger = pino({ level: 'info' }, batch);
  const lines = () => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { msg: string; n?: number; level: number });
  return { logger, lines, batch };
}
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatch: the serving logger stream', () => {
  it('holds the request lines of a turn and writes them, in order, when the turn ends', async () => {
    const { logger, lines } = loggerToFile();
    for (let n = 1; n <= 3; n++) logger.info({ n }, 'request');
    logger.info({ n: 4 }, 'dashboard request');
    assert.deepEqual(lines(), [], 'nothing is written during the turn');
    await endOfTurn();
    assert.deepEqual(lines().map((l) => l.n), [1, 2, 3, 4]);
  });

  it('writes any other line at once, after the request lines before it', () => {
    const { logger, lines } = loggerToFile();
    logger.info({ n: 1 }, 'request');
    logger.warn({ n: 2 }, 'could not record usage counts; will retry');
    assert.deepEqual(lines().map((l) => [l.n, l.msg]), [[1, 'request'], [2, 'could not record usage counts; will retry']]);
    // An info line that is not a request line (a state change) is not held either.
    logger.info({ n: 3 }, 'Redis is back');
    assert.deepEqual(lines().map((l) => l.n), [1, 2, 3]);
    // A request line logged with an error level is not held.
    logger.error({ n: 4 }, 'request');
    assert.deepEqual(lines().map((l) => l.n), [1, 2, 3, 4]);
  });

  it('writes what it holds on logger.flush() and flushSync()', async () => {
    const { logger, lines, batch } = loggerToFile();
    logger.info({ n: 1 }, 'request');
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    assert.deepEqual(lines().map((l) => l.n), [1]);
    logger.info({ n: 2 }, 'request');
    batch.flushSync();
    assert.deepEqual(lines().map((l) => l.n), [1, 2]);
    await endOfTurn();
    assert.deepEqual(lines().map((l) => l.n), [1, 2], 'nothing is written twice');
  });

  it('writes what it holds when the process exits in the middle of a turn: a crash, or process.exit()', () => {
    // The serving logger itself (createLogger, batched, to stdout) in a child process.
    const logger = new URL('../../src/core/logger.js', import.meta.url).href;
    const run = (ending: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', `
        const { createLogger } = await import(${JSON.stringify(logger)});
        const log = await createLogger('info', { batched: true, pretty: false });
        setTimeout(() => {
          log.info({ n: 1 }, 'request');
          log.info({ n: 2 }, 'state change');
          log.info({ n: 3 }, 'request');
          ${ending}
        }, 10);
      `], { encoding: 'utf8' });
    for (const [ending, status] of [['throw new Error("boom")', 1], ['process.exit(0)', 0]] as const) {
      const child = run(ending);
      assert.equal(child.status, status, child.stderr);
      const lines = child.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { n: number });
      assert.deepEqual(lines.map((l) => l.n), [1, 2, 3], `${ending}: every line, in order`);
    }
  });
});
