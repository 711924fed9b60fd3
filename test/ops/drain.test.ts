import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { DashboardClient } from '../dashboard/helpers.js';
import { deleteKeys, SKIP_NO_REDIS, TEST_REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';
import { drainServer } from '../../src/http/drain.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { startTestServer } from '../support/server.js';
import { until } from '../support/until.js';

/**
 * `listings-api serve` shutting down under its clients' feet (issue 29 item 5), one process and
 * `--workers 2`: the listener closes at once (new connections are refused, never reset after they
 * sent a request), every connection that was accepted is answered, with `Connection: close`,
 * whether its request was in flight at the signal or arrives after it, an idle keep-alive
 * connection is closed cleanly, nothing waits for SHUTDOWN_TIMEOUT_MS but a client that never
 * finishes its request, and that one is cut at the deadline.
 *
 * The order of events is made certain, never left to timing: a request is "in flight at the
 * signal" because its bytes were sent before it and its end after it; "after the signal" means
 * after the serving processes logged that they were shutting down.
 */

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw client connection that records everything that happens to it. */
class Connection {
  private buffer = Buffer.alloc(0);
  /** Every byte received, for "nothing more came". */
  received = 0;
  /** The server closed its side (FIN). */
  ended = false;
  /** A socket error (ECONNRESET is a reset). */
  error: (Error & { code?: string }) | undefined;
  readonly closed: Promise<void>;
  private wake: () => void = () => {};

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake();
    });
    socket.on('error', (error) => {
      this.error = error;
      this.wake();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => this.wake());
  }

  /** Connects; rejects with the connection error (ECONNREFUSED when nothing listens). */
  static open(port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new Connection(socket));
      });
    });
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** The next whole answer (Content-Length framed); fails if the connection ends first. */
  async answer(what: string): Promise<Answer> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(lines[0]!.split(' ')[1]), headers, body };
        }
      }
      if (this.error !== undefined || this.ended || this.socket.destroyed) {
        throw new Error(`${what}: no answer, the connection ${this.error ? `failed (${this.error.code ?? this.error.message})` : 'was closed'}`);
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Waits for the server to close the connection; asserts it did so cleanly (FIN, no reset). */
  async closedCleanly(what: string): Promise<void> {
    await this.closed;
    assert.equal(this.error, undefined, `${what}: closed with ${this.error?.code ?? this.error?.message}, not cleanly`);
    assert.ok(this.ended, `${what}: the server closed its side (FIN)`);
  }
}

const request = (path: string, host = 'api.localhost') => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;

/** Lines of the log, parsed. */
function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Resolves once `processes` serving processes logged that they began to drain. */
async function drainBegan(server: ServerProcess, processes: number): Promise<void> {
  await until(() => logLines(server.stdout()).filter((l) => l.msg === 'shutting down: finishing in-flight requests').length >= processes, { what: 'the drain to begin' });
}

async function refused(port: number): Promise<boolean> {
  try {
    const connection = await Connection.open(port);
    connection.socket.destroy();
    return false;
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ECONNREFUSED', 'a new connection is refused, nothing else');
    return true;
  }
}

/** A sign-in form post whose headers and first half of the body are sent now, the rest by `finish`. */
async function signInInTwoParts(port: number, connection: Connection): Promise<{ finish: () => void }> {
  const client = new DashboardClient(port, `dashboard.localhost:${port}`);
  assert.equal((await client.get('/sign-in')).status, 200);
  const form = new URLSearchParams({ _csrf: client.csrf!, email: 'nobody@example.com', password: 'not the password' }).toString();
  const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const half = Math.floor(form.length / 2);
  connection.write(
    `POST /sign-in HTTP/1.1\r\nHost: dashboard.localhost:${port}\r\nCookie: ${cookie}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(form)}\r\n\r\n${form.slice(0, half)}`,
  );
  return { finish: () => connection.write(form.slice(half)) };
}

const modes = [
  { name: 'one process', args: [] as string[], processes: 1, skip: false as false | string },
  { name: '--workers 2', args: ['--workers', '2'], processes: 2, skip: SKIP_NO_REDIS },
];

