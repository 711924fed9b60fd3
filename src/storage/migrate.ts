import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from '#kysely';
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
import { webhooksOwnFile } from './migrations/016_webhooks_own_file.js';
import * as tenantListingCounts from './migrations/017_tenant_listing_counts.js';
import * as deliveryState from './migrations/webhooks-file/001_delivery_state.js';
import type { Database } from './schema.js';

/**
 * Migrations are listed here (not read from a folder) so that the compiled package carries them
 * and their order is explicit. Append; never edit one that has shipped.
 */
const migrations = (webhooksFile: Kysely<Database> | undefined): Record<string, Migration> => ({
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
  '016_webhooks_own_file': webhooksOwnFile(webhooksFile),
  '017_tenant_listing_counts': tenantListingCounts,
});

/** The migrations of the webhook delivery state's own SQLite file (storage/database.ts webhooksSqliteFile), in their own record there. */
const WEBHOOKS_FILE_MIGRATIONS: Record<string, Migration> = {
  '001_delivery_state': deliveryState,
};

/**
 * The main database's migrator; on SQLite `webhooks` is the webhook delivery state's own file,
 * which 016 moves the main file's webhook rows to (its own migrations applied first).
 */
export function mainMigrator(db: Kysely<Database>, webhooks?: Kysely<Database>): Migrator {
  const all = migrations(webhooks);
  return new Migrator({ db, provider: { getMigrations: async () => all } satisfies MigrationProvider });
}

export function webhooksFileMigrator(webhooks: Kysely<Database>): Migrator {
  return new Migrator({ db: webhooks, provider: { getMigrations: async () => WEBHOOKS_FILE_MIGRATIONS } });
}

/**
 * Applies pending migrations (on SQLite, the webhooks file's first); returns the names applied in
 * the main database (empty when up to date). Idempotent.
 */
export async function migrateToLatest(db: Kysely<Database>, webhooks?: Kysely<Database>): Promise<string[]> {
  if (webhooks !== undefined) await run(webhooksFileMigrator(webhooks));
  return run(mainMigrator(db, webhooks));
}

async function run(migrator: Migrator): Promise<string[]> {
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * SQLite: the main file says its webhook rows moved to the webhooks file (016 applied), but that
 * file has no tables (it was lost, or not restored with the main one, and opening it made a new,
 * empty one). Starting on it would forget every endpoint without a word.
 */
export async function missingWebhooksFile(db: Kysely<Database>, webhooks: Kysely<Database>): Promise<boolean> {
  const tableIn = async (k: Kysely<Database>, name: string) =>
    (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name = ${name}`.execute(k)).rows.length > 0;
  if (await tableIn(webhooks, 'webhook_endpoints')) return false;
  if (!(await tableIn(db, 'kysely_migration'))) return false;
  const { rows } = await sql<{ name: string }>`select name from kysely_migration where name = '016_webhooks_own_file'`.execute(db);
  return rows.length > 0;
}
