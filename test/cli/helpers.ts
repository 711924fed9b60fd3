import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { callCli, runCli, type CliResult } from '../support/cli.js';
import { webhooksSqliteFile } from '../../src/storage/database.js';

/**
 * A CLI test's own SQLite file, and the CLI run against it: `run` spawns the real bin, `call` runs
 * the same command line in-process (test/support/cli.ts). Tests spawn for what only a process
 * shows (the exit status the shell gets, each command's `--json` output as it reaches stdout, D20
 * leak checks, stdin) and call in-process for the rest.
 */
export interface CliDatabase {
  dir: string;
  /** The SQLite file path. */
  file: string;
  /** The webhook delivery state's file beside it (storage/database.ts webhooksSqliteFile). */
  webhooksFile: string;
  /** DATABASE_URL for it. */
  url: string;
  /** Every stdout and stderr the CLI wrote (spawned or in-process), with the command line, for leak checks (D20). */
  transcript: Array<{ args: string[]; stdout: string; stderr: string }>;
  run(args: string[], input?: string, env?: Record<string, string>): CliResult;
  call(args: string[], input?: string, env?: Record<string, string>): Promise<CliResult>;
  remove(): void;
}

/**
 * A new, empty SQLite database (an empty file: what `CREATE DATABASE` is to PostgreSQL), as an
 * operator's would be. `missing`: no file at all, which only `migrate`, `serve` and `demo` create
 * (with a notice on stderr), and on which every other command fails (issue 30 item 6).
 */
export function tempDatabase({ missing = false }: { missing?: boolean } = {}): CliDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'listings-cli-'));
  const file = join(dir, 'x.db');
  if (!missing) writeFileSync(file, '');
  const url = `file:${file}`;
  const transcript: CliDatabase['transcript'] = [];
  return {
    dir,
    file,
    webhooksFile: webhooksSqliteFile(url)!,
    url,
    transcript,
    run(args, input, env = {}) {
      const result = runCli(args, { DATABASE_URL: url, ...env }, input);
      transcript.push({ args, stdout: result.stdout, stderr: result.stderr });
      return result;
    },
    async call(args, input, env = {}) {
      const result = await callCli(args, { DATABASE_URL: url, ...env }, input);
      transcript.push({ args, stdout: result.stdout, stderr: result.stderr });
      return result;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A successful `--json` run: exit 0, nothing on stderr, exactly one JSON object on one stdout line. */
export function okJson(result: CliResult, label = ''): any {
  assert.equal(result.status, 0, `${label}: exit ${result.status}, stderr: ${result.stderr}`);
  assert.equal(result.stderr, '', `${label}: stderr`);
  assert.ok(result.stdout.endsWith('\n'), `${label}: stdout ends with a newline`);
  assert.equal(result.stdout.trimEnd().split('\n').length, 1, `${label}: stdout is one line: ${result.stdout}`);
  const value = JSON.parse(result.stdout) as unknown;
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `${label}: a JSON object`);
  assert.equal(result.stdout, `${JSON.stringify(value)}\n`, `${label}: nothing else on stdout`);
  return value;
}

/** A successful human run: exit 0, nothing on stderr. Returns stdout. */
export function okText(result: CliResult, label = ''): string {
  assert.equal(result.status, 0, `${label}: exit ${result.status}, stderr: ${result.stderr}`);
  assert.equal(result.stderr, '', `${label}: stderr`);
  return result.stdout;
}

/**
 * A failed run: the given exit status, nothing on stdout, and exactly one line on stderr that
 * matches every pattern (what was wrong, and where).
 */
export function fails(result: CliResult, status: 1 | 2, patterns: RegExp[], label = ''): string {
  assert.equal(result.status, status, `${label}: exit ${result.status} (expected ${status}); stderr: ${result.stderr}; stdout: ${result.stdout}`);
  assert.equal(result.stdout, '', `${label}: nothing on stdout`);
  assert.ok(result.stderr.endsWith('\n'), `${label}: stderr ends with a newline`);
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `${label}: one line on stderr, got:\n${result.stderr}`);
  assert.ok(lines[0]!.startsWith('listings-api: '), `${label}: ${lines[0]}`);
  for (const pattern of patterns) assert.match(lines[0]!, pattern, label);
  return lines[0]!;
}

/** Every row of every table, in a stable order: compare before and after to prove nothing was written. */
export function dump(file: string, tables = ['accounts', 'listings', 'api_keys', 'allowed_origins', 'listing_changes', 'tenant_versions', 'store_versions']): string {
  const db = new BetterSqlite3(file, { fileMustExist: true });
  try {
    const out: Record<string, unknown[]> = {};
    for (const table of tables) out[table] = db.prepare(`SELECT * FROM ${table}`).all().map((r) => JSON.stringify(r)).sort();
    return JSON.stringify(out, null, 1);
  } finally {
    db.close();
  }
}

/** Rows of one table, for checks. */
export function rows<T = Record<string, unknown>>(file: string, query: string, ...params: unknown[]): T[] {
  const db = new BetterSqlite3(file, { fileMustExist: true });
  try {
    return db.prepare(query).all(...params) as T[];
  } finally {
    db.close();
  }
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
