import { runCommandLine } from './program.js';

// A reader that went away (`listings-api key list | head -1`) is not the command's failure: the rest
// of its output has nowhere to go, so it is dropped, and the command ends with its own status, as
// it would have had the reader stayed (a write already made, such as a key created, stands). Left
// alone, the write error would crash the process with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
  });
}

/**
 * The bin (`listings-api`, OPERATIONS.md): runs the command line with the process's environment
 * and streams. A failure exits at once with its status; success lets the process end by itself
 * (`serve` keeps it running until SIGINT/SIGTERM).
 */
const status = await runCommandLine(process.argv.slice(2));
if (status !== 0) process.exit(status);
