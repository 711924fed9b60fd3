import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What a command reads and writes besides the database: the environment its configuration comes
 * from, stdout, stderr and stdin. The bin runs every command with the process's own; tests run
 * commands in-process with their own (test/support/cli.ts), so that only the checks that need a
 * real process (exit status, what reaches the terminal, stdin) spawn one.
 *
 * It is ambient (AsyncLocalStorage) rather than a parameter so that `withStore` and `emit` find it
 * without every command passing it along; each run of `runCommandLine` has its own, so in-process
 * runs never see each other's.
 */
export interface CliContext {
  env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  stderr(text: string): void;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** The process's own environment and streams: what the bin uses. */
export const processContext: CliContext = {
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  get stdin() {
    return process.stdin;
  },
};

const current = new AsyncLocalStorage<CliContext>();

/** The context of the command being run (the process's own outside `runInContext`). */
export function cliContext(): CliContext {
  return current.getStore() ?? processContext;
}

export function runInContext<T>(context: CliContext, fn: () => T): T {
  return current.run(context, fn);
}
