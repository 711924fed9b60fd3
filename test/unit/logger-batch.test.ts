import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { destination, pino } from 'pino';
import type { LogLevel } from '../../src/core/log-levels.js';
import { jsonString, requestLineWriter, servingLogger, type RequestLineFields } from '../../src/core/logger.js';
import { prng } from '../support/random.js';

/**
 * The serving logger (src/core/logger.ts): request lines wait for the end of the turn of the
 * event loop and reach sonic-boom as one write; any line pino writes goes through at once, after
 * the lines before it. Real pino and a real sonic-boom writing a file synchronously, so the file
 * shows exactly what was handed over when.
 */
const dir = mkdtempSync(join(tmpdir(), 'logger-batch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** A serving logger into a file; `time` fixes pino's clock (its `timestamp` option). */
function loggerToFile(level: LogLevel = 'info', time?: () => string) {
  const file = join(dir, `log-${++files}.ndjson`);
  const logger = servingLogger(level, destination({ dest: file, sync: true, mkdir: true }), time);
  const text = () => readFileSync(file, 'utf8');
  const lines = () => text().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown> & { msg: string; level: number });
  return { logger, text, lines, write: requestLineWriter(logger, 'request') };
}
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));
/** The logger module, as a child process imports it to run the serving logger itself (createLogger, batched, to stdout). */
const LOGGER_MODULE = JSON.stringify(new URL('../../src/core/logger.js', import.meta.url).href);

/** A request line's fields (every field of RequestLineFields), with some replaced. */
const fields = (over: Partial<RequestLineFields> = {}): RequestLineFields => ({
  reqId: 'req_0123456789abcdef000001',
  method: 'GET',
  route: '/v1/listings/:id',
  path: '/v1/listings/0b3c7f52-8a2e-4f3e-9a0e-3c1f0d0e8b1a',
  status: 200,
  ms: 0.43,
  key_prefix: 'sg_live_AbCd',
  client_address: '203.0.113.7',
  host: 'api.example.com',
  country: 'sg',
  origin: null,
  key_id: '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b',
  account_id: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  error: null,
  reason: null,
  ...over,
});

