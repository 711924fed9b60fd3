import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Coalesced socket writes: an answer made while its request is being dispatched (a cached answer:
 * the whole request path is synchronous then) goes to the kernel at the end of that turn's I/O (a
 * `setImmediate`), together with the other answers of the turn, instead of one write the moment
 * each is ready.
 *
 * Why: a turn answers every request that arrived together (up to one per connection), each taking
 * tens of microseconds. Written one by one, each answer wakes the client that waits for it (the
 * load balancer or proxy on the same host, or a benchmark's load generator), which reads it, sends
 * its next request and goes back to sleep before the next answer: one wake-up, an inter-processor
 * interrupt that is costly in a virtual machine, per answer. Written together, the first answer
 * wakes the client and the rest arrive while it runs. Measured with wrk on a 2-core VM
 * (docs/design/coalesced-writes.md), it about doubled the rate of cached details and cut latency
 * at 50 connections. An answer waits at most for the rest of its turn's I/O,
 * which under load is less than it queued behind the wake-ups, and nothing when idle.
 *
 * An answer that comes later (after a database read) is written at once, as before: it ends a
 * step of its own, and holding it for the next check phase, after the requests of another turn,
 * made concurrent cold reads share less work (caches off, a page of 20 fell from 12,000 to 6,000
 * answers a second).
 *
 * How: the socket's `_write` and `_writev` (the methods a Writable implements) are wrapped. A
 * Writable's write may complete later, and until it does the stream buffers further writes itself,
 * so the bytes of one connection keep their order and backpressure works as before; only the moment
 * of the system call moves. What runs when a write completes (`'drain'`, the response's
 * `'finish'`, hence the request log line) runs in the flush, and an answer's logged time includes
 * its wait for it. The same idea is "corking" in uWebSockets.
 */

type Callback = (error?: Error | null) => void;
type Chunks = Array<{ chunk: unknown; encoding: BufferEncoding }>;

const QUEUED = Symbol('queuedWrite');
type Coalesced = Socket & { [QUEUED]?: QueuedWrite };

/** A write waiting for the end of the turn: the socket's own `_write` or `_writev`, bound to its arguments. */
interface QueuedWrite {
  socket: Coalesced;
  write: (callback: Callback) => void;
  callback: Callback;
  /** The stream was told the write's outcome: a later error is not the write's. */
  called: boolean;
}

let queued: QueuedWrite[] = [];
/** True while a request is being dispatched (see `dispatchCoalesced`). */
let collecting = false;

/** Makes a queued write, once: a socket has at most one (its stream waits for it before the next). */
function run(entry: QueuedWrite): void {
  if (entry.socket[QUEUED] !== entry) return; // made already, by a destroy before the flush
  // Not kept past its write: an idle keep-alive connection would hold its last answer's bytes.
  entry.socket[QUEUED] = undefined;
  try {
    entry.write((error) => {
      entry.called = true;
      entry.callback(error);
    });
  } catch (error) {
    // The write itself failed: its stream is told (and fails), never the rest of the batch. An
    // error thrown after the stream was told came from a listener of what the write completed (a
    // response's 'finish'): it is thrown as it would have been without the batch, uncaught.
    if (!entry.called) entry.callback(error as Error);
    else process.nextTick(() => {
      throw error;
    });
  }
}

function flush(): void {
  const batch = queued;
  queued = [];
  for (const entry of batch) run(entry);
}

function enqueue(socket: Coalesced, write: (callback: Callback) => void, callback: Callback): void {
  if (queued.length === 0) setImmediate(flush);
  const entry: QueuedWrite = { socket, write, callback, called: false };
  socket[QUEUED] = entry;
  queued.push(entry);
}

/** Dispatches a request to `handler`: what its answer writes meanwhile waits for the end of the turn's I/O. */
export function dispatchCoalesced(handler: RequestListener, req: IncomingMessage, res: ServerResponse): void {
  collecting = true;
  try {
    handler(req, res);
  } finally {
    collecting = false;
  }
}

/** Lets the socket's writes made during `dispatchCoalesced` wait for the end of the turn (see above). Once per connection. */
export function coalesceWrites(socket: Coalesced): void {
  const write = socket._write;
  const writev = socket._writev;
  const destroy = socket.destroy;
  socket._write = (chunk: unknown, encoding: BufferEncoding, callback: Callback) => {
    if (collecting) enqueue(socket, (done) => write.call(socket, chunk, encoding, done), callback);
    else write.call(socket, chunk, encoding, callback);
  };
  if (writev !== undefined) {
    socket._writev = (chunks: Chunks, callback: Callback) => {
      if (collecting) enqueue(socket, (done) => writev.call(socket, chunks, done), callback);
      else writev.call(socket, chunks, callback);
    };
  }
  // A connection destroyed before the end of the turn (a handler's destroy, a reset) first sends
  // what was written to it, as it would have inline: its queued write now, and, through the
  // stream, whatever the stream buffered behind it (before the stream is marked destroyed, which
  // would drop that).
  socket.destroy = function destroyAfterQueuedWrite(this: Coalesced, error?: Error) {
    const pending = socket[QUEUED];
    if (pending !== undefined && !socket.destroyed) {
      const wasCollecting = collecting;
      collecting = false;
      try {
        run(pending);
      } finally {
        collecting = wasCollecting;
      }
    }
    return destroy.call(this, error);
  };
}
