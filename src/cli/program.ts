import { Command, CommanderError, Help, Option, type Argument } from 'commander';
import { redactKeys } from '../auth/key-format.js';
import { ConfigError } from '../config/index.js';
import { processContext, runInContext, type CliContext } from './context.js';
import { CliError } from './output.js';

/**
 * `listings-api`: the operator contract of OPERATIONS.md. Exit status 0 success, 1 failure
 * (bad input included: one line on stderr, nothing written), 2 usage error (one line on stderr
 * that points at the command's own --help).
 *
 * Each command's module is imported by its action, so a command loads only what it uses: `key`
 * and `origin` never load the HTTP stack, the dashboard, the demo or the importer, and a SQLite
 * database never loads the PostgreSQL driver (storage/database.ts). test/cli/startup.test.ts
 * holds them to that.
 */

/**
 * The demo organisation's id (DEMO_ORG_ID of demo/demo-data.ts, not imported: see above), so that
 * the examples work after `listings-api demo`; test/cli/commands.test.ts checks they agree.
 */
export const EXAMPLE_ACCOUNT = '0de30000-0000-4000-8000-000000000001';
const EXAMPLE_KEY_ID = '49b8b528-5b04-4f7c-b366-0bd9ed50cabf';

/** Help: required options and arguments say so (commander otherwise hides them in "[options]"). */
const helpConfiguration: Partial<Help> = {
  optionDescription(this: Help, option: Option): string {
    const description = Help.prototype.optionDescription.call(this, option);
    return option.mandatory ? `${description} (required)` : description;
  },
  argumentDescription(this: Help, argument: Argument): string {
    const description = Help.prototype.argumentDescription.call(this, argument);
    return argument.required ? `${description} (required)` : description;
  },
};

/** Help text after a command's options: one or more example command lines. */
function examples(...lines: string[]): string {
  return `\n${lines.length === 1 ? 'Example' : 'Examples'}:\n${lines.map((line) => `  $ ${line}`).join('\n')}`;
}

const json = () => new Option('--json', 'print the result as one JSON object');

/** The command line parser, fresh for each run (commander keeps the parsed values on it). */
function createProgram(context: CliContext): Command {
  const program = new Command('listings-api')
    .description('Listings Developer API: run the service and manage accounts, keys, origins and listings.')
    // Usage errors are printed once, on one line, by runCommandLine; so is a missing sub-command,
    // for which commander would otherwise dump the whole help on stderr.
    .configureOutput({ writeOut: (text) => context.stdout(text), outputError: () => {}, writeErr: () => {} })
    // Inherited by every command created below, as the output configuration is.
    .configureHelp(helpConfiguration);
  // In the order the help lists them.
  addServiceCommands(program);
  addAccountCommands(program);
  addKeyCommands(program);
  addOriginCommands(program);
  addWebhookCommands(program);
  addUserCommands(program);
  addImportCommand(program);
  reportUsageErrors(program);
  return program;
}

/** `serve`, `migrate` and `demo`. */
function addServiceCommands(program: Command): void {
  program.command('serve').description('run the API until SIGINT/SIGTERM (applies pending migrations first)')
    .option('--demo', 'create the demo data if missing and print a fresh demo key')
    .option('--workers <n>', 'worker processes on the one port (default: one per core with REDIS_URL, else 1; more than 1 needs REDIS_URL)')
    .addOption(json())
    .addHelpText('after', examples('listings-api serve', 'REDIS_URL=redis://127.0.0.1:6379 listings-api serve --workers 4'))
    // The HTTP stack is loaded by this command alone.
    .action(async (opts) => (await import('./serve.js')).serveCommand(opts));
  program.command('migrate').description('apply pending schema migrations').addOption(json())
    .addHelpText('after', examples('listings-api migrate'))
    .action(async (opts) => (await import('./migrate-command.js')).migrateCommand(opts));
  program.command('demo').description('create the demo data set if missing; print a working sg key and a curl line').addOption(json())
    .addHelpText('after', examples('listings-api demo'))
    .action(async (opts) => (await import('./commands.js')).demoCommand(opts));
}

function addAccountCommands(program: Command): void {
  const accounts = () => import('./account-commands.js');
  const account = program.command('account').description('manage accounts');
  account.command('create').description('create an account; prints its id')
    .requiredOption('--name <name>', 'display name')
    .addOption(new Option('--kind <kind>', 'organisation or individual').default('organisation'))
    .option('--id <uuid>', 'use this id instead of a new one').addOption(json())
    .addHelpText('after', examples('listings-api account create --name "Acme Realty"', 'listings-api account create --name "Jane Tan" --kind individual --json'))
    .action(async (opts) => (await accounts()).accountCreate(opts));
  account.command('list').description('list every account: id, name, kind, created').addOption(json())
    .addHelpText('after', examples('listings-api account list'))
    .action(async (opts) => (await accounts()).accountList(opts));
}