describe('the serving logger\'s stream (TurnBatch)', () => {
  it('holds the request lines of a turn and writes them, in order, when the turn ends', async () => {
    const { write, lines } = loggerToFile();
    for (let n = 1; n <= 3; n++) write(fields({ status: 200 + n }));
    assert.deepEqual(lines(), [], 'nothing is written during the turn');
    await endOfTurn();
    assert.deepEqual(lines().map((l) => l.status), [201, 202, 203]);
  });

  it('writes any line pino writes at once, after the request lines before it', () => {
    const { logger, write, lines } = loggerToFile();
    write(fields({ status: 201 }));
    logger.warn({ n: 2 }, 'could not record usage counts; will retry');
    assert.deepEqual(lines().map((l) => [l.status ?? l.n, l.msg]), [[201, 'request'], [2, 'could not record usage counts; will retry']]);
    // An info line (a state change) is not held either, nor a request line pino writes (an error's, a dashboard's).
    logger.info({ n: 3 }, 'Redis is back');
    logger.error({ n: 4 }, 'request');
    logger.info({ n: 5 }, 'dashboard request');
    assert.deepEqual(lines().map((l) => l.n), [undefined, 2, 3, 4, 5]);
  });

  it('writes what it holds on logger.flush(), with a callback or without', async () => {
    const { logger, write, lines } = loggerToFile();
    write(fields({ status: 201 }));
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    assert.deepEqual(lines().map((l) => l.status), [201]);
    write(fields({ status: 202 }));
    logger.flush();
    assert.deepEqual(lines().map((l) => l.status), [201, 202]);
    await endOfTurn();
    assert.deepEqual(lines().map((l) => l.status), [201, 202], 'nothing is written twice');
  });

  it('writes what it holds when the process exits in the middle of a turn: a crash, or process.exit()', () => {
    // The serving logger itself (createLogger, batched, to stdout) in a child process.
    const run = (ending: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', `
        const { createLogger, requestLineWriter } = await import(${LOGGER_MODULE});
        const log = await createLogger('info', { batched: true, pretty: false });
        const write = requestLineWriter(log, 'request');
        setTimeout(() => {
          write({ reqId: '1' });
          log.info({ reqId: '2' }, 'state change');
          write({ reqId: '3' });
          ${ending}
        }, 10);
      `], { encoding: 'utf8' });
    for (const [ending, status] of [['throw new Error("boom")', 1], ['process.exit(0)', 0]] as const) {
      const child = run(ending);
      assert.equal(child.status, status, child.stderr);
      const lines = child.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { reqId: string });
      assert.deepEqual(lines.map((l) => l.reqId), ['1', '2', '3'], `${ending}: every line, in order`);
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
      const { createLogger, requestLineWriter } = await import(${LOGGER_MODULE});
      const log = await createLogger('info', { batched: true, pretty: false });
      const write = requestLineWriter(log, 'request');
      const started = Date.now();
      pbkdf2('x', 'y', 2_000_000, 32, 'sha256', () => writeSync(2, 'pool free after ' + (Date.now() - started) + ' ms\\n'));
      for (let n = 0; n < 100; n++) write({ reqId: String(n), path: 'x'.repeat(60) });
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
  const cases: RequestLineFields[] = [
    fields(),
    fields({ route: null, key_prefix: null, status: 404, ms: 12, client_address: null, host: null, country: null, key_id: null, account_id: null, error: 'not_found', reason: 'unknown_route' }),
    fields({ path: '/v1/"quoted"\\back\u0001\u001f\u007f\u00e9\u4e2d\ud83d\ude00', method: 'HEAD', ms: 1234.5 }),
    fields({ reqId: 'a "client" id\n', ms: Number.NaN, origin: 'https://shop.example.com', host: 'API.Example.com:8443' }),
    fields({ ms: Number.POSITIVE_INFINITY, status: 304 }),
    fields({ status: Number.NaN, error: 'unauthorized', reason: 'revoked_key' }),
    fields({ client_address: '2001:db8::1', origin: 'https://\u00e9xample.com/"x"' }),
  ];
  /** pino's clock, fixed: the template and pino write the same time. */
  const fixedTime = () => ',"time":1795550000000';

  it('writes the very bytes pino writes for the same fields with the same logger, escapes included, at info and at debug', () => {
    for (const level of ['info', 'debug'] as const) {
      // Two serving loggers as the service makes them (servingLogger: its options, base fields, stream).
      const viaPino = loggerToFile('debug', fixedTime);
      const viaWriter = loggerToFile('debug', fixedTime);
      for (const line of cases) {
        viaPino.logger[level](line, 'request');
        viaWriter.write(line, level);
      }
      viaWriter.logger.flush();
      assert.equal(viaWriter.text(), viaPino.text(), level);
      const parsed = viaWriter.lines();
      assert.equal(parsed.length, cases.length);
      assert.equal(parsed[0]!.level, level === 'info' ? 30 : 20);
      assert.deepEqual(Object.keys(parsed[0]!), ['level', 'time', 'pid', 'hostname', ...Object.keys(fields()), 'msg'], 'pino\'s fields, then the line\'s in order');
      assert.equal(parsed[0]!.pid, process.pid);
      assert.deepEqual(parsed[2]!.path, cases[2]!.path);
      assert.equal(parsed[3]!.ms, null, 'a number that is not finite is written as null, as pino does');
      assert.equal(parsed[5]!.status, null);
    }
  });

  it('is the line of the serving logger\'s own clock and base fields: a line of now, of this process', () => {
    const { write, lines, logger } = loggerToFile();
    const before = Date.now();
    write(fields());
    logger.info(fields(), 'request');
    logger.flush();
    const [template, pinos] = lines();
    assert.ok((template!.time as number) >= before && (template!.time as number) <= Date.now());
    assert.deepEqual({ ...template, time: 0 }, { ...pinos, time: 0 });
  });

  it('stays valid JSON where pino\'s line would not: half of a surrogate pair, a value of the wrong type', () => {
    const { write, text, logger } = loggerToFile();
    write(fields({ path: '/v1/\ud800x\udfff' }));
    write({ ...fields(), reqId: undefined, key_prefix: 42, key_id: {}, error: undefined } as unknown as RequestLineFields);
    logger.flush();
    const [first, second] = text().trimEnd().split('\n');
    assert.match(first!, /"path":"\/v1\/\\ud800x\\udfff"/, 'escaped, as JSON.stringify does');
    assert.equal((JSON.parse(first!) as { path: string }).path, '/v1/\ud800x\udfff');
    const parsed = JSON.parse(second!) as Record<string, unknown>;
    assert.equal(parsed.reqId, null);
    assert.equal(parsed.key_prefix, null);
    assert.equal(parsed.key_id, null);
    assert.equal(parsed.error, null);
    assert.equal(parsed.msg, 'request');
  });

  it('holds its lines for the end of the turn, and a line logged after one goes out after it', async () => {
    const { write, logger, lines } = loggerToFile();
    write(fields());
    logger.warn({ n: 1 }, 'state change');
    assert.deepEqual(lines().map((l) => l.msg), ['request', 'state change']);
    write(fields({ status: 201 }));
    assert.equal(lines().length, 2, 'held during the turn');
    await endOfTurn();
    assert.equal(lines().length, 3);
  });

  it('writes nothing below the logger\'s level, which it reads at each line', () => {
    const { write, logger, text } = loggerToFile();
    write(fields(), 'debug');
    logger.level = 'warn';
    write(fields());
    logger.level = 'debug';
    write(fields({ status: 299 }), 'debug');
    logger.flush();
    assert.deepEqual(text().trimEnd().split('\n').map((l) => (JSON.parse(l) as { status: number }).status), [299]);
  });

  it('is pino\'s own method for a logger servingLogger did not make (pino-pretty, a plain pino)', () => {
    for (const level of ['info', 'debug'] as const) {
      const file = join(dir, `log-${++files}.ndjson`);
      const plain = pino({ level: 'debug', timestamp: fixedTime }, destination({ dest: file, sync: true }));
      requestLineWriter(plain, 'request')(fields(), level);
      const file2 = join(dir, `log-${++files}.ndjson`);
      pino({ level: 'debug', timestamp: fixedTime }, destination({ dest: file2, sync: true }))[level](fields(), 'request');
      assert.equal(readFileSync(file, 'utf8'), readFileSync(file2, 'utf8'));
      assert.equal((JSON.parse(readFileSync(file, 'utf8')) as { reqId: string }).reqId, fields().reqId);
    }
  });

  it('src/ reads none of pino\'s symbols (its private state): pino\'s options and public methods only (issue 31)', () => {
    const src = new URL('../../../src/', import.meta.url);
    const sources: string[] = [];
    const walk = (path: string) => {
      for (const name of readdirSync(path)) {
        const full = join(path, name);
        if (statSync(full).isDirectory()) walk(full);
        else if (name.endsWith('.ts')) sources.push(full);
      }
    };
    walk(src.pathname);
    assert.ok(sources.some((f) => f.endsWith('core/logger.ts')), 'the sources are found');
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /\bsymbols\b[^\n]*from 'pino'|pino\.symbols|Symbol\.for\('pino/, file);
    }
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
        s += String.fromCharCode(
          pick < 0.5 ? 0x20 + Math.floor(random() * 0x60)
            : pick < 0.7 ? Math.floor(random() * 0x20)
            : pick < 0.85 ? 0xd800 + Math.floor(random() * 0x800)
            : Math.floor(random() * 0x10000),
        );
      }
      assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
    }
  });
});
