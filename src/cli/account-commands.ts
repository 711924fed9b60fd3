import { randomUUID } from 'node:crypto';
import type { AccountKind } from '../storage/index.js';
import { CliError, emit, table } from './output.js';
import { uuidArg, withStore } from './store.js';

/** `account create` / `account list`. */

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

export async function accountList(opts: { json: boolean }): Promise<void> {
  const accounts = await withStore((store) => store.accounts.list());
  const rows = accounts.map((a) => ({ id: a.id, name: a.name, kind: a.kind, created_at: a.created_at }));
  emit(opts.json, { accounts: rows }, () =>
    rows.length === 0
      ? 'No accounts yet; create one with: listings-api account create --name NAME'
      : table(['ID', 'NAME', 'KIND', 'CREATED'], rows.map((a) => [a.id, a.name, a.kind, a.created_at])));
}
