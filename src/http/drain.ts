import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/**
 * Graceful shutdown of an HTTP server with a time limit (issue 8 item 5, issue 29 item 5).
 *
 * What must hold, in order:
 * 1. New connections are refused from the moment the drain begins: the listener is closed at
 *    once, before drainServer returns, so a client trying to connect gets ECONNREFUSED and can go
 *    elsewhere. (Connections the kernel had queued but the process had not yet accepted at that
 *    instant are reset by the kernel when the listener closes: nothing in the process can answer
 *    them; a load balancer should stop sending before the signal.)
 * 2. Every connection that was accepted is answered: requests in flight, requests whose bytes are
 *    still arriving, and the first request of a connection accepted just before the signal (Node
 *    counts a connection whose first request has not arrived as busy, not idle).
 * 3. Every answer begun during the drain says `Connection: close` and closes its connection behind
 *    it, as do answers in flight whose headers are not written yet.
 * 4. Keep-alive connections that are idle (answered, no request in progress) are closed once they
 *    have been given `idleGraceMs` to send a request already on its way, which is then answered
 *    (with `Connection: close`) instead of meeting a closed connection. So the listener is closed
 *    with net.Server's close (stop accepting, keep every connection), not http.Server's, which
 *    also closes the idle connections at that very instant. The idle ones are closed with
 *    `closeIdleConnections()` after the event loop has read what the kernel holds, so a request
 *    that arrived in time is read (the connection is busy then) rather than discarded with a reset;
 *    a connection idle at the signal gets a clean close (FIN).
 * 5. Whatever is still open at `timeoutMs` (a client trickling its headers, a hung request) is
 *    destroyed, and counted.
 */

/** How long a keep-alive connection idle during the drain is left open for a request already on its way. */
export const IDLE_GRACE_MS = 100;

interface Tracker {
  /** Open connections, whatever became of them (a CONNECT's socket leaves Node's HTTP tracking). */
  readonly sockets: Set<Socket>;
  /**
   * Answers begun and not yet closed, per connection, in the order of their requests. Per
   * connection, not one Set of every answer: a Set that gains and loses an entry per request
   * replaces its hash table every few dozen requests, and once the Set is in V8's old generation
   * (after any idle spell) each table it leaves behind, dead but in the old generation, keeps the
   * answers it held alive through every young-generation collection until the next full one: all
   * of a request's objects were promoted, and a busy process lost a third of its throughput after
   * its first idle spell (docs/design/connection-tracking.md).
   */
  readonly answers: WeakMap<object, ServerResponse[]>;
  /** While draining: closes the idle connections `idleGraceMs` from now. */
  sweepIdle?: () => void;
  drained?: Promise<number>;
}

const trackers = new WeakMap<Server, Tracker>();

/**
 * Tracks `server`'s connections and answers so that `drainServer` can drain it; call it once,
 * before the server listens. Costs a set entry and a listener per connection and per answer.
 */
export function trackConnections(server: Server): void {
  if (trackers.has(server)) return;
  const tracker: Tracker = { sockets: new Set(), answers: new WeakMap() };
  trackers.set(server, tracker);
  server.on('connection', (socket: Socket) => {
    tracker.sockets.add(socket);
    socket.once('close', () => tracker.sockets.delete(socket));
  });
  // First among the request listeners: an answer made during the app's own listener (a cached
  // answer is written during the call) must already carry `Connection: close`.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const answers = tracker.answers.get(socket);
    if (answers === undefined) tracker.answers.set(socket, [res]);
    else answers.push(res);
    const draining = tracker.sweepIdle !== undefined;
    if (draining) closeBehind(res);
    res.once('close', () => {
      const left = tracker.answers.get(socket);
      const at = left?.indexOf(res) ?? -1;
      if (at >= 0) left!.splice(at, 1);
      // An answer begun before the drain may have kept its connection open: close it when idle.
      if (!draining) tracker.sweepIdle?.();
    });
  });
}

/**
 * The answers begun on `socket` and not yet closed, in the order of their requests (an answer to a
 * pipelined request waits for those before it). Looked up when a connection fails to parse
 * (front.ts).
 */
export function answersInFlight(server: Server, socket: object): readonly ServerResponse[] {
  return trackers.get(server)?.answers.get(socket) ?? [];
}

/** The answer closes its connection once written (unless its headers are written already). */
function closeBehind(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

/**
 * Drains `server` (tracked by `trackConnections`): see the module's comment. It stops accepting
 * before it returns (a cluster worker relies on it: src/cli/serve.ts). Resolves once every
 * connection is closed, with the number of connections destroyed at the deadline. Calling it
 * again returns the same drain.
 */
export function drainServer(server: Server, timeoutMs: number, idleGraceMs = IDLE_GRACE_MS): Promise<number> {
  const tracker = trackers.get(server);
  if (tracker === undefined) throw new Error('drainServer: the server is not tracked (trackConnections)');
  if (tracker.drained !== undefined) return tracker.drained;
  if (!server.listening) return (tracker.drained = Promise.resolve(0));

  // Stop accepting, keep every connection; resolves once the last connection is closed.
  const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
  let sweep: NodeJS.Timeout | undefined;
  tracker.sweepIdle = () => {
    clearTimeout(sweep);
    sweep = setTimeout(() => {
      // Timers run before the event loop polls for I/O: the sweep waits for the poll
      // (setImmediate), so that bytes which reached the kernel in time are read first.
      setImmediate(() => server.closeIdleConnections());
    }, Math.min(idleGraceMs, timeoutMs));
  };
  for (const socket of tracker.sockets) for (const res of tracker.answers.get(socket) ?? []) closeBehind(res);
  tracker.sweepIdle();

  tracker.drained = (async () => {
    let deadline: NodeJS.Timeout | undefined;
    const timedOut = new Promise<true>((resolve) => (deadline = setTimeout(() => resolve(true), timeoutMs)));
    const expired = await Promise.race([closed.then(() => false), timedOut]);
    clearTimeout(deadline);
    clearTimeout(sweep);
    if (!expired) return 0;
    const remaining = tracker.sockets.size;
    for (const socket of tracker.sockets) socket.destroy();
    await closed;
    return remaining;
  })();
  return tracker.drained;
}