for (const mode of modes) {
  describe(`serve (${mode.name}): SIGTERM drains without losing a request (issue 29 item 5)`, { skip: mode.skip }, () => {
    let database: TestDatabase;
    const prefix = uniquePrefix('drain');
    const start = async (env: Record<string, string>) => {
      const server = await startServerProcess({ DATABASE_URL: database.url, LOG_LEVEL: 'info', ...(mode.processes > 1 ? { REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix } : {}), ...env }, mode.args);
      // Printed once every process serves (one worker may answer /healthz while the other starts).
      await until(() => /Listings API listening on/.test(server.stderr()), { what: 'the listening line' });
      return server;
    };

    before(async () => {
      database = await createTestDatabase('sqlite');
    });
    after(async () => {
      if (mode.processes > 1) {
        const redis = new Redis(TEST_REDIS_URL!);
        await deleteKeys(redis, prefix);
        await redis.quit();
      }
      await database.drop();
    });

    it('requests in flight or arriving on accepted connections are answered with Connection: close, new connections are refused, idle ones closed cleanly, none reset', async () => {
      // A deadline far off: a connection left to it would be cut and logged, failing the test.
      const server = await start({ SHUTDOWN_TIMEOUT_MS: '120000' });
      try {
        const port = server.port;
        // Idle: a keep-alive connection that was answered and sends nothing more.
        const idle = await Connection.open(port);
        idle.write(request('/healthz'));
        const first = await idle.answer('idle connection, before the signal');
        assert.equal(first.status, 200);
        assert.notEqual(first.headers.connection, 'close', 'answers before the signal keep the connection');
        const receivedBefore = idle.received;

        // Keep-alive, its next request half sent at the signal and finished after it.
        const keepAlive = await Connection.open(port);
        keepAlive.write(request('/healthz'));
        assert.equal((await keepAlive.answer('keep-alive connection, before the signal')).status, 200);
        keepAlive.write('GET /v1/listings HTTP/1.1\r\nHost: api.localhost\r\n');

        // In flight: a sign-in the dashboard is reading (headers and half of its form) at the signal.
        const signIn = await Connection.open(port);
        const post = await signInInTwoParts(port, signIn);

        // Accepted, nothing sent yet: it is accepted (in the primary's queue order too) once a
        // connection opened after it has been answered.
        const fresh = await Connection.open(port);
        const later = await Connection.open(port);
        later.write(request('/healthz'));
        assert.equal((await later.answer('a connection opened after the fresh one')).status, 200);
        later.socket.destroy();

        // Racing: keep-alive connections, answered once, whose next request is sent just before
        // the signal. The server may read it before or after the signal: answered either way.
        const racing = await Promise.all(Array.from({ length: 10 }, () => Connection.open(port)));
        for (const connection of racing) connection.write(request('/healthz'));
        for (const connection of racing) assert.equal((await connection.answer('racing connection, before the signal')).status, 200);
        for (const connection of racing) connection.write(request('/v1/listings'));

        assert.equal(server.child.kill('SIGTERM'), true);
        await drainBegan(server, mode.processes);

        // The listener is closed while the drain goes on: a new connection is refused.
        assert.ok(await refused(port), 'a connection attempted after the listener closed is refused');

        keepAlive.write('\r\n');
        post.finish();
        fresh.write(request('/v1/listings'));
        const answers = {
          keepAlive: await keepAlive.answer('keep-alive connection, request finished after the signal'),
          signIn: await signIn.answer('sign-in in flight at the signal'),
          fresh: await fresh.answer('accepted connection, first request sent after the signal'),
        };
        assert.equal(answers.keepAlive.status, 401, answers.keepAlive.body);
        assert.equal(answers.signIn.status, 401, 'the sign-in was handled: unknown member');
        assert.equal(answers.fresh.status, 401, answers.fresh.body);
        for (const [name, answer] of Object.entries(answers)) assert.equal(answer.headers.connection, 'close', `${name}: answered with Connection: close`);

        for (const [i, connection] of racing.entries()) {
          assert.equal((await connection.answer(`racing connection ${i}, request sent with the signal`)).status, 401);
          await connection.closedCleanly(`racing connection ${i}`);
        }
        await keepAlive.closedCleanly('keep-alive connection');
        await signIn.closedCleanly('sign-in connection');
        await fresh.closedCleanly('fresh connection');
        await idle.closedCleanly('connection idle at the signal');
        assert.equal(idle.received, receivedBefore, 'the idle connection was sent nothing more');

        assert.equal(await server.exited, 0);
        assert.doesNotMatch(server.stdout(), /closed connections still open at the drain deadline/);
      } finally {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
      }
    });

    it('under load, no request waits for the drain deadline: none is left with a process that will not answer it', async () => {
      // With workers, Node's primary used to hand a connection to a worker that had just closed
      // its listener; refused, it went back to a primary that had stopped handing out any, and
      // waited, unanswered, until the process exited at the drain deadline.
      const timeoutMs = 5000;
      const server = await start({ SHUTDOWN_TIMEOUT_MS: String(timeoutMs) });
      try {
        const port = server.port;
        // Requests that never complete keep the command alive until the deadline.
        const hung = await Promise.all(Array.from({ length: 2 * mode.processes }, () => Connection.open(port)));
        for (const connection of hung) connection.write('GET /healthz HTTP/1.1\r\nHost: api.localhost\r\n');
        const exchanges: Array<{ started: number; ended: number; outcome: string }> = [];
        let exited = false;
        void server.exited.then(() => (exited = true));
        const client = async () => {
          while (!exited) {
            const started = Date.now();
            let outcome: string;
            try {
              const connection = await Connection.open(port);
              connection.write(request('/v1/listings'));
              try {
                outcome = String((await connection.answer('load')).status);
              } catch (error) {
                outcome = (error as Error).message;
              }
              connection.socket.destroy();
            } catch (error) {
              outcome = (error as { code?: string }).code ?? String(error);
            }
            exchanges.push({ started, ended: Date.now(), outcome });
            // Real time is the point: a refused client's pause before it tries again (a pace), not a wait for anything.
            if (outcome === 'ECONNREFUSED') await new Promise((resolve) => setTimeout(resolve, 10));
          }
        };
        const load = Promise.all(Array.from({ length: 16 }, client));
        await until(() => exchanges.filter((e) => e.outcome === '401').length >= 100, { what: 'the load to be under way' });
        server.child.kill('SIGTERM');
        await Promise.all(hung.map((connection) => connection.closed));
        const cutAt = Date.now();
        assert.equal(await server.exited, 0);
        await load;
        const waited = exchanges.filter((e) => e.outcome !== 'ECONNREFUSED' && e.ended >= cutAt);
        assert.deepEqual(waited, [], 'requests that got their outcome only when the deadline cut the hung connections');
        assert.ok(exchanges.some((e) => e.outcome === 'ECONNREFUSED'), 'new connections were refused during the drain');
      } finally {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
      }
    });

    it('a request that never completes is cut at SHUTDOWN_TIMEOUT_MS, not before; the others are answered', async () => {
      const timeoutMs = 1500;
      const server = await start({ SHUTDOWN_TIMEOUT_MS: String(timeoutMs) });
      try {
        const port = server.port;
        const hung = await Connection.open(port);
        await signInInTwoParts(port, hung); // never finished
        const inFlight = await Connection.open(port);
        const post = await signInInTwoParts(port, inFlight);

        const signalled = Date.now();
        server.child.kill('SIGTERM');
        await drainBegan(server, mode.processes);
        post.finish();
        const answer = await inFlight.answer('sign-in finished after the signal');
        assert.equal(answer.status, 401);
        assert.equal(answer.headers.connection, 'close');
        await inFlight.closedCleanly('the answered sign-in');

        await hung.closed;
        // Timers may fire a millisecond early; the drain begins after the signal was sent.
        assert.ok(Date.now() - signalled >= timeoutMs - 5, `the hung connection was cut after ${Date.now() - signalled} ms, before the deadline`);
        await assert.rejects(hung.answer('the hung sign-in'), /no answer/);
        assert.equal(await server.exited, 0);
        const cut = logLines(server.stdout()).filter((l) => /closed connections still open at the drain deadline/.test(String(l.msg)));
        assert.deepEqual(cut.map((l) => l.connections), [1], 'one connection was cut, by the process that held it');
      } finally {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
      }
    });
  });
}

describe('drainServer: a keep-alive connection idle when the drain begins', () => {
  it('is given the grace to send a request already on its way: answered with Connection: close, then closed cleanly', async () => {
    const server = await startTestServer();
    try {
      const connection = await Connection.open(server.port);
      connection.write(request('/healthz'));
      assert.notEqual((await connection.answer('before the drain')).headers.connection, 'close');
      // A grace no machine outlasts: the request below is sent during it, however slow the box.
      const drained = drainServer(server.service.app.server, 120_000, 60_000);
      assert.ok(await refused(server.port), 'the listener closed when the drain began');
      connection.write(request('/v1/listings'));
      const answer = await connection.answer('request sent on the idle connection during the grace');
      assert.equal(answer.status, 401);
      assert.equal(answer.headers.connection, 'close');
      await connection.closedCleanly('the connection after its answer');
      assert.equal(await drained, 0, 'nothing was cut');
    } finally {
      await server.close();
    }
  });
});
