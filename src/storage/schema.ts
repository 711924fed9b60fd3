import type { Generated } from '#kysely';
import type { StoredListingFields } from '../listings/fields.js';

/**
 * The tables, as Kysely sees them. One schema for SQLite and PostgreSQL, kept portable on
 * purpose: timestamps are ISO 8601 UTC text with milliseconds (`Date#toISOString`, so text order
 * is time order in both engines, D13), booleans are 0/1 integers, arrays are JSON text.
 */
export interface Database {
  accounts: AccountsTable;
  listings: ListingsTable;
  api_keys: ApiKeysTable;
  allowed_origins: AllowedOriginsTable;
  dashboard_users: DashboardUsersTable;
  dashboard_sessions: DashboardSessionsTable;
  dashboard_audit: DashboardAuditTable;
  dashboard_login_failures: DashboardLoginFailuresTable;
  dashboard_forms: DashboardFormsTable;
  listing_changes: ListingChangesTable;
  tenant_versions: TenantVersionsTable;
  tenant_listing_counts: TenantListingCountsTable;
  store_versions: StoreVersionsTable;
  store_secrets: StoreSecretsTable;
  api_usage: ApiUsageTable;
  api_failed_requests: ApiFailedRequestsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_attempts: WebhookAttemptsTable;
  /** A temporary table of the connection that runs an import (see import/import.ts). */
  import_staging: ImportStagingTable;
}

export type AccountKind = 'organisation' | 'individual';

export interface AccountsTable {
  id: string;
  name: string;
  kind: AccountKind;
  created_at: string;
}

/**
 * A listing as stored: the fields of the listing object in their stored forms (declared once, in
 * listings/fields.ts), the owner and country (D1), and bookkeeping.
 */
export interface ListingsTable extends StoredListingFields {
  owner_account_id: string;
  country: string;
  /** When the listing's current state took effect: the time of its last change. */
  updated_at: string;
  /** The sequence of the write that last changed this listing (migration 004). */
  change_seq: number;
  /** The listing object's JSON as the API shows it, derived from the columns above when written (listings/body.ts, migration 009). */
  body: string;
  /** D26: its distinct words in compared form, derived like `body` (listings/search-words.ts, migration 015). */
  search_words: string;
}

/** One listing write as it touched one tenant (migration 004; see changes.ts). */
export interface ListingChangesTable {
  seq: Generated<number>;
  owner_account_id: string;
  country: string;
  listing_id: string;
  at: string;
}

/** Per tenant: the sequence of its last change (its version) and the highest sequence pruned. */
export interface TenantVersionsTable {
  owner_account_id: string;
  country: string;
  version: number;
  pruned_seq: number;
}

/** Each tenant's count of visible listings, kept by imports (storage/listing-counts.ts, migration 017). */
export interface TenantListingCountsTable {
  owner_account_id: string;
  country: string;
  version: number;
  counted_at: string;
  live: number;
}

/** Counters of non-listing changes: `auth` (keys and origins, D4). */
export interface StoreVersionsTable {
  name: string;
  version: number;
}

/** Secrets of the deployment, made by migrations (006: `feed_cursor`, the change feed's cursor key). */
export interface StoreSecretsTable {
  name: string;
  value: string;
}

