/**
 * What a command reads and writes besides the database: the environment its configuration comes
 * from, stdout, stderr and stdin. The bin runs every command with the process's own; tests run
 * commands in-process with their own (test/support/cli.ts), so that only the checks that need a
 * real process (exit status, what reaches the terminal, stdin) spawn one.
 *
 * It is ambient rather than a parameter so that `withStore` and `emit` find it without every
 * command passing it along. A plain variable, not AsyncLocalStorage: on Node 20 that turns on
 * promise hooks, which made loading the commands' modules some 50 ms slower. So one command runs
 * at a time in a process (runInContext refuses an overlapping one).
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

let current: CliContext | undefined;

/** The context of the command being run (the process's own outside `runInContext`). */
export function cliContext(): CliContext {
  return current ?? processContext;
}

export async function runInContext<T>(context: CliContext, fn: () => Promise<T>): Promise<T> {
  if (current !== undefined) throw new Error('a command is running already in this process: run commands one after another');
  current = context;
  try {
    return await fn();
  } finally {
    current = undefined;
  }
}
