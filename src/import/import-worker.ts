import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { ImportError } from './import-line.js';
import { BATCHES_AHEAD, parseLines, type FromWorker, type ImportFile, type ToWorker } from './import-lines.js';

/**
 * The worker thread of `parseLinesInWorker` (import-lines.ts): it reads the file, checks its
 * lines, and sends them in batches, at most BATCHES_AHEAD ahead of the ones taken.
 */

const port = parentPort!;
const send = (message: FromWorker) => port.postMessage(message);
const file = workerData as ImportFile;
// A descriptor it was given (standard input) is not the worker's to close.
const input = 'path' in file ? createReadStream(file.path) : createReadStream('', { fd: file.fd, autoClose: false });

let ahead = 0;
let taken: (() => void) | undefined;
port.on('message', (message: ToWorker) => {
  if (message.type !== 'taken') return;
  ahead--;
  taken?.();
  taken = undefined;
});

async function run(): Promise<void> {
  for await (const batch of parseLines(input)) {
    while (ahead >= BATCHES_AHEAD) await new Promise<void>((resolve) => (taken = resolve));
    ahead++;
    send({ type: 'batch', batch });
  }
  send({ type: 'done' });
}

run().catch((error: unknown) => {
  if (error instanceof ImportError) send({ type: 'bad line', line: error.line, field: error.field, problem: error.problem });
  else send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
});
