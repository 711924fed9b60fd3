import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Config } from '../config/index.js';
import { hostForCountry } from '../core/countries.js';
import { ensureDemo } from '../demo/demo-data.js';
import { importListings, ImportError } from '../listings/import.js';
import { CliError, emit } from './output.js';
import { withStore } from './store.js';

/**
 * `import` and `demo`, and the curl line `serve --demo` prints too. The other commands live in
 * modules of their own (account-, key-, origin-, user-commands.ts, migrate-command.ts), so that
 * each loads only what it uses (program.ts imports the one a command line names).
 */
// Their former home: kept for code that imports them from here.
export { existingAccount, uuidArg, withStore } from './store.js';

export async function importCommand(file: string, opts: { json: boolean }): Promise<void> {
  let input: Readable;
  if (file === '-') {
    input = process.stdin;
  } else {
    try {
      await access(file);
    } catch {
      throw new CliError(`cannot read ${file}: no such file or no permission`);
    }
    input = createReadStream(file);
  }
  let result: { inserted: number; updated: number };
  try {
    result = await withStore((store) => importListings(store, input, new Date()));
  } catch (error) {
    if (error instanceof ImportError) throw new CliError(`import failed, nothing was written: ${error.message}`);
    throw error;
  }
  emit(opts.json, result, () => `Imported: ${result.inserted} inserted, ${result.updated} updated.`);
}

/** The curl line that returns the demo listings, for a key of `sg`. */
export function curlLine(config: Config, key: string): string {
  const port = config.port === 80 ? '' : `:${config.port}`;
  return `curl -H "Authorization: Bearer ${key}" http://${hostForCountry('sg', config.apiDomain)}${port}/v1/listings`;
}

export async function demoCommand(opts: { json: boolean }): Promise<void> {
  const { result, config } = await withStore(async (store, config) => ({ result: await ensureDemo(store, new Date()), config }));
  const curl = curlLine(config, result.key);
  emit(opts.json, { account_id: result.accountId, key_id: result.keyId, key: result.key, curl, created: result.created }, () =>
    [
      result.created ? 'Created the demo data set.' : 'The demo data set exists already.',
      `Demo organisation: ${result.accountId}`,
      `New sg key (shown once): ${result.key}`,
      `Try it (with the server running):\n  ${curl}`,
    ].join('\n'));
}
