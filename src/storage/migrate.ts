import { Migrator, type Kysely, type Migration, type MigrationProvider } from '#kysely';
import * as initial from './migrations/001_initial.js';
import * as dashboard from './migrations/002_dashboard.js';
import * as dashboardForms from './migrations/003_dashboard_forms.js';
import * as changeTracking from './migrations/004_change_tracking.js';
import * as auditRateLimit from './migrations/005_audit_rate_limit.js';
import * as changeFeed from './migrations/006_change_feed.js';
import * as usage from './migrations/007_usage.js';
import * as coveringOrderIndex from './migrations/008_covering_order_index.js';
import * as listingBody from './migrations/009_listing_body.js';
import * as failedRequestReason from './migrations/010_failed_request_reason.js';
import * as webhooks from './migrations/011_webhooks.js';
import * as priceBasis from './migrations/012_price_basis.js';
import * as failedRequestBrowser from './migrations/013_failed_request_browser.js';
import * as webhookReplayFilters from './migrations/014_webhook_replay_filters.js';
import * as locationSearch from './migrations/015_location_search.js';
import type { Database } from './schema.js';

/**
 * Migrations are listed here (not read from a folder) so that the compiled package carries them
 * and their order is explicit. Append; never edit one that has shipped.
 */
const MIGRATIONS: Record<string, Migration> = {
  '001_initial': initial,
  '002_dashboard': dashboard,
  '003_dashboard_forms': dashboardForms,
  '004_change_tracking': changeTracking,
  '005_audit_rate_limit': auditRateLimit,
  '006_change_feed': changeFeed,
  '007_usage': usage,
  '008_covering_order_index': coveringOrderIndex,
  '009_listing_body': listingBody,
  '010_failed_request_reason': failedRequestReason,
  '011_webhooks': webhooks,
  '012_price_basis': priceBasis,
  '013_failed_request_browser': failedRequestBrowser,
  '014_webhook_replay_filters': webhookReplayFilters,
  '015_location_search': locationSearch,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/** Applies pending migrations; returns the names applied (empty when up to date). Idempotent. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
