import { runCommandLine } from './program.js';

/**
 * The bin (`listings-api`, OPERATIONS.md): runs the command line with the process's environment
 * and streams. A failure exits at once with its status; success lets the process end by itself
 * (`serve` keeps it running until SIGINT/SIGTERM).
 */
const status = await runCommandLine(process.argv.slice(2));
if (status !== 0) process.exit(status);
