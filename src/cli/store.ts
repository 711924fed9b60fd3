import { CLI_MIN_BUSY_TIMEOUT_MS, loadConfig, type Config } from '../config/index.js';
import { canonicalUuid } from '../core/formats.js';
import { COUNTRY_CODES, isCountry, type Country } from '../core/countries.js';
import { openStore, type Store } from '../storage/index.js';
import { cliContext } from './context.js';
import { checkDatabaseFile } from './database-file.js';
import { CliError } from './output.js';

/** How long a command waits for every running instance to confirm its change (D4), at most. */
const CONFIRM_TIMEOUT_MS = 5000;

/**
 * The setting that caps each statement of a command on PostgreSQL. DATABASE_STATEMENT_TIMEOUT_MS
 * is there so that a stuck query fails a request instead of hanging it; the CLI's short commands
 * keep it. An import is not a request: its statements grow with its file (one inserts every new
 * listing, one compares every staged line with what is stored), so it has a limit of its own,
 * IMPORT_STATEMENT_TIMEOUT_MS, none by default, for all of its statements (migrations included).
 */
export type StatementLimit = 'DATABASE_STATEMENT_TIMEOUT_MS' | 'IMPORT_STATEMENT_TIMEOUT_MS';

/** A statement cancelled by the limit of a command (StatementLimit); the message names the setting. */
export class StatementTimeoutError extends CliError {
  constructor(readonly setting: StatementLimit, ms: number, answered: boolean) {
    super(
      ms === 0
        ? `a database statement was cancelled by the database server's own statement_timeout (${setting} is 0: no limit of its own)`
        : answered
          ? `a database statement ran past ${setting} (${ms} ms) and was cancelled; raise it${setting === 'IMPORT_STATEMENT_TIMEOUT_MS' ? ', or set it to 0 for no limit' : ''}`
          : `the database did not answer within ${setting} (${ms} ms) and a second; check the connection to it, or raise ${setting}`,
    );
    this.name = 'StatementTimeoutError';
  }
}

/**
 * `error` as a StatementTimeoutError when a statement timeout caused it: the server's
 * cancellation (57014, "statement timeout", not an operator's pg_cancel_backend) or the driver's
 * wait for an answer, which ends a second after the server's limit.
 */
function statementTimeout(error: unknown, setting: StatementLimit, ms: number): StatementTimeoutError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message !== 'string') return undefined;
  if (code === '57014' && message.includes('statement timeout')) return new StatementTimeoutError(setting, ms, true);
  if (message === 'Query read timeout') return new StatementTimeoutError(setting, ms, false);
  return undefined;
}

/**
 * Opens the configured database, migrated, runs `fn`, and always closes it. On PostgreSQL the
 * command returns only once every running instance has confirmed that it applied the command's
 * changes (D4), or after CONFIRM_TIMEOUT_MS with a warning on stderr.
 * The configuration comes from `env`, by default the command's context (the process's environment
 * when run by the bin). Migrating first costs about 5 ms on an up-to-date SQLite file.
 * A missing SQLite file is created only with `create` (`migrate`, `demo`), with a notice on
 * stderr; otherwise the command fails naming the path (database-file.ts).
 */
export async function withStore<T>(
  fn: (store: Store, config: Config) => Promise<T>,
  {
    migrate = true,
    env = cliContext().env,
    statementLimit = 'DATABASE_STATEMENT_TIMEOUT_MS',
    create = false,
  }: { migrate?: boolean; env?: Readonly<Record<string, string | undefined>>; statementLimit?: StatementLimit; create?: boolean } = {},
): Promise<T> {
  const context = cliContext();
  const config = loadConfig(env);
  checkDatabaseFile(config.databaseUrl, env, { create, stderr: context.stderr });
  const statementTimeoutMs = statementLimit === 'IMPORT_STATEMENT_TIMEOUT_MS' ? config.importStatementTimeoutMs : config.databaseStatementTimeoutMs;
  const store = openStore(config.databaseUrl, {
    listenForChanges: true,
    poolSize: 2,
    statementTimeoutMs,
    // An operator's command waits longer for its turn than a request does: a revoke issued while
    // a big import is being swapped in must succeed (D4), not fail after the server's 10 s.
    busyTimeoutMs: Math.max(config.databaseBusyTimeoutMs, CLI_MIN_BUSY_TIMEOUT_MS),
    // Should the file go away after the check, fail rather than create it silently.
    createIfMissing: create,
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
  } catch (error) {
    throw statementTimeout(error, statementLimit, statementTimeoutMs) ?? error;
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