function addKeyCommands(program: Command): void {
  const keys = () => import('./key-commands.js');
  const key = program.command('key').description('manage API keys');
  key.command('create').description('create a key; prints the full key, the only time it is shown')
    .requiredOption('--account <id>', 'owning account id').requiredOption('--country <cc>', 'country code')
    .requiredOption('--label <text>', 'label').addOption(json())
    .addHelpText('after', examples(`listings-api key create --account ${EXAMPLE_ACCOUNT} --country sg --label website`))
    .action(async (opts) => (await keys()).keyCreate(opts));
  key.command('list').description("list an account's keys").requiredOption('--account <id>', 'account id').addOption(json())
    .addHelpText('after', examples(`listings-api key list --account ${EXAMPLE_ACCOUNT}`))
    .action(async (opts) => (await keys()).keyList(opts));
  key.command('revoke').description('revoke a key, effective at once (D4)').argument('<KEY_ID>', "the key's id (see key list)").addOption(json())
    .addHelpText('after', examples(`listings-api key revoke ${EXAMPLE_KEY_ID}`))
    .action(async (id, opts) => (await keys()).keyRevoke(id, opts));
  key.command('set-limit').description("set a key's per-minute rate limit")
    .argument('<KEY_ID>', "the key's id (see key list)").argument('<PER_MINUTE>', 'requests per minute, 1 to 1000000000').addOption(json())
    .addHelpText('after', examples(`listings-api key set-limit ${EXAMPLE_KEY_ID} 600`))
    .action(async (id, limit, opts) => (await keys()).keySetLimit(id, limit, opts));
}

function addOriginCommands(program: Command): void {
  const origins = () => import('./origin-commands.js');
  const origin = program.command('origin').description('manage the browser-origin allow-list');
  for (const [name, description, action] of [
    ['add', 'register a browser origin for a country', 'originAdd'],
    ['remove', 'remove a registered origin', 'originRemove'],
  ] as const) {
    origin.command(name).description(description).argument('<ORIGIN>', 'scheme, host and port, e.g. https://www.example.com')
      .requiredOption('--account <id>', 'account id').requiredOption('--country <cc>', 'country code').addOption(json())
      .addHelpText('after', examples(`listings-api origin ${name} --account ${EXAMPLE_ACCOUNT} --country sg https://www.example.com`))
      .action(async (value, opts) => (await origins())[action](value, opts));
  }
  origin.command('list').description("list an account's origins").requiredOption('--account <id>', 'account id').addOption(json())
    .addHelpText('after', examples(`listings-api origin list --account ${EXAMPLE_ACCOUNT}`))
    .action(async (opts) => (await origins()).originList(opts));
}

function addWebhookCommands(program: Command): void {
  const webhooks = () => import('./webhook-commands.js');
  const webhook = program.command('webhook').description('manage webhook endpoints (signed messages when listings change, D24)');
  webhook.command('add').description("register an endpoint; prints its id and signing secret")
    .argument('<URL>', 'an https URL (http only for localhost)')
    .requiredOption('--account <id>', 'account id').requiredOption('--country <cc>', 'country code').addOption(json())
    .addHelpText('after', examples(`listings-api webhook add --account ${EXAMPLE_ACCOUNT} --country sg https://www.example.com/webhooks/listings`))
    .action(async (url, opts) => (await webhooks()).webhookAdd(url, opts));
  webhook.command('list').description("list an account's endpoints with their status").requiredOption('--account <id>', 'account id').addOption(json())
    .addHelpText('after', examples(`listings-api webhook list --account ${EXAMPLE_ACCOUNT}`))
    .action(async (opts) => (await webhooks()).webhookList(opts));
  for (const [name, description, action] of [
    ['remove', 'remove an endpoint and its delivery log', 'webhookRemove'],
    ['test', 'send a webhook.test event now; prints the answer', 'webhookTest'],
    ['enable', 'enable a disabled endpoint: delivery resumes from where it stopped', 'webhookEnable'],
    ['rotate-secret', 'give an endpoint a new secret (the old one signs too for 24 hours); prints it', 'webhookRotateSecret'],
  ] as const) {
    webhook.command(name).description(description).argument('<ID>', "the endpoint's id (see webhook list)").addOption(json())
      .addHelpText('after', examples(`listings-api webhook ${name} ${EXAMPLE_KEY_ID}`))
      .action(async (id, opts) => (await webhooks())[action](id, opts));
  }
  const id = () => ['<ID>', "the endpoint's id (see webhook list)"] as const;
  webhook.command('replay').description('send the messages of an endpoint again from a point in time or a change-feed cursor, in order')
    .argument(...id()).requiredOption('--since <when>', 'an ISO date and time with its offset (2026-12-01T00:00:00Z), or a change-feed cursor').addOption(json())
    .addHelpText('after', examples(`listings-api webhook replay ${EXAMPLE_KEY_ID} --since 2026-12-01T00:00:00Z`))
    .action(async (endpointId, opts) => (await webhooks()).webhookReplay(endpointId, opts));
  webhook.command('filter').description('choose what an endpoint is told of: a kind of change, listings of some usage types')
    .argument(...id())
    .option('--changes <kind>', 'all, upserted or removed', 'all')
    .option('--usage-types <names>', 'comma-separated usage types (Office,Retail,...), or all', 'all')
    .addOption(json())
    .addHelpText('after', examples(`listings-api webhook filter ${EXAMPLE_KEY_ID} --changes all --usage-types "Office,Shared Office"`))
    .action(async (endpointId, opts) => (await webhooks()).webhookFilter(endpointId, opts));
  webhook.command('attempts').description("an endpoint's delivery attempts, newest first (kept 7 days)")
    .argument(...id()).option('--limit <n>', 'attempts per page (1 to 1000)', '20').option('--before <attempt-id>', 'the page after this attempt (printed at the end of a page)')
    .addOption(json())
    .addHelpText('after', examples(`listings-api webhook attempts ${EXAMPLE_KEY_ID} --limit 50`))
    .action(async (endpointId, opts) => (await webhooks()).webhookAttempts(endpointId, opts));
}

