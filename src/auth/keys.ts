import { randomUUID } from 'node:crypto';
import type { Country } from '../core/countries.js';
import type { ApiKeyRecord, AuditEntry, Store } from '../storage/index.js';
import { displayPrefix, generateKey, hashKey, keyDisplay, lastFour } from './key-format.js';

/**
 * The account has `max` active keys in the country already (MAX_KEYS_PER_ACCOUNT_COUNTRY, issue
 * 40 item 9): no key was created.
 */
export class KeyLimitError extends Error {
  constructor(readonly country: Country, readonly max: number) {
    super(`the account has ${max} active keys in ${country} already, the most allowed (MAX_KEYS_PER_ACCOUNT_COUNTRY); revoke one it no longer uses first`);
    this.name = 'KeyLimitError';
  }
}

/**
 * Issues a key for an account and country. Returns the full key: the caller shows it once (spec 5
 * rule 4); only its hash, display prefix and last four are stored (D2). With `maxActive` (the
 * dashboard's and the CLI's `key create`: MAX_KEYS_PER_ACCOUNT_COUNTRY), an account that has that
 * many active keys in the country gets a KeyLimitError and no key; the check and the insert are
 * atomic (storage/keys.ts). The demo's own key is issued without it: each start replaces it.
 */
export async function issueKey(
  store: Store,
  input: { accountId: string; country: Country; label: string; now: Date; maxActive?: number },
): Promise<{ id: string; key: string }> {
  const key = generateKey(input.country);
  const id = randomUUID();
  const created = await store.keys.create({
    id,
    account_id: input.accountId,
    country: input.country,
    label: input.label,
    key_hash: hashKey(key),
    prefix: displayPrefix(key),
    last4: lastFour(key),
    rate_limit_per_minute: null,
    created_at: input.now.toISOString(),
    last_used_at: null,
    revoked_at: null,
  }, input.maxActive);
  if (!created) throw new KeyLimitError(input.country, input.maxActive!);
  return { id, key };
}

/**
 * How an audit entry names the key a change was about (D20: its display prefix and last four,
 * never the key), and the other optional fields' defaults; the caller's entry overrides them.
 */
export function auditedKey(key: ApiKeyRecord | undefined): Pick<AuditEntry, 'key_id' | 'key_display' | 'key_label' | 'previous_label' | 'country' | 'origin'> {
  return {
    key_id: key?.id ?? null,
    key_display: key === undefined ? null : keyDisplay(key),
    key_label: key?.label ?? null,
    previous_label: null,
    country: key?.country ?? null,
    origin: null,
  };
}