/** A listing as an import line gives it, before the import is swapped in (import/import.ts). */
export interface ImportStagingTable extends Omit<ListingsTable, 'created_at' | 'updated_at' | 'change_seq' | 'body'> {
  /** The line of the file it came from, for error messages. */
  line: number;
  /** Null when the line did not give one: an update keeps the stored value, an insert takes the import time. */
  created_at: string | null;
  /** The listing's JSON up to its `created_at` value, which the swap appends (listings/body.ts). */
  body_head: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  country: string;
  label: string;
  /** SHA-256 of the full key, hex (D2). The key itself is never stored. */
  key_hash: string;
  /** Display prefix, e.g. `sg_live_AbCd` (D2, D20). */
  prefix: string;
  last4: string;
  /** Null: the deployment's default (`RATE_LIMIT_PER_MINUTE`). */
  rate_limit_per_minute: number | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface AllowedOriginsTable {
  account_id: string;
  country: string;
  /** Normalised origin (see cors/origin.ts): lowercase scheme and host, default port dropped. */
  origin: string;
  created_at: string;
}


/** A member of an account who signs in to the dashboard (migration 002). */
export interface DashboardUsersTable {
  id: string;
  account_id: string;
  /** Lowercased; unique across the deployment. */
  email: string;
  /** `scrypt$N$r$p$salt$hash` (see dashboard/passwords.ts); never the password. */
  password_hash: string;
  created_at: string;
  last_sign_in_at: string | null;
}

/** A dashboard session. Only the SHA-256 of the session id is stored: a copy of the table signs no one in. */
export interface DashboardSessionsTable {
  id_hash: string;
  user_id: string;
  created_at: string;
  last_seen_at: string;
  /** The earlier of the idle and the absolute expiry. */
  expires_at: string;
}

export type AuditAction =
  | 'key.created'
  | 'key.relabelled'
  | 'key.revoked'
  | 'key.limit_changed'
  | 'origin.added'
  | 'origin.removed'
  | 'webhook.added'
  | 'webhook.removed'
  | 'webhook.enabled'
  | 'webhook.secret_rotated'
  | 'webhook.replayed'
  | 'webhook.filters_changed';

/** Who did what to which key or origin, and when. Never a full key (D20). */
export interface DashboardAuditTable {
  id: string;
  account_id: string;
  at: string;
  actor_user_id: string | null;
  actor_email: string;
  action: AuditAction;
  key_id: string | null;
  /** `sg_live_AbCd...wxyz`: display prefix and last four only. */
  key_display: string | null;
  /** The key's label at the time (the new label for a relabel). */
  key_label: string | null;
  previous_label: string | null;
  country: string | null;
  origin: string | null;
  /** `key.limit_changed`: the new per-minute limit (migration 003); null for other actions. */
  rate_limit_per_minute: number | null;
  /** `webhook.*`: the endpoint's URL (migration 011); null for other actions. */
  webhook_url: string | null;
}

/** Failed sign-ins, for throttling across instances. */
export interface DashboardLoginFailuresTable {
  id: string;
  email: string;
  ip: string;
  at: string;
}

/**
 * A submitted single-use dashboard form (migration 003): the create-key form, so that sending it
 * again mints no second key. Rows are forgotten once the form would have expired anyway.
 */
export interface DashboardFormsTable {
  /** The random part of the form's token. Not a secret: it names a form and authorises nothing. */
  nonce: string;
  account_id: string;
  /** The member who submitted it. */
  user_id: string;
  /** The key it created; null while that is under way, or if it failed. */
  key_id: string | null;
  used_at: string;
}

/**
 * Requests of one key in one time bucket with one outcome (migration 007; src/usage). `span` is
 * the bucket's length in seconds (300 or 3600), `bucket_start` its UTC start as ISO text, `outcome`
 * `200`, `304` or an error code. Every instance adds to the same row.
 */
export interface ApiUsageTable {
  key_id: string;
  span: number;
  bucket_start: string;
  outcome: string;
  account_id: string;
  n: number;
}

/**
 * A failed request of an account's key (migration 007): the last 200 per account are kept. Only
 * the key's id: never the key, its hash or any header (D20); path and message are redacted.
 */
export interface ApiFailedRequestsTable {
  /** Time-ordered (UUIDv7), so rows of one millisecond keep their order. */
  id: string;
  account_id: string;
  key_id: string;
  at: string;
  status: number;
  code: string;
  method: string;
  /** Without the query string, keys redacted (D20). */
  path: string;
  /** The request's Origin header as sent (redacted, at most 200 characters), or null. */
  origin: string | null;
  request_id: string;
  /** The answer's message (it names the parameter of a 400). */
  message: string;
  /**
   * Why it failed (core/api-error.ts ERROR_REASONS), as the refusing step said then; null for a
   * row written before migration 010 or by a release without reasons.
   */
  reason: string | null;
  /** The client's address (Fastify's `request.ip`, redacted like the path); null before migration 010. */
  client_ip: string | null;
  /**
   * The request's Fetch Metadata (`Sec-Fetch-Site`, `-Mode`, `-Dest`) as `site mode dest`, `-`
   * for one not sent; '' when it sent none (not a browser); null before migration 013.
   */
  sec_fetch: string | null;
}

/** A webhook endpoint (D24, migration 011). Times are ISO text; `enabled` is 0 or 1. */
export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  country: string;
  url: string;
  /** `whsec_...`: stored so that it can sign; never logged or sent anywhere but to its owner. */
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  enabled: number;
  created_at: string;
  /** Where delivery has got to in the change history: a change-feed cursor (D22). */
  position: string;
  failing_since: string | null;
  next_attempt_at: string | null;
  message_id: string | null;
  /** When the message was made (its body's timestamp): the age of the oldest undelivered change. */
  message_at: string | null;
  message_type: string | null;
  message_body: string | null;
  message_ids: number | null;
  /** The position once the message is delivered. */
  message_end: string | null;
  /** Attempts made of the current message. */
  attempt: number;
  lease_owner: string | null;
  lease_until: string | null;
  /** A replay asked for: the position to go back to at the next message boundary (migration 014). */
  replay_from: string | null;
  /** While replaying: the position the endpoint had when the replay began; messages before it are replays. */
  replay_until: string | null;
  /** 1 when the kept message is a replay. */
  message_replay: number;
  /** Only this kind of change (`upserted` or `removed`); null: both. */
  only_change: WebhookChangeKind | null;
  /** Only listings of these usage types (a JSON array of names); null: all. */
  only_usage_types: string | null;
}

export type WebhookChangeKind = 'upserted' | 'removed';

/** One delivery attempt (D24), kept 7 days. */
export interface WebhookAttemptsTable {
  id: string;
  endpoint_id: string;
  at: string;
  message_id: string;
  message_type: string;
  ids: number;
  attempt: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
  /** 1 when the message sent was a replay (migration 014). */
  replay: number;
}
