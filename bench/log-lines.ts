/**
 * The cost of one request log line (issue 31: pino's public API, or a template that must earn its
 * place; docs/design/request-log-line.md). Informational, not part of `npm test`.
 *
 *   npm run build && node dist/bench/log-lines.js [--rounds 9] [--turns 2000] [--per-turn 32]
 *
 * The serving logger as the service makes it (`servingLogger`: pino, its options, a TurnBatch in
 * front of sonic-boom writing /dev/null in writes of 4 KB, synchronously), fed in turns of the event
 * loop of `--per-turn` lines, as under load. Each round takes every variant in turn; CPU time (user
 * and system, `process.cpuUsage`) per line, median and range of the rounds:
 *
 * - fields:   building the line's fields from request-shaped values (path and host redacted as
 *             request-log.ts does), nothing written: what every variant pays first.
 * - template: fields, then `requestLineWriter` (the template, held for the end of the turn).
 * - pino held: fields, then pino's `info` with the serving logger's options into a TurnBatch that
 *             holds every line for the end of the turn: what pino's public API alone would cost,
 *             the lines batched as the template's are.
 * - pino:     fields, then the serving logger's `info(fields, 'request')`: pino's serialisation,
 *             the line handed to sonic-boom at once (one flush per turn), as any line pino writes.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { hostname } from 'node:os';
import { destination, pino } from 'pino';
import { redactedExcerpt } from '../src/auth/key-format.js';
import { requestLineWriter, servingLogger, TurnBatch, type RequestLineFields } from '../src/core/logger.js';
import { loggablePath } from '../src/http/request-log.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return Number(i < 0 ? fallback : args[i + 1]!);
};
const rounds = option('rounds', '9');
const turns = option('turns', '2000');
const perTurn = option('per-turn', '32');

const logger = servingLogger('info', destination({ dest: '/dev/null', minLength: 4096, sync: true }));
const template = requestLineWriter(logger, 'request');
// pino alone, its lines held: createLogger's options (redaction, base fields), the stream holding every line.
const batch = new TurnBatch(destination({ dest: '/dev/null', minLength: 4096, sync: true }));
const pinoHeld = pino(
  {
    level: 'info',
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'password'], censor: '[redacted]' },
    base: { pid: process.pid, hostname: hostname() },
  },
  { write: (line: string) => batch.writeRequestLine(line) },
);

const ids = Array.from({ length: 256 }, (_, i) => `0b3c7f52-8a2e-4f3e-9a0e-3c1f0d0e${(0x8b00 + i).toString(16)}`);
const key = { id: '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b', accountId: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', prefix: 'sg_live_AbCd' };
let n = 0;
/** The fields of a cached detail's line, as request-log.ts's requestLine makes them. */
function fields(): RequestLineFields {
  n++;
  return {
    reqId: `req_${ids[n & 255]}`,
    method: 'GET',
    route: '/v1/listings/:id',
    path: loggablePath(`/v1/listings/${ids[(n * 7) & 255]}`),
    status: 200,
    ms: Math.round((0.2 + (n % 100) / 97) * 100) / 100,
    key_prefix: key.prefix,
    client_address: '203.0.113.7',
    host: redactedExcerpt('api.localhost', 260),
    country: 'sg',
    origin: null,
    key_id: key.id,
    account_id: key.accountId,
    error: null,
    reason: null,
  };
}

let sink = 0;
const variants: Record<string, () => void> = {
  fields: () => {
    sink += fields().ms;
  },
  template: () => template(fields()),
  'pino held': () => pinoHeld.info(fields(), 'request'),
  pino: () => logger.info(fields(), 'request'),
};

async function measure(write: () => void): Promise<number> {
  const start = process.cpuUsage();
  for (let t = 0; t < turns; t++) {
    for (let i = 0; i < perTurn; i++) write();
    await nextTurn();
  }
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / (turns * perTurn);
}

const results = new Map<string, number[]>(Object.keys(variants).map((name) => [name, []]));
// A warm-up round (the JIT), not counted.
for (const write of Object.values(variants)) await measure(write);
for (let r = 0; r < rounds; r++) {
  for (const [name, write] of Object.entries(variants)) results.get(name)!.push(await measure(write));
}
logger.flush();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fieldsMedian = median(results.get('fields')!);
console.log(`${rounds} rounds of ${turns} turns x ${perTurn} lines; CPU ns per line: median (range)`);
if (sink < 0) console.log(sink);
for (const [name, xs] of results) {
  const sorted = [...xs].sort((a, b) => a - b);
  const m = median(xs);
  const extra = name === 'fields' ? '' : `, the write itself ${(m - fieldsMedian).toFixed(0)} ns`;
  console.log(`${name.padEnd(10)} ${m.toFixed(0)} (${sorted[0]!.toFixed(0)}-${sorted.at(-1)!.toFixed(0)})${extra}`);
}
