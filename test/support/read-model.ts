import { randomUUID } from 'node:crypto';
import { importListings } from '../../src/import/import.js';
import { loadConfig } from '../../src/config/index.js';
import { createReadModel, type ListingReads } from '../../src/readmodel/index.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { createMigratedTestDatabase } from './database.js';
import { listingLine, ndjsonStream, type TestClock } from './server.js';

/** A real store of the suite's engine (migrated, following changes) and the read model over it. */
export interface ReadModelOnStore {
  store: Store;
  reads: ListingReads;
  /** A new organisation with `count` fresh listings (sg), imported a minute before the clock's now. */
  tenantWith(count: number): Promise<{ owner: string; lines: Array<Record<string, unknown>> }>;
  close(): Promise<void>;
}

/** For the suites that test the read model itself, without an HTTP server in front. */
const MIB = 1024 * 1024;

export async function openReadModelOnStore(clock: TestClock, cacheTtlMs: number): Promise<ReadModelOnStore> {
  const database = await createMigratedTestDatabase();
  const store = openStore(database.url, { listenForChanges: true });
  await store.migrate();
  await store.start();
  const config = loadConfig({});
  return {
    store,
    // The byte bounds of a default configuration.
    reads: createReadModel(store, clock.now, { cacheTtlMs, maxBodyBytes: config.readCacheMaxMb * MIB, maxIndexBytes: config.readModelMaxMb * MIB }),
    async tenantWith(count) {
      const owner = randomUUID();
      await store.accounts.create({ id: owner, name: owner, kind: 'organisation', created_at: '2026-01-01T00:00:00.000Z' });
      const lines = Array.from({ length: count }, (_, i) => listingLine(owner, { title: `Listing ${i}` }));
      await importListings(store, ndjsonStream(lines), new Date(clock.now() - 60_000));
      return { owner, lines };
    },
    async close() {
      await store.close();
      await database.drop();
    },
  };
}
