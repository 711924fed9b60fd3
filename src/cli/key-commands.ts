import { issueKey, KeyLimitError } from '../auth/keys.js';
import { recordCliChange } from './audit.js';
import { CliError, emit, table } from './output.js';
import { countryArg, existingAccount, uuidArg, withStore } from './store.js';

/**
 * `key create` / `key list` / `key revoke` / `key set-limit` (OPERATIONS "Commands"). Changes are
 * recorded in the audit log as the CLI operator, as the dashboard records its members' (D20: never
 * the full key there).
 */

export async function keyCreate(opts: { account: string; country: string; label: string; json: boolean }): Promise<void> {
  const country = countryArg(opts.country);
  const label = opts.label.trim();
  if (label === '') throw new CliError('--label is empty');
  if (label.length > 200) throw new CliError('--label is longer than 200 characters');
  const created = await withStore(async (store, config) => {
    const accountId = await existingAccount(store, opts.account);
    const now = new Date();
    const created = await issueKey(store, { accountId, country, label, now, maxActive: config.maxKeysPerAccountCountry }).catch((error: unknown) => {
      if (!(error instanceof KeyLimitError)) throw error;
      throw new CliError(`account ${accountId} has ${error.max} active keys in ${country} already, the most MAX_KEYS_PER_ACCOUNT_COUNTRY allows; `
        + 'revoke one it no longer uses ("listings-api key revoke KEY_ID"), or raise MAX_KEYS_PER_ACCOUNT_COUNTRY');
    });
    await recordCliChange(store, { account_id: accountId, at: now.toISOString(), action: 'key.created' }, (await store.keys.get(created.id))!);
    return created;
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
    const at = new Date().toISOString();
    const before = await store.keys.get(id);
    if (before === undefined || !(await store.keys.revoke(id, at))) throw new CliError(`no key with id ${id}`);
    const after = (await store.keys.get(id))!;
    // Revoking a revoked key changes nothing (the first time is kept), so it is not logged again.
    if (before.revoked_at === null && after.revoked_at === at) {
      await recordCliChange(store, { account_id: after.account_id, at, action: 'key.revoked' }, after);
    }
    return after;
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
    const before = await store.keys.get(id);
    if (before === undefined || !(await store.keys.setRateLimit(id, limit))) throw new CliError(`no key with id ${id}`);
    // Setting the limit a key has already is not a change, and is not logged.
    if (before.rate_limit_per_minute !== limit) {
      const after = (await store.keys.get(id))!;
      await recordCliChange(store, { account_id: after.account_id, at: new Date().toISOString(), action: 'key.limit_changed', rate_limit_per_minute: limit }, after);
    }
  });
  emit(opts.json, { id, rate_limit_per_minute: limit }, () => `Key ${id} may now make ${limit} requests per minute.`);
}