/**
 * Dashboard members: a password comes from stdin (its first line) when stdin is not a terminal
 * and not empty; otherwise, or with --generate-password, one is generated and printed once.
 */
function addUserCommands(program: Command): void {
  const users = () => import('./user-commands.js');
  const user = program.command('user').description('manage dashboard members (who can sign in to Settings > Developer)');
  user.command('create').description('add a member to an account; password from stdin, or a generated one printed once')
    .requiredOption('--account <id>', 'account id').requiredOption('--email <email>', 'sign-in email')
    .option('--generate-password', 'do not read stdin; generate a password and print it once').addOption(json())
    .addHelpText('after', examples(
      `listings-api user create --account ${EXAMPLE_ACCOUNT} --email dev@example.com --generate-password`,
      `printf '%s\\n' "$PASSWORD" | listings-api user create --account ${EXAMPLE_ACCOUNT} --email dev@example.com`,
    ))
    .action(async (opts) => (await users()).userCreate(opts));
  user.command('list').description("list an account's members").requiredOption('--account <id>', 'account id').addOption(json())
    .addHelpText('after', examples(`listings-api user list --account ${EXAMPLE_ACCOUNT}`))
    .action(async (opts) => (await users()).userList(opts));
  user.command('set-password').description("replace a member's password (stdin, or generated and printed once); signs them out everywhere")
    .requiredOption('--email <email>', 'sign-in email')
    .option('--generate-password', 'do not read stdin; generate a password and print it once').addOption(json())
    .addHelpText('after', examples('listings-api user set-password --email dev@example.com --generate-password'))
    .action(async (opts) => (await users()).userSetPassword(opts));
}

function addImportCommand(program: Command): void {
  program.command('import').description('upsert listings from an NDJSON file ("-" for stdin), all or nothing')
    .argument('<FILE>', 'an NDJSON file, one listing per line, or - for stdin').addOption(json())
    .addHelpText('after', examples('listings-api import listings.ndjson', 'listings-api import - < listings.ndjson'))
    .action(async (file, opts) => (await import('./commands.js')).importCommand(file, opts));
}

/** Each command reports its own usage errors, so that the message can point at its own --help. */
function reportUsageErrors(command: Command): void {
  command.exitOverride((error) => {
    throw new UsageError(error, command);
  });
  command.commands.forEach(reportUsageErrors);
}

/** A commander error (usage error, help shown), with the command it concerns. */
class UsageError extends Error {
  constructor(readonly error: CommanderError, readonly command: Command) {
    super(error.message);
  }
}

/** `listings-api key list`, for "see ... --help". */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Runs one command line (the words after `listings-api`) with the given context, and returns its
 * exit status: 0 success, 1 failure, 2 usage error. A failure writes exactly one line on the
 * context's stderr and nothing on its stdout.
 */
export async function runCommandLine(args: readonly string[], context: CliContext = processContext): Promise<0 | 1 | 2> {
  const fail = (message: string, code: 1 | 2): 1 | 2 => {
    // No error ever shows a full key (D20).
    context.stderr(`listings-api: ${redactKeys(message.replace(/\s*\n\s*/g, ' ').trim())}\n`);
    return code;
  };
  try {
    await runInContext(context, () => createProgram(context).parseAsync([...args], { from: 'user' }));
    return 0;
  } catch (thrown) {
    if (thrown instanceof UsageError) {
      const { error, command } = thrown;
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      if (error.code === 'commander.help') {
        // `listings-api help` shows the help (0); `listings-api key` without a sub-command is a usage error.
        return error.exitCode === 0 ? 0 : fail(`error: missing command (see ${commandPath(command)} --help)`, 2);
      }
      return fail(`${error.message} (see ${commandPath(command)} --help)`, 2);
    }
    if (thrown instanceof CliError) return fail(thrown.message, thrown.exitCode);
    if (thrown instanceof ConfigError) return fail(`configuration: ${thrown.message}`, 1);
    return fail(thrown instanceof Error ? thrown.message : String(thrown), 1);
  }
}
