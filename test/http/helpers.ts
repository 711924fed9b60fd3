import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { httpCall, type RequestOptions, type TestResponse, type TestServer } from '../support/server.js';

/** Shared helpers of the HTTP suites (not a test file itself). */

/** One header as a string (joined when repeated), or undefined. */
export function header(res: TestResponse, name: string): string | undefined {
  const value = res.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Asserts the D6 error shape: JSON `{error, message}` with `Content-Type: application/json`. */
export function assertError(res: TestResponse, status: number, code: string, context = ''): void {
  assert.equal(res.status, status, `${context} status (body ${res.body})`);
  assert.match(header(res, 'content-type') ?? '', /^application\/json\b/, `${context} content-type`);
  assert.equal(typeof res.json, 'object', `${context} JSON body: ${res.body}`);
  assert.equal(res.json.error, code, `${context} error code`);
  assert.equal(typeof res.json.message, 'string', `${context} message`);
  assert.ok(res.json.message.length > 0, `${context} message is not empty`);
}

/** The spec's read-all loop (4.2 rule 1): page=1, 2, ... until page equals pages. */
export async function readAll(server: TestServer, key: string, perPage: number, options: RequestOptions = {}) {
  const ids: string[] = [];
  const totals = new Set<number>();
  let page = 1;
  for (;;) {
    const res = await server.get(`/v1/listings?page=${page}&per_page=${perPage}`, { ...options, key });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.json.page, page);
    totals.add(res.json.total);
    ids.push(...res.json.items.map((l: { id: string }) => l.id));
    if (res.json.page === res.json.pages) break;
    assert.ok(page < 10_000, 'the read-all loop ends');
    page++;
  }
  assert.equal(totals.size, 1, 'total is the same on every page');
  return { ids, total: [...totals][0]!, pages: page };
}

/**
 * Every listing of a filtered list (`query`: `&name=value...`), page after page until `page`
 * reaches `pages`; the last page's `total` must count what was read and `pages` follow D8.
 */
export async function readFiltered<T>(server: TestServer, key: string, query: string, perPage: number): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const res = await server.get(`/v1/listings?per_page=${perPage}&page=${page}${query}`, { key });
    assert.equal(res.status, 200, `${query}: ${res.body}`);
    items.push(...res.json.items);
    if (res.json.page >= res.json.pages) {
      assert.equal(res.json.total, items.length, `${query}: total counts the filtered set`);
      assert.equal(res.json.pages, Math.max(1, Math.ceil(items.length / perPage)), `${query}: pages (D8)`);
      return items;
    }
  }
}

/** Waits (on I/O, not on time) for the request log line of a request id (D19). */
export async function logLinesOf(server: TestServer, reqId: string, atLeast = 1): Promise<Array<Record<string, unknown>>> {
  for (let i = 0; i < 200; i++) {
    const lines = server.logs.lines.filter((l) => l.reqId === reqId);
    if (lines.length >= atLeast) {
      // Give a second line, if one were coming, the chance to arrive.
      await new Promise((r) => setImmediate(r));
      return server.logs.lines.filter((l) => l.reqId === reqId);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return server.logs.lines.filter((l) => l.reqId === reqId);
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** Sends raw bytes over TCP and reads the one response (for requests a normal client cannot make). */
export function rawRequest(port: number, text: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (error) => {
      // A server that answered and then reset the connection still answered.
      if (chunks.length > 0) finish();
      else reject(error);
    });
    socket.on('end', finish);
    let done = false;
    function finish(): void {
      if (done) return;
      done = true;
      socket.destroy();
      const all = Buffer.concat(chunks).toString('utf8');
      const split = all.indexOf('\r\n\r\n');
      const head = split === -1 ? all : all.slice(0, split);
      let body = split === -1 ? '' : all.slice(split + 4);
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(statusLine?.split(' ')[1] ?? 0), headers, body, json });
    }
    socket.write(text);
    // Half-close only after the server had the chance to answer a complete request.
    socket.setTimeout(5000, () => finish());
  });
}

function dechunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol === -1) return out;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!Number.isFinite(size) || size === 0) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/**
 * The latencies, in ms, of requests sent one after another on one keep-alive connection, `count` of
 * them and for `minMs` at least: how a tenant sees the service. Every answer must be a 200.
 */
