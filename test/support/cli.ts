import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../bin/listings-api.js', import.meta.url));

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs `listings-api ARGS` as operators do, against the given database. */
export function runCli(args: string[], env: Record<string, string>, input?: string): CliResult {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    input,
    encoding: 'utf8',
  });
  let json: unknown;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = undefined;
  }
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, json };
}
