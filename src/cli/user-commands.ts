import { dashboardUrl } from '../config/urls.js';
import { addMember, setMemberPassword } from '../dashboard/members.js';
import { generatePassword, isEmail, normalizeEmail, passwordProblem } from '../dashboard/passwords.js';
import { cliContext } from './context.js';
import { CliError, emit, table } from './output.js';
import { existingAccount, withStore } from './store.js';

/**
 * `user create` / `user list` / `user set-password`: the dashboard's members (Settings > Developer),
 * in the style of the other commands (--json, exit 0/1/2, one-line errors). A password comes from
 * stdin (its first line) when stdin is not a terminal and not empty; otherwise, or with
 * --generate-password, a random one is generated and printed once. Only its scrypt hash is stored.
 * The commands are declared with the others in program.ts.
 */

function emailArg(value: string): string {
  const email = normalizeEmail(value);
  if (!isEmail(email)) throw new CliError(`--email "${value}" is not an email address`);
  return email;
}

/** The first line of stdin, or '' when stdin is a terminal or empty. */
async function readStdinLine(): Promise<string> {
  const { stdin } = cliContext();
  if (stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/, 1)[0] ?? '';
}

/** The password to set: from stdin if given there, else generated (then `generated` is true). */
async function choosePassword(generate: boolean | undefined): Promise<{ password: string; generated: boolean }> {
  const given = generate ? '' : await readStdinLine();
  if (given === '') return { password: generatePassword(), generated: true };
  const problem = passwordProblem(given);
  // Never echo the password itself.
  if (problem !== undefined) throw new CliError(`password from stdin not accepted: ${problem}`);
  return { password: given, generated: false };
}

export async function userCreate(opts: { account: string; email: string; generatePassword?: boolean; json: boolean }): Promise<void> {
  const email = emailArg(opts.email);
  const { password, generated } = await choosePassword(opts.generatePassword);
  const { id, accountId, url } = await withStore(async (store, config) => {
    const accountId = await existingAccount(store, opts.account);
    if ((await store.users.findByEmail(email)) !== undefined) throw new CliError(`a member with email ${email} exists already`);
    const { id } = await addMember(store, { accountId, email, password, now: new Date() });
    return { id, accountId, url: dashboardUrl(config) };
  });
  emit(opts.json, { id, account_id: accountId, email, generated_password: generated ? password : null }, () => [
    `Added ${email} (member ${id}) to account ${accountId}.`,
    generated ? `Password (shown once, only its hash is kept): ${password}` : 'Password: the one given on stdin.',
    url === undefined ? 'They sign in at the dashboard (DASHBOARD_PORT).' : `They sign in at ${url}`,
  ].join('\n'));
}

export async function userList(opts: { account: string; json: boolean }): Promise<void> {
  const users = await withStore(async (store) => store.users.listForAccount(await existingAccount(store, opts.account)));
  const rows = users.map((u) => ({ id: u.id, email: u.email, created_at: u.created_at, last_sign_in_at: u.last_sign_in_at }));
  emit(opts.json, { users: rows }, () =>
    rows.length === 0
      ? 'No members yet; add one with: listings-api user create --account ID --email EMAIL'
      : table(['EMAIL', 'ID', 'CREATED', 'LAST SIGN-IN'], rows.map((u) => [u.email, u.id, u.created_at, u.last_sign_in_at ?? 'never'])));
}

export async function userSetPassword(opts: { email: string; generatePassword?: boolean; json: boolean }): Promise<void> {
  const email = emailArg(opts.email);
  const { password, generated } = await choosePassword(opts.generatePassword);
  const id = await withStore(async (store) => {
    const user = await store.users.findByEmail(email);
    if (user === undefined) throw new CliError(`no member with email ${email}`);
    await setMemberPassword(store, user.id, password);
    return user.id;
  });
  emit(opts.json, { id, email, generated_password: generated ? password : null }, () => [
    `Set a new password for ${email}; their sessions have ended.`,
    generated ? `Password (shown once, only its hash is kept): ${password}` : 'Password: the one given on stdin.',
  ].join('\n'));
}
