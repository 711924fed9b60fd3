import { unauthorized, type KnownKey } from '../core/api-error.js';
import type { Country } from '../core/countries.js';
import { tenantOf, type Tenant } from '../core/tenant.js';
import type { ApiKeyRecord } from '../storage/index.js';
import { displayPrefix, hashKey, parseKey } from './key-format.js';

/**
 * What the rest of the request path knows about the caller once the key is trusted. Made once per
 * key record (see `trusted`) and shared by the requests that present the key: never changed.
 */
export interface AuthenticatedKey {
  readonly id: string;
  readonly accountId: string;
  readonly country: Country;
  /** What the key sees (D1): its account's listings in its country. */
  readonly tenant: Tenant;
  /** Display prefix: the only form of the key that may be logged (D20). */
  readonly prefix: string;
  /** Per-key limit, or null for the deployment default (D14). */
  readonly rateLimitPerMinute: number | null;
  /** Until when (clock ms) the record it was made from may be used without looking it up again (KeyLookup.keyValidUntil). */
  readonly validUntil: number;
}

export type FindKeyByHash = (keyHash: string) => Promise<ApiKeyRecord | undefined> | ApiKeyRecord | undefined;

/** Where keys are found (the read model: its key cache, then the database). */
export interface KeyLookup {
  /** By the SHA-256 of a presented key; synchronous when cached. */
  findKeyByHash: FindKeyByHash;
  /**
   * Until when (clock ms) a record `findKeyByHash` gave may be used again without asking for it
   * again (connection-keys.ts): before READ_CACHE_TTL_MS from when it was read from the database
   * has passed (the read model says while the keys cache holds it fresh).
   */
  keyValidUntil(record: ApiKeyRecord): number;
}

const BEARER = /^Bearer +(\S+) *$/i;

/**
 * D5's 401 stage (spec 5, rules 1, 7; D3; D4). Cheap checks first: header shape, then key format
 * and checksum (no look-up), then the hash look-up, then revocation and country. Messages help the
 * caller fix the request but never echo the key (D20). Synchronous when the look-up is (a cached
 * key), so the request path costs no promise on its hot path.
 */
export function authenticate(
  authorization: string | readonly string[] | undefined,
  hostCountry: Country,
  keys: KeyLookup,
): AuthenticatedKey | Promise<AuthenticatedKey> {
  const token = bearerToken(authorization);
  const found = keys.findKeyByHash(hashKey(token));
  return found instanceof Promise ? found.then((record) => trusted(record, hostCountry, keys)) : trusted(found, hostCountry, keys);
}

/** The well-formed key of an Authorization header (format and checksum checked, no look-up), or 401. */
export function bearerToken(authorization: string | readonly string[] | undefined): string {
  if (typeof authorization !== 'string' && authorization !== undefined) {
    // Repeated: a proxy might pick another one than we would (issue 8, item 8).
    if (authorization.length > 1) throw unauthorized('The Authorization header was sent more than once; send one "Authorization: Bearer <API_KEY>".', 'repeated_authorization');
    authorization = authorization[0];
  }
  if (authorization === undefined || authorization === '') {
    throw unauthorized('Missing API key: send the header "Authorization: Bearer <API_KEY>".', 'missing_key');
  }
  const token = BEARER.exec(authorization)?.[1];
  if (token === undefined) {
    throw unauthorized('Malformed Authorization header: expected "Bearer <API_KEY>".', 'malformed_authorization');
  }
  if (parseKey(token) === undefined) {
    throw unauthorized('Malformed API key: expected <cc>_live_<secret> as issued in the dashboard; check that it was copied whole.', 'malformed_key');
  }
  return token;
}

/** The display prefix (D2, D20) of the well-formed key an Authorization header carries, for a log line; else undefined. */
export function sentKeyPrefix(authorization: string | readonly string[] | undefined): string | undefined {
  const token = typeof authorization === 'string' ? BEARER.exec(authorization)?.[1] : undefined;
  return token !== undefined && parseKey(token) !== undefined ? displayPrefix(token) : undefined;
}

/**
 * The AuthenticatedKey of each key record. A cached record is the same object for every request
 * until the key changes (a change is a new record, under a new auth version: D4), so what is
 * derived from it is derived once. Weak: a record dropped from the cache takes its entry with it.
 */
const authenticatedKeys = new WeakMap<ApiKeyRecord, AuthenticatedKey>();

/** The key record, if it exists, is not revoked and belongs to the host's country (D3, D4); else 401. */
function trusted(record: ApiKeyRecord | undefined, hostCountry: Country, keys: KeyLookup): AuthenticatedKey {
  if (record === undefined || record.revoked_at !== null) {
    // The dashboard holds what explains it: the account's keys, and (for a revoked key of the
    // account) the request itself under Failed requests (issue 12). One message for both: the
    // caller is not told whether a key exists; the reason and the key are kept for the dashboard
    // and the log line only.
    throw unauthorized(
      'Unknown or revoked API key. Compare it with your keys in the dashboard (Settings > Developer); requests made with a revoked key are listed there under Failed requests.',
      record === undefined ? 'unknown_key' : 'revoked_key',
      record === undefined ? null : knownKey(record),
    );
  }
  if (record.country !== hostCountry) {
    // D3: a key works only against its own country's host.
    throw unauthorized(
      `This API key is for country "${record.country}" and cannot be used on the "${hostCountry}" host. Call the "${record.country}" host with it, or create a key for "${hostCountry}" in the dashboard (Settings > Developer).`,
      'wrong_country',
      knownKey(record),
    );
  }
  let key = authenticatedKeys.get(record);
  if (key === undefined) {
    const country = record.country as Country;
    key = {
      id: record.id,
      accountId: record.account_id,
      country,
      tenant: tenantOf(record.account_id, country),
      prefix: record.prefix,
      rateLimitPerMinute: record.rate_limit_per_minute,
      validUntil: keys.keyValidUntil(record),
    };
    authenticatedKeys.set(record, key);
  }
  return key;
}

/** A refused key as its request's log line names it (id, account, display prefix: D20). */
function knownKey(record: ApiKeyRecord): KnownKey {
  return { id: record.id, accountId: record.account_id, prefix: record.prefix };
}
