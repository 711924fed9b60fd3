import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { BenchDataset } from './dataset.js';

/**
 * The benchmark's data set written by a release's own CLI (`--against`): the working tree's and the
 * reference's each migrate, create the organisation, issue its key and import the same NDJSON
 * lines into a database of their own, so each server reads a schema its own code made. Only
 * commands and flags of the operator's contract are used (OPERATIONS.md "Commands": `migrate`,
 * `account create --id`, `key create`, `key set-limit`, `import`, each with `--json`), which every
 * release keeps.
 */
export interface CliSeed {
  /** The release's CLI (`bin/listings-api.js` of its tree) and the folder it runs in. */
  bin: string;
  cwd: string;
  databaseUrl: string;
  /** The NDJSON file of the data set (writeListingsFile). */
  listingsFile: string;
  data: BenchDataset;
}

/** The data set's lines as the import file every release reads. */
export function writeListingsFile(file: string, data: BenchDataset): void {
  writeFileSync(file, `${data.lines.join('\n')}\n`);
}

/** Seeds the database and returns the organisation's `sg` key, its per-key limit raised so far that the limiter (which still runs) never refuses. */
export async function seedThroughCli(seed: CliSeed): Promise<{ key: string }> {
  const cli = (...args: string[]) => runCli(seed, args);
  await cli('migrate', '--json');
  await cli('account', 'create', '--name', 'Benchmark Realty Pte Ltd', '--id', seed.data.ownerAccountId, '--json');
  const created = JSON.parse(await cli('key', 'create', '--account', seed.data.ownerAccountId, '--country', 'sg', '--label', 'benchmark', '--json')) as { id?: unknown; key?: unknown };
  if (typeof created.id !== 'string' || typeof created.key !== 'string') throw new Error(`${seed.bin} key create --json printed no id and key`);
  await cli('key', 'set-limit', created.id, '1000000000', '--json');
  await cli('import', seed.listingsFile, '--json');
  return { key: created.key };
}

/**
 * One CLI command with DATABASE_URL; its stdout, or an error with its stderr (never the key: `key
 * create` prints it on stdout only). Older releases' imports run under DATABASE_STATEMENT_TIMEOUT_MS
 * (default 5 s), which an import of the data set into PostgreSQL can pass on a busy machine: the
 * seeding commands get the longest the setting allows, as an operator's import would.
 */
function runCli({ bin, cwd, databaseUrl }: CliSeed, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, DATABASE_URL: databaseUrl, DATABASE_STATEMENT_TIMEOUT_MS: '600000' };
    const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${bin} ${args[0]} ${args[1] ?? ''} failed (exit ${code}): ${stderr.trim().slice(-2000)}`));
    });
  });
}
