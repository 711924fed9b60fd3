import { createAccountsRepository } from './accounts.js';
import { openDatabase, ping, type DatabaseOptions, type Dialect } from './database.js';
import { createKeysRepository } from './keys.js';
import { createListingsRepository } from './listings.js';
import { migrateToLatest } from './migrate.js';
import { createOriginsRepository } from './origins.js';

export type { Account } from './accounts.js';
export type { ApiKeyRecord } from './keys.js';
export type { ListingRow, Visibility } from './listings.js';
export type { AllowedOrigin } from './origins.js';
export type { AccountKind } from './schema.js';
export type { Dialect } from './database.js';

/**
 * The storage capability: one query layer (Kysely) over SQLite or PostgreSQL, as repositories of
 * named queries. Nothing outside this folder builds SQL.
 */
export function openStore(url: string, options: DatabaseOptions = {}) {
  const { db, dialect, dataVersion } = openDatabase(url, options);
  return {
    dialect: dialect as Dialect,
    accounts: createAccountsRepository(db),
    listings: createListingsRepository(db),
    keys: createKeysRepository(db),
    origins: createOriginsRepository(db),
    dataVersion,
    migrate: () => migrateToLatest(db),
    ping: () => ping(db),
    close: () => db.destroy(),
    /** For tests and tools that need raw access (e.g. to simulate a fault); not for request code. */
    db,
  };
}

export type Store = ReturnType<typeof openStore>;
