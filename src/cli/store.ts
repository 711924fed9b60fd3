import { loadConfig, type Config } from '../config/index.js';
import { canonicalUuid } from '../core/formats.js';
import { COUNTRY_CODES, isCountry, type Country } from '../core/countries.js';
import { openStore, type Store } from '../storage/index.js';
import { cliContext } from './context.js';
import { CliError } from './output.js';

/** How long a command waits for every running instance to confirm its change (D4), at most. */
const CONFIRM_TIMEOUT_MS = 5000;

/**
 * Opens the configured database, migrated, runs `fn`, and always closes it. On PostgreSQL the
 * command returns only once every running instance has confirmed that it applied the command's
 * changes (D4), or after CONFIRM_TIMEOUT_MS with a warning on stderr.
 * The configuration comes from `env`, by default the command's context (the process's environment
 * when run by the bin). Migrating first costs about 5 ms on an up-to-date SQLite file.
 */
export async function withStore<T>(
  fn: (store: Store, config: Config) => Promise<T>,
  { migrate = true, env = cliContext().env }: { migrate?: boolean; env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<T> {
  const context = cliContext();
  const config = loadConfig(env);
  const store = openStore(config.databaseUrl, {
    listenForChanges: true,
    poolSize: 2,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    // An operator's command waits longer for its turn than a request does: a revoke issued while
    // a big import is being swapped in must succeed (D4), not fail after the server's 10 s.
    busyTimeoutMs: Math.max(config.databaseBusyTimeoutMs, 60_000),
  });
  try {
    if (migrate) await store.migrate();
    await store.start();
    const result = await fn(store, config);
    const { settled, instances, unconfirmed } = await store.broadcastSettled(CONFIRM_TIMEOUT_MS);
    if (!settled) {
      // The change is committed, so the command succeeded; but say plainly that it may not be
      // served everywhere yet (a stalled or overloaded instance), rather than hang on it.
      const who = unconfirmed > 0 ? `${unconfirmed} of ${instances} running instances did not confirm it` : 'its notification did not come back';
      context.stderr(`warning: the change is saved, but ${who} within ${CONFIRM_TIMEOUT_MS / 1000} s; they apply it once they read their notifications\n`);
    }
    return result;
  } finally {
    await store.close();
  }
}

export function uuidArg(what: string, value: string): string {
  const id = canonicalUuid(value);
  if (id === undefined) throw new CliError(`${what} "${value}" is not a UUID`);
  return id;
}

export function countryArg(value: string): Country {
  const cc = value.toLowerCase();
  if (!isCountry(cc)) throw new CliError(`unknown country "${value}" (expected one of ${COUNTRY_CODES.join(', ')})`);
  return cc;
}

export async function existingAccount(store: Store, id: string): Promise<string> {
  const accountId = uuidArg('account id', id);
  if ((await store.accounts.get(accountId)) === undefined) throw new CliError(`no account with id ${accountId}`);
  return accountId;
}
