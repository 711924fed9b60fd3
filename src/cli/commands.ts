import { createReadStream } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { apiBaseUrl, curlLine } from '../config/urls.js';
import { ensureDemo } from '../demo/demo-data.js';
import { importListings, ImportError, type ImportFile } from '../import/import.js';
import type { ImportCounts, Store } from '../storage/index.js';
import type { Config } from '../config/index.js';
import { CliError, emit } from './output.js';
import { StatementTimeoutError, withStore } from './store.js';

/**
 * `import` and `demo`, and the curl line `serve --demo` prints too. The other commands live in
 * modules of their own (account-, key-, origin-, user-commands.ts, migrate-command.ts), so that
 * each loads only what it uses (program.ts imports the one a command line names).
 */

/**
 * Files from this size up are read and checked in a worker thread (importListings), and so is
 * standard input, whose size is not known: below it the thread's start-up costs more than it saves.
 */
const WORKER_FROM_BYTES = 1024 * 1024;

export async function importCommand(file: string, opts: { json: boolean }): Promise<void> {
  // The file is opened once the database is (withStore), so that a command that fails before
  // reading it (no database: database-file.ts) leaves no stream opening it behind.
  let input: () => Readable | ImportFile;
  if (file === '-') {
    input = () => ({ fd: 0 });
  } else {
    let size: number;
    try {
      await access(file);
      size = (await stat(file)).size;
    } catch {
      throw new CliError(`cannot read ${file}: no such file or no permission`);
    }
    input = size >= WORKER_FROM_BYTES ? () => ({ path: file }) : () => createReadStream(file);
  }
  // A long import says how far it got, on a terminal only (a pipe or a log gets the result alone).
  const progress = process.stderr.isTTY ? (lines: number) => process.stderr.write(`\rRead ${lines.toLocaleString('en')} lines...`) : undefined;
  const started = performance.now();
  let result: ImportCounts;
  try {
    result = await withStore((store) => importListings(store, input(), new Date(), { onProgress: progress }), { statementLimit: 'IMPORT_STATEMENT_TIMEOUT_MS' });
  } catch (error) {
    // All or nothing (OPERATIONS): a statement cancelled anywhere in it leaves nothing written either.
    if (error instanceof ImportError || error instanceof StatementTimeoutError) throw new CliError(`import failed, nothing was written: ${error.message}`);
    throw error;
  } finally {
    if (progress) process.stderr.write('\r\x1b[K');
  }
  const seconds = (performance.now() - started) / 1000;
  const lines = result.inserted + result.updated;
  emit(opts.json, result, () =>
    `Imported: ${result.inserted} inserted, ${result.updated} updated (${result.unchanged} of them unchanged)` +
    (seconds >= 1 ? ` in ${seconds.toFixed(1)} s, ${Math.round(lines / seconds).toLocaleString('en')} lines/s.` : '.'));
}

export async function demoCommand(opts: { json: boolean }): Promise<void> {
  // The demo's photos point at where `serve` answers with this configuration (http/demo-images.ts).
  const demo = (store: Store, config: Config) => ensureDemo(store, new Date(), apiBaseUrl(config.countries[0]!, config));
  const { result, config } = await withStore(async (store, config) => ({ result: await demo(store, config), config }), { create: true });
  const curl = curlLine(config, result.key);
  emit(opts.json, { account_id: result.accountId, key_id: result.keyId, key: result.key, curl, created: result.created }, () =>
    [
      result.created ? 'Created the demo data set.' : 'The demo data set exists already.',
      `Demo organisation: ${result.accountId}`,
      ...(result.created ? [] : result.addedOrigins.map((o) => `Allowed browser origin ${o.origin} for ${o.country}.`)),
      `New sg key (shown once): ${result.key}`,
      ...(result.revokedKeyIds.length === 0 ? [] : [`Revoked the earlier demo key${result.revokedKeyIds.length === 1 ? '' : 's'}: ${result.revokedKeyIds.join(', ')}`]),
      `Try it (with the server running):\n  ${curl}`,
    ].join('\n'));
}