export async function latencies(port: number, path: string, options: RequestOptions, count: number, minMs = 0): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const times: number[] = [];
    const began = performance.now();
    while (times.length < count || performance.now() - began < minMs) {
      const started = performance.now();
      const res = await httpCall(port, path, { ...options, agent });
      times.push(performance.now() - started);
      assert.equal(res.status, 200, res.body);
    }
    return times;
  } finally {
    agent.destroy();
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * A tenant's median latency alone and while anonymous clients attack (`startAttackers`), measured
 * in alternating rounds (`perRound` requests and `minRoundMs` at least each), so that whatever else
 * the machine does weighs on both alike.
 */
export async function tenantLatency(
  port: number,
  tenant: { path: string; options: RequestOptions },
  attack: { connections: number; requests: Array<string | Buffer>; intervalMs?: number },
  rounds = 3,
  perRound = 20,
  minRoundMs = 500,
): Promise<{ alone: number; attacked: number; attacks: number }> {
  const measure = () => latencies(port, tenant.path, tenant.options, perRound, minRoundMs);
  const attackers = await startAttackers(port, attack.connections, attack.requests, attack.intervalMs);
  try {
    // Warm: the tenant's index and caches, and the attackers' process, before anything is measured.
    await measure();
    await attackers.attack();
    await attackers.pause();
    const alone: number[] = [];
    const attacked: number[] = [];
    let attacks = 0;
    for (let round = 0; round < rounds; round++) {
      alone.push(...(await measure()));
      await attackers.attack();
      attacked.push(...(await measure()));
      attacks += await attackers.pause();
    }
    return { alone: median(alone), attacked: median(attacked), attacks };
  } finally {
    await attackers.close();
  }
}

/** The attacking clients' process (see `startAttackers`): raw requests in turn, each on a new connection. */
const ATTACKER = `
import { connect } from 'node:net';
let requests = [];
let intervalMs = 0;
let connections = 0;
let running = false;
let loops = [];
let attacks = 0;
const once = (bytes) => new Promise((resolve) => {
  const socket = connect(Number(process.argv[1]), '127.0.0.1');
  const done = () => { socket.destroy(); resolve(); };
  // The first bytes of an answer, or the connection's end (the server may close while a body is
  // still being written): the attacker does not wait for more.
  socket.once('data', done);
  socket.once('close', done);
  socket.on('error', done);
  socket.write(bytes);
});
const loop = async (start) => {
  for (let i = start; running; i++) {
    const began = Date.now();
    await once(requests[i % requests.length]);
    if (attacks++ === 0) process.send('attacking');
    // Real time is the point: the attacker's pace, one request per interval.
    const rest = intervalMs - (Date.now() - began);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
};
process.on('message', async (message) => {
  if (message === 'attack') {
    attacks = 0;
    running = true;
    loops = Array.from({ length: connections }, (_, c) => loop(c));
  } else if (message === 'pause') {
    running = false;
    await Promise.all(loops);
    process.send({ attacks });
  } else if (message === 'exit') {
    process.exit(0);
  } else {
    requests = message.requests.map((text) => Buffer.from(text, 'base64'));
    intervalMs = message.intervalMs;
    connections = message.connections;
    process.send('ready');
  }
});
`;

/**
 * `connections` anonymous clients in a process of their own (so that their work is not this
 * process's, where the server runs), which on `attack()` send `requests` (raw bytes, in turn, each
 * on a new connection) one after another, each as soon as the previous one is answered and at most
 * one every `intervalMs` per client: a request the server stalls on keeps it busy all the same, and
 * one it answers at once does not turn the attackers into a CPU hog that would slow the test's
 * process down on a 2-core machine whatever the server does. `attack()` resolves once the first
 * attack is answered; `pause()` with how many were answered since `attack()`.
 */
export async function startAttackers(port: number, connections: number, requests: Array<string | Buffer>, intervalMs = 50) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', ATTACKER, String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  /** The child's next message (or a failure when it exits first). */
  const reply = <T>(): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the attacking process exited (${code})`));
      child.once('exit', onExit);
      child.once('message', (message) => {
        child.off('exit', onExit);
        resolve(message as T);
      });
    });
  const ready = reply<string>();
  child.send({ connections, intervalMs, requests: requests.map((r) => Buffer.from(r).toString('base64')) });
  await ready;
  return {
    attack: async (): Promise<void> => {
      const attacking = reply<string>();
      child.send('attack');
      await attacking;
    },
    pause: async (): Promise<number> => {
      const paused = reply<{ attacks: number }>();
      child.send('pause');
      return (await paused).attacks;
    },
    close: async (): Promise<void> => {
      if (child.exitCode === null) child.send('exit');
      await exited;
    },
  };
}

/** A bare item of a structured field (RFC 9651) as this suite reads it: a string, token, integer or boolean. */
export type SfBareItem = string | number | boolean | { token: string };

/** One member of a structured-field List: an item with its parameters, in order. */
export interface SfItem {
  value: SfBareItem;
  params: Map<string, SfBareItem>;
}

/**
 * A structured-field List (RFC 9651 section 4.2.1) of items with parameters, parsed to the letter
 * for what the IETF rate-limit fields use (D29): sf-string, sf-token, sf-integer and sf-boolean
 * bare items, parameters, optional whitespace around commas and before parameters' semicolons.
 * Inner lists, decimals, byte sequences, dates and display strings are refused, as is anything
 * malformed: a test must see the field exactly as a standard parser would.
 */
export function parseSfList(text: string): SfItem[] {
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`structured field ${JSON.stringify(text)}: ${what} at ${i}`);
  };
  const skipOws = () => {
    while (text[i] === ' ' || text[i] === '\t') i++;
  };
  const skipSp = () => {
    while (text[i] === ' ') i++;
  };
  const key = (): string => {
    const m = /^[a-z*][a-z0-9_.*-]*/.exec(text.slice(i));
    if (m === null) return fail('a key');
    i += m[0].length;
    return m[0];
  };
  const bareItem = (): SfBareItem => {
    const c = text[i];
    if (c === '"') {
      let out = '';
      for (i++; i < text.length; i++) {
        const ch = text[i]!;
        if (ch === '\\') {
          const next = text[++i];
          if (next !== '"' && next !== '\\') return fail('a bad escape');
          out += next;
        } else if (ch === '"') {
          i++;
          return out;
        } else if (ch < ' ' || ch > '~') {
          return fail('a character outside a string\'s range');
        } else {
          out += ch;
        }
      }
      return fail('an unterminated string');
    }
    if (c === '?') {
      const b = text[i + 1];
      if (b !== '0' && b !== '1') return fail('a boolean');
      i += 2;
      return b === '1';
    }
    const integer = /^-?[0-9]{1,15}(?![0-9.])/.exec(text.slice(i));
    if (integer !== null) {
      i += integer[0].length;
      return Number(integer[0]);
    }
    const token = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(text.slice(i));
    if (token !== null) {
      i += token[0].length;
      return { token: token[0] };
    }
    return fail('a bare item (only strings, tokens, integers and booleans are expected)');
  };
  const params = (): Map<string, SfBareItem> => {
    const found = new Map<string, SfBareItem>();
    while (text[i] === ';') {
      i++;
      skipSp();
      const name = key();
      let value: SfBareItem = true;
      if (text[i] === '=') {
        i++;
        value = bareItem();
      }
      // A repeated key keeps its place and takes the last value (RFC 9651 4.2.3.2).
      found.set(name, value);
    }
    return found;
  };
  const items: SfItem[] = [];
  skipSp();
  if (i === text.length) return items;
  for (;;) {
    if (text[i] === '(') fail('an inner list');
    items.push({ value: bareItem(), params: params() });
    skipOws();
    if (i === text.length) return items;
    if (text[i] !== ',') fail('a comma');
    i++;
    skipOws();
    if (i === text.length) fail('a trailing comma');
  }
}

/**
 * D29's two fields of an answer, read as a standard parser would, and checked for the form D29
 * gives them: one item each, the policy `"key"` (a string), integer `q`, `w`, `r`, `t`. Undefined
 * when the answer carries neither; failing when it carries one without the other.
 */
export function ietfRateLimit(res: TestResponse): { q: number; w: number; r: number; t: number } | undefined {
  const policy = header(res, 'ratelimit-policy');
  const state = header(res, 'ratelimit');
  if (policy === undefined && state === undefined) return undefined;
  assert.ok(policy !== undefined && state !== undefined, `both or neither: RateLimit-Policy ${policy}, RateLimit ${state}`);
  const [p, ...morePolicies] = parseSfList(policy);
  const [s, ...moreStates] = parseSfList(state);
  assert.ok(p && s && morePolicies.length === 0 && moreStates.length === 0, `one policy: ${policy} / ${state}`);
  assert.equal(p.value, 'key', 'the policy is named "key", a string');
  assert.equal(s.value, 'key', 'RateLimit names the policy of RateLimit-Policy');
  const integer = (item: SfItem, name: string): number => {
    const v = item.params.get(name);
    assert.ok(typeof v === 'number' && Number.isInteger(v) && v >= 0, `${name} is a non-negative integer: ${JSON.stringify(v)}`);
    return v;
  };
  return { q: integer(p, 'q'), w: integer(p, 'w'), r: integer(s, 'r'), t: integer(s, 't') };
}
