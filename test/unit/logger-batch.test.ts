import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { destination, pino } from 'pino';
import { jsonString, requestLineWriter, TurnBatch, type RequestLineFields } from '../../src/core/logger.js';
import { prng } from '../support/random.js';

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
/** The logger module, as a child process imports it to run the serving logger itself (createLogger, batched, to stdout). */
const LOGGER_MODULE = JSON.stringify(new URL('../../src/core/logger.js', import.meta.url).href);

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
    const run = (ending: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', `
        const { createLogger } = await import(${LOGGER_MODULE});
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

  it('writes a turn\'s lines on the main thread, not through libuv\'s thread pool (a busy pool does not hold them)', () => {
    // The serving logger, stdout a file. The pool's one thread is busy with a key derivation (a few
    // hundred milliseconds); 8 KB of request lines are logged in one turn. An asynchronous write would
    // queue behind the derivation; the synchronous one is in the file when the turn's hand-over ran.
    const file = join(dir, `pool-${++files}.ndjson`);
    const out = openSync(file, 'w');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', `
      import { fstatSync, writeSync } from 'node:fs';
      import { pbkdf2 } from 'node:crypto';
      const { createLogger } = await import(${LOGGER_MODULE});
      const log = await createLogger('info', { batched: true, pretty: false });
      const started = Date.now();
      pbkdf2('x', 'y', 2_000_000, 32, 'sha256', () => writeSync(2, 'pool free after ' + (Date.now() - started) + ' ms\\n'));
      for (let n = 0; n < 100; n++) log.info({ n, pad: 'x'.repeat(60) }, 'request');
      setImmediate(() => setImmediate(() => writeSync(2, 'bytes after the turn: ' + fstatSync(1).size + '\\n')));
    `], { encoding: 'utf8', stdio: ['ignore', out, 'pipe'], env: { ...process.env, UV_THREADPOOL_SIZE: '1' } });
    closeSync(out);
    assert.equal(child.status, 0, child.stderr);
    const written = Number(/bytes after the turn: (\d+)/.exec(child.stderr)?.[1]);
    assert.ok(written >= 8000, `the turn's lines are in the file when the turn ends (${child.stderr.trim()})`);
    assert.match(child.stderr, /bytes after the turn[^]*pool free after/, 'the pool was still busy then');
  });
});

