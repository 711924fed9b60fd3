import { validateOriginToRegister } from '../cors/origin.js';
import { CliError, emit, table } from './output.js';
import { countryArg, existingAccount, withStore } from './store.js';

/** `origin add` / `origin remove` / `origin list` (OPERATIONS "Commands"). */

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
