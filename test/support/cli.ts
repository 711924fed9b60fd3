import { spawn, spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runCommandLine } from '../../src/cli/program.js';

export const BIN = fileURLToPath(new URL('../../../bin/listings-api.js', import.meta.url));

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
  json: any;
}

function parsed(status: number, stdout: string, stderr: string): CliResult {
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { status, stdout, stderr, json };
}

/**
 * Runs `listings-api ARGS` as operators do, in a process of its own, against the given database.
 * For what only a process shows: the exit status the shell sees, everything that reaches stdout
 * and stderr, stdin.
 */
export function runCli(args: string[], env: Record<string, string>, input?: string): CliResult {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    input,
    encoding: 'utf8',
  });
  return parsed(result.status ?? -1, result.stdout, result.stderr);
}

/**
 * `listings-api ARGS` in a process of its own, as runCli, without waiting for it: resolves with
 * its result and the moment (Date.now()) this process saw it exit.
 */
export function startCli(args: string[], env: Record<string, string>): Promise<CliResult & { exitedAt: number }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => void (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ ...parsed(code ?? -1, stdout, stderr), exitedAt: Date.now() }));
  });
}

/**
 * The same command line run in this process: the same parser, commands and error handling as the
 * bin (src/cli/program.ts), with `env` on top of this process's environment (as runCli does) and
 * `input` as stdin; the status is the one the bin would exit with. Much cheaper than a process,
 * so it serves every check that is not about the process itself.
 */
export async function callCli(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  // importCommand reads `-` from the process's own stdin, not the context's: use runCli for that.
  if (args[0] === 'import' && args.includes('-')) throw new Error('callCli cannot feed `import -`: use runCli');
  let stdout = '';
  let stderr = '';
  const status = await runCommandLine(args, {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    stdin: Readable.from(input === undefined ? [] : [Buffer.from(input)]),
  });
  return parsed(status, stdout, stderr);
}