describe('requestLineWriter: the request line without pino\'s generic serialisation', () => {
  const fields = (over: Partial<RequestLineFields> = {}): RequestLineFields => ({
    reqId: 'req_0123456789abcdef000001',
    method: 'GET',
    route: '/v1/listings/:id',
    path: '/v1/listings/0b3c7f52-8a2e-4f3e-9a0e-3c1f0d0e8b1a',
    status: 200,
    ms: 0.43,
    key_prefix: 'sg_live_AbCd',
    client_address: '203.0.113.7',
    ...over,
  });
  const cases: RequestLineFields[] = [
    fields(),
    fields({ route: null, key_prefix: null, status: 404, ms: 12, client_address: null }),
    fields({ path: '/v1/"quoted"\\back\u0001\u001f\u007f\u00e9\u4e2d\ud83d\ude00', method: 'HEAD', ms: 1234.5 }),
    fields({ reqId: 'a "client" id\n', ms: Number.NaN }),
    fields({ ms: Number.POSITIVE_INFINITY, status: 304 }),
    fields({ status: Number.NaN }),
    fields({ client_address: '2001:db8::1' }),
  ];

  /** The same pino logger as the serving one (createLogger's options) into a TurnBatch, with a fixed clock. */
  function servingLikeLogger() {
    const file = join(dir, `log-${++files}.ndjson`);
    const batch = new TurnBatch(destination({ dest: file, sync: true, mkdir: true }));
    const logger = pino({
      level: 'info',
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
      timestamp: () => ',"time":1795550000000',
    }, batch);
    return { logger, batch, text: () => readFileSync(file, 'utf8') };
  }

  it('writes the very bytes pino writes for the same fields, escapes included', () => {
    const viaPino = servingLikeLogger();
    const viaWriter = servingLikeLogger();
    const write = requestLineWriter(viaWriter.logger, 'request');
    for (const line of cases) {
      viaPino.logger.info(line, 'request');
      write(line);
    }
    viaPino.batch.flushSync();
    viaWriter.batch.flushSync();
    assert.equal(viaWriter.text(), viaPino.text());
    const parsed = viaWriter.text().trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(parsed.length, cases.length);
    assert.deepEqual(parsed[2]!.path, cases[2]!.path);
    assert.equal(parsed[3]!.ms, null, 'a number that is not finite is written as null, as pino does');
    assert.equal(parsed[5]!.status, null);
  });

  it('stays valid JSON where pino\'s line would not: half of a surrogate pair, a value of the wrong type', () => {
    const { logger, batch, text } = servingLikeLogger();
    const write = requestLineWriter(logger, 'request');
    write(fields({ path: '/v1/\ud800x\udfff' }));
    write({ ...fields(), reqId: undefined, key_prefix: 42 } as unknown as RequestLineFields);
    batch.flushSync();
    const [first, second] = text().trimEnd().split('\n');
    assert.match(first!, /"path":"\/v1\/\\ud800x\\udfff"/, 'escaped, as JSON.stringify does');
    assert.equal((JSON.parse(first!) as { path: string }).path, '/v1/\ud800x\udfff');
    const parsed = JSON.parse(second!) as Record<string, unknown>;
    assert.equal(parsed.reqId, null);
    assert.equal(parsed.key_prefix, null);
    assert.equal(parsed.msg, 'request');
  });

  it('holds its lines for the end of the turn, like the request lines pino writes', async () => {
    const { logger, batch, text } = servingLikeLogger();
    const write = requestLineWriter(logger, 'request');
    write(fields());
    logger.warn({ n: 1 }, 'state change');
    const first = text().trimEnd().split('\n').map((l) => JSON.parse(l) as { msg: string });
    assert.deepEqual(first.map((l) => l.msg), ['request', 'state change'], 'a line logged after it goes out after it');
    write(fields({ status: 201 }));
    assert.equal(text().trimEnd().split('\n').length, 2, 'held during the turn');
    await endOfTurn();
    assert.equal(text().trimEnd().split('\n').length, 3);
    batch.flushSync();
  });

  it('writes nothing when the level is above info, and is logger.info for any other stream', () => {
    const { logger, batch, text } = servingLikeLogger();
    const write = requestLineWriter(logger, 'request');
    logger.level = 'warn';
    write(fields());
    batch.flushSync();
    assert.equal(text(), '');

    const file = join(dir, `log-${++files}.ndjson`);
    const plain = pino({ level: 'info', timestamp: () => ',"time":1' }, destination({ dest: file, sync: true }));
    requestLineWriter(plain, 'request')(fields());
    const line = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    assert.equal(line.msg, 'request');
    assert.equal(line.reqId, fields().reqId);
  });

  it('jsonString is JSON.stringify for every string', () => {
    const fixed = ['', 'a', '"', '\\', '\u0000', '\u001f', ' ', '\u007f', '\u2028', '\ud800', '\udfff', '\ud83d\ude00', 'x\ud83d', '\ude00x', 'plain/path?q=1'];
    for (const s of fixed) assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
    const random = prng(9);
    for (let n = 0; n < 2000; n++) {
      let s = '';
      const length = Math.floor(random() * 12);
      for (let i = 0; i < length; i++) {
        // Mostly ASCII, with the escapes and the surrogate range well represented.
        const pick = random();
        s += String.fromCharCode(pick < 0.5 ? 0x20 + Math.floor(random() * 0x60) : pick < 0.7 ? Math.floor(random() * 0x20) : pick < 0.85 ? 0xd800 + Math.floor(random() * 0x800) : Math.floor(random() * 0x10000));
      }
      assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
    }
  });
});
