import { Command, CommanderError, Option } from 'commander';
import { redactKeys } from '../auth/key-format.js';
import { ConfigError } from '../config/index.js';
import * as commands from './commands.js';
import { CliError } from './output.js';
import { registerUserCommands } from './user-commands.js';

/**
 * `listings-api`: the operator contract of OPERATIONS.md. Exit status 0 success, 1 failure
 * (bad input included: one line on stderr, nothing written), 2 usage error.
 */
const program = new Command('listings-api')
  .description('Listings Developer API: run the service and manage accounts, keys, origins and listings.')
  .exitOverride()
  // Usage errors are printed once, on one line, below; so is a missing sub-command, for which
  // commander would otherwise dump the whole help on stderr.
  .configureOutput({ outputError: () => {}, writeErr: () => {} });

const json = () => new Option('--json', 'print the result as one JSON object');

program.command('serve').description('run the API until SIGINT/SIGTERM (applies pending migrations first)')
  .option('--demo', 'create the demo data if missing and print a fresh demo key')
  .option('--workers <n>', 'worker processes on the one port (default: one per core with REDIS_URL, else 1; more than 1 needs REDIS_URL)')
  .addOption(json())
  // Loaded on demand: the HTTP stack is not needed by the other commands (and costs ~0.2 s to load).
  .action(async (opts) => (await import('./serve.js')).serveCommand(opts));
program.command('migrate').description('apply pending schema migrations').addOption(json())
  .action((opts) => commands.migrateCommand(opts));
program.command('demo').description('create the demo data set if missing; print a working sg key and a curl line').addOption(json())
  .action((opts) => commands.demoCommand(opts));

const account = program.command('account').description('manage accounts');
account.command('create').description('create an account; prints its id')
  .requiredOption('--name <name>', 'display name')
  .addOption(new Option('--kind <kind>', 'organisation or individual').default('organisation'))
  .option('--id <uuid>', 'use this id instead of a new one').addOption(json())
  .action((opts) => commands.accountCreate(opts));

const key = program.command('key').description('manage API keys');
key.command('create').description('create a key; prints the full key, the only time it is shown')
  .requiredOption('--account <id>', 'owning account id').requiredOption('--country <cc>', 'country code')
  .requiredOption('--label <text>', 'label').addOption(json())
  .action((opts) => commands.keyCreate(opts));
key.command('list').description("list an account's keys").requiredOption('--account <id>', 'account id').addOption(json())
  .action((opts) => commands.keyList(opts));
key.command('revoke').description('revoke a key, effective at once (D4)').argument('<KEY_ID>').addOption(json())
  .action((id, opts) => commands.keyRevoke(id, opts));
key.command('set-limit').description("set a key's per-minute rate limit").argument('<KEY_ID>').argument('<PER_MINUTE>').addOption(json())
  .action((id, limit, opts) => commands.keySetLimit(id, limit, opts));

const origin = program.command('origin').description('manage the browser-origin allow-list');
for (const [name, description, action] of [
  ['add', 'register a browser origin for a country', commands.originAdd],
  ['remove', 'remove a registered origin', commands.originRemove],
] as const) {
  origin.command(name).description(description).argument('<ORIGIN>')
    .requiredOption('--account <id>', 'account id').requiredOption('--country <cc>', 'country code').addOption(json())
    .action((value, opts) => action(value, opts));
}
origin.command('list').description("list an account's origins").requiredOption('--account <id>', 'account id').addOption(json())
  .action((opts) => commands.originList(opts));

// Dashboard members (src/cli/user-commands.ts).
registerUserCommands(program, json);

program.command('import').description('upsert listings from an NDJSON file ("-" for stdin), all or nothing').argument('<FILE>')
  .addOption(json()).action((file, opts) => commands.importCommand(file, opts));

function fail(message: string, code: 1 | 2): never {
  // No error ever shows a full key (D20).
  process.stderr.write(`listings-api: ${redactKeys(message.replace(/\s*\n\s*/g, ' ').trim())}\n`);
  process.exit(code);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    if (error.code === 'commander.help' && error.exitCode !== 0) {
      // `listings-api` or `listings-api key` without a (sub-)command: a usage error.
      const words = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
      fail(`missing command (see ${['listings-api', ...words].join(' ')} --help)`, 2);
    }
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') process.exit(0);
    fail(`${error.message.replace(/^error: /, '')} (see listings-api --help)`, 2);
  }
  if (error instanceof CliError) fail(error.message, error.exitCode);
  if (error instanceof ConfigError) fail(`configuration: ${error.message}`, 1);
  fail(error instanceof Error ? error.message : String(error), 1);
}
