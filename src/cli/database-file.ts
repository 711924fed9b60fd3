import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { sqliteFile } from '../storage/database.js';
import { CliError } from './output.js';

/**
 * Which SQLite file a command works on, and whether it may create one (issue 30 item 6).
 * DATABASE_URL's default, `file:./data/listings.db`, is relative to the current folder: a command
 * run from another folder would otherwise create a new, empty database there without a word, and
 * work on it (a demo key no running server knows, "no key with id" for a key that exists).
 * So only `migrate`, `serve` and `demo`, which make a database ready for use, create a missing
 * file, and they say so on stderr (stdout keeps the command's result alone, `--json` included);
 * every other command fails with one line naming the path and DATABASE_URL.
 */
export function checkDatabaseFile(
  url: string,
  env: Readonly<Record<string, string | undefined>>,
  { create, stderr }: { create: boolean; stderr: (text: string) => void },
): void {
  const file = sqliteFile(url);
  if (file === undefined || existsSync(file)) return;
  if (!create) {
    throw new CliError(`no database at ${file} (${describe(url, env)}): set DATABASE_URL to the database the server uses, or create a new one with "listings-api migrate"`);
  }
  stderr(`notice: creating a new, empty SQLite database at ${file} (${describe(url, env)}); a server started from another folder or with another DATABASE_URL does not use it\n`);
}

/** Where the path came from: DATABASE_URL or its default, and the current folder for a relative path. */
function describe(url: string, env: Readonly<Record<string, string | undefined>>): string {
  const relative = isAbsolute(url.slice('file:'.length)) ? '' : ', relative to the current folder';
  return env.DATABASE_URL?.trim() ? `DATABASE_URL=${url}${relative}` : `DATABASE_URL is unset: the default ${url}${relative}`;
}
