import { validateOriginToRegister } from '../cors/origin.js';
import { recordCliChange } from './audit.js';
import { CliError, emit, table } from './output.js';
import { countryArg, existingAccount, withStore } from './store.js';

/**
 * `origin add` / `origin remove` / `origin list` (OPERATIONS "Commands"). Additions and removals
 * are recorded in the audit log as the CLI operator; re-adding a registered origin changes nothing
 * and is not.
 */

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
    const at = new Date().toISOString();
    const added = await store.origins.add({ account_id: accountId, country, origin: normalized, created_at: at });
    if (added) await recordCliChange(store, { account_id: accountId, at, action: 'origin.added', country, origin: normalized });
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
    await recordCliChange(store, { account_id: accountId, at: new Date().toISOString(), action: 'origin.removed', country, origin: normalized });
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
