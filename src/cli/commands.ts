import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { issueKey } from '../auth/keys.js';
import { loadConfig, type Config } from '../config/index.js';
import { canonicalUuid } from '../core/formats.js';
import { COUNTRY_CODES, hostForCountry, isCountry, type Country } from '../core/countries.js';
import { validateOriginToRegister } from '../cors/origin.js';
import { ensureDemo } from '../demo/demo-data.js';
import { importListings, ImportError } from '../listings/import.js';
import { openStore, type AccountKind, type Store } from '../storage/index.js';
import { CliError, emit, table } from './output.js';

/**
 * Opens the configured database, migrated, runs `fn`, and always closes it. On PostgreSQL the
 * command returns only once its changes have been broadcast to every running instance (D4).
 */
export async function withStore<T>(fn: (store: Store, config: Config) => Promise<T>, { migrate = true } = {}): Promise<T> {
  const config = loadConfig();
  const store = openStore(config.databaseUrl, { listenForChanges: true, poolSize: 2, statementTimeoutMs: config.databaseStatementTimeoutMs });
  try {
    if (migrate) await store.migrate();
    await store.start();
    const result = await fn(store, config);
    await store.broadcastSettled();
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

function countryArg(value: string): Country {
  const cc = value.toLowerCase();
  if (!isCountry(cc)) throw new CliError(`unknown country "${value}" (expected one of ${COUNTRY_CODES.join(', ')})`);
  return cc;
}

export async function existingAccount(store: Store, id: string): Promise<string> {
  const accountId = uuidArg('account id', id);
  if ((await store.accounts.get(accountId)) === undefined) throw new CliError(`no account with id ${accountId}`);
  return accountId;
}

export async function accountCreate(opts: { name: string; kind: string; id?: string; json: boolean }): Promise<void> {
  const name = opts.name.trim();
  if (name === '') throw new CliError('--name is empty');
  if (opts.kind !== 'organisation' && opts.kind !== 'individual') {
    throw new CliError(`--kind must be organisation or individual, got "${opts.kind}"`);
  }
  const id = opts.id === undefined ? randomUUID() : uuidArg('--id', opts.id);
  await withStore(async (store) => {
    if ((await store.accounts.get(id)) !== undefined) throw new CliError(`an account with id ${id} exists already`);
    await store.accounts.create({ id, name, kind: opts.kind as AccountKind, created_at: new Date().toISOString() });
  });
  emit(opts.json, { id }, () => id);
}

export async function keyCreate(opts: { account: string; country: string; label: string; json: boolean }): Promise<void> {
  const country = countryArg(opts.country);
  const label = opts.label.trim();
  if (label === '') throw new CliError('--label is empty');
  if (label.length > 200) throw new CliError('--label is longer than 200 characters');
  const created = await withStore(async (store) => {
    const accountId = await existingAccount(store, opts.account);
    return issueKey(store, { accountId, country, label, now: new Date() });
  });
  emit(opts.json, created, () => `${created.key}\n\nKey id ${created.id}. This is the only time the key is shown: store it now (only its hash is kept).`);
}

export async function keyList(opts: { account: string; json: boolean }): Promise<void> {
  const keys = await withStore(async (store) => store.keys.listForAccount(await existingAccount(store, opts.account)));
  const rows = keys.map((k) => ({
    id: k.id,
    label: k.label,
    country: k.country,
    prefix: k.prefix,
    last4: k.last4,
    created_at: k.created_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
    rate_limit_per_minute: k.rate_limit_per_minute,
  }));
  emit(opts.json, { keys: rows }, () =>
    rows.length === 0
      ? 'No keys yet; create one with: listings-api key create --account ID --country CC --label TEXT'
      : table(
          ['ID', 'LABEL', 'COUNTRY', 'KEY', 'CREATED', 'LAST USED', 'STATUS', 'LIMIT/MIN'],
          rows.map((k) => [k.id, k.label, k.country, `${k.prefix}...${k.last4}`, k.created_at, k.last_used_at ?? 'never',
            k.revoked_at === null ? 'active' : `revoked ${k.revoked_at}`, k.rate_limit_per_minute === null ? 'default' : String(k.rate_limit_per_minute)]),
        ),
  );
}

export async function keyRevoke(keyId: string, opts: { json: boolean }): Promise<void> {
  const id = uuidArg('key id', keyId);
  const key = await withStore(async (store) => {
    if (!(await store.keys.revoke(id, new Date().toISOString()))) throw new CliError(`no key with id ${id}`);
    return (await store.keys.get(id))!;
  });
  emit(opts.json, { id, revoked_at: key.revoked_at }, () => `Revoked key ${key.prefix}...${key.last4} (${id}) at ${key.revoked_at}.`);
}

export async function keySetLimit(keyId: string, perMinute: string, opts: { json: boolean }): Promise<void> {
  const id = uuidArg('key id', keyId);
  if (!/^[0-9]+$/.test(perMinute) || Number(perMinute) < 1 || Number(perMinute) > 1_000_000_000) {
    throw new CliError(`PER_MINUTE must be a whole number from 1 to 1000000000, got "${perMinute}"`);
  }
  const limit = Number(perMinute);
  await withStore(async (store) => {
    if (!(await store.keys.setRateLimit(id, limit))) throw new CliError(`no key with id ${id}`);
  });
  emit(opts.json, { id, rate_limit_per_minute: limit }, () => `Key ${id} may now make ${limit} requests per minute.`);
}

function originArg(value: string): string {
  const checked = validateOriginToRegister(value);
  if ('error' in checked) throw new CliError(`malformed origin: ${checked.error}`);
  return checked.origin;
}

export async function originAdd(origin: string, opts: { account: string; country: string; json: boolean }): Promise<void> {
  const country = countryArg(opts.country);
  const normalized = originArg(origin);
  const { accountId, added } = await withStore(async (store) => {
    const accountId = await existingAccount(store, opts.account);
    const added = await store.origins.add({ account_id: accountId, country, origin: normalized, created_at: new Date().toISOString() });
    return { accountId, added };
  });
  emit(opts.json, { account_id: accountId, country, origin: normalized, added }, () =>
    added ? `Allowed ${normalized} for ${country}.` : `${normalized} was already allowed for ${country}.`);
}

export async function originRemove(origin: string, opts: { account: string; country: string; json: boolean }): Promise<void> {
  const country = countryArg(opts.country);
  const normalized = originArg(origin);
  const accountId = await withStore(async (store) => {
    const accountId = await existingAccount(store, opts.account);
    if (!(await store.origins.remove(accountId, country, normalized))) {
      throw new CliError(`origin ${normalized} is not registered for account ${accountId} in ${country}`);
    }
    return accountId;
  });
  emit(opts.json, { account_id: accountId, country, origin: normalized, removed: true }, () => `Removed ${normalized} for ${country}.`);
}

export async function originList(opts: { account: string; json: boolean }): Promise<void> {
  const origins = await withStore(async (store) => store.origins.listForAccount(await existingAccount(store, opts.account)));
  const rows = origins.map((o) => ({ country: o.country, origin: o.origin, created_at: o.created_at }));
  emit(opts.json, { origins: rows }, () =>
    rows.length === 0
      ? 'No browser origins registered; server-to-server calls need none. Add one with: listings-api origin add --account ID --country CC ORIGIN'
      : table(['COUNTRY', 'ORIGIN', 'ADDED'], rows.map((o) => [o.country, o.origin, o.created_at])));
}

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

export async function migrateCommand(opts: { json: boolean }): Promise<void> {
  // Not migrated by withStore first, so that what this run applied is reported.
  const applied = await withStore((store) => store.migrate(), { migrate: false });
  emit(opts.json, { applied }, () => (applied.length === 0 ? 'Schema is up to date.' : `Applied: ${applied.join(', ')}`));
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
      ...(result.created ? [] : result.addedOrigins.map((o) => `Allowed browser origin ${o.origin} for ${o.country}.`)),
      `New sg key (shown once): ${result.key}`,
      ...(result.revokedKeyIds.length === 0 ? [] : [`Revoked the earlier demo key${result.revokedKeyIds.length === 1 ? '' : 's'}: ${result.revokedKeyIds.join(', ')}`]),
      `Try it (with the server running):\n  ${curl}`,
    ].join('\n'));
}
