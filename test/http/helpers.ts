import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { RequestOptions, TestResponse, TestServer } from '../support/server.js';

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
