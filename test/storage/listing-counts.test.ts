import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { sql } from '#kysely';
import { importListings } from '../../src/import/import.js';
import { openStore, type Store } from '../../src/storage/index.js';
import { keptTotal } from '../../src/storage/listing-counts.js';
import * as countsMigration from '../../src/storage/migrations/017_tenant_listing_counts.js';
import { createMigratedTestDatabase, TEST_STORE, type TestDatabase } from '../support/database.js';
import { atEnd } from '../support/world.js';
import { prng } from '../support/random.js';
import { listingLine, ndjsonStream } from '../support/server.js';

/**
 * Issue 44 item 2: each tenant's visible count, kept by every import's swap
 * (storage/listing-counts.ts), so that a cold page's total is a seek and the listings expired
 * since. Model-based: random imports (new listings, changes of status and expiry, moves between
 * tenants, identical lines) at a moving clock, and after each one the kept total of every tenant,
 * read at moments before, at and after the import, equals the tenant counted whole (the oracle:
 * D10 in SQL). A kept count of another version (a write of an older release) is never taken, and
 * the next import keeps it again.
 */
const START = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;

describe(`kept listing counts on ${TEST_STORE}`, () => {
  let database: TestDatabase;
  let store: Store;
  const owners = [randomUUID(), randomUUID()];
  const tenants = owners.flatMap((ownerAccountId) => ['sg', 'my'].map((country) => ({ ownerAccountId, country })));

  /** Each test's own world (issue 42): a store on a fresh, migrated database, and what the tests read in it. */
  async function world(t: TestContext): Promise<void> {
    database = await createMigratedTestDatabase();
    atEnd(t, () => database.drop());
    store = openStore(database.url);
    atEnd(t, () => store.close());
    await store.migrate();
    for (const id of owners) await store.accounts.create({ id, name: 'Org', kind: 'organisation', created_at: new Date(START).toISOString() });
  }

  const iso = (ms: number) => new Date(ms).toISOString();
  const versionOf = async (tenant: { ownerAccountId: string; country: string }) => Number((await store.db.selectFrom('tenant_versions').select('version')
    .where('owner_account_id', '=', tenant.ownerAccountId).where('country', '=', tenant.country).executeTakeFirst())?.version ?? 0);
  /** D10 counted whole: the oracle. */
  const counted = async (tenant: { ownerAccountId: string; country: string }, now: string) => Number((await sql<{ n: number | string }>`select count(*) as n from listings
    where owner_account_id = ${tenant.ownerAccountId} and country = ${tenant.country} and status = 'active' and (expiry_date is null or expiry_date > ${now})`.execute(store.db)).rows[0]!.n);

  it('equals the tenant counted whole after random imports, at any moment near them', async (t) => {
    await world(t);
    const rand = prng(4402);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    const lines = new Map<string, Record<string, unknown>>();
    let clock = START;
    for (let step = 0; step < 40; step++) {
      clock += Math.floor(rand() * 10) * MINUTE;
      const batch = new Map<string, Record<string, unknown>>();
      for (let i = 0, n = 1 + Math.floor(rand() * 12); i < n; i++) {
        const existing = lines.size > 0 && rand() < 0.6 ? pick([...lines.values()]) : undefined;
        const tenant = pick(tenants);
        const line = existing === undefined ? listingLine(tenant.ownerAccountId, { country: tenant.country }) : { ...existing };
        const change = rand();
        if (change < 0.25) line.status = pick(['active', 'active', 'leased', 'draft']);
        else if (change < 0.55) line.expiry_date = pick([null, iso(clock - 5 * MINUTE), iso(clock + Math.floor(rand() * 30) * MINUTE), iso(clock + MINUTE)]);
        else if (change < 0.7) Object.assign(line, { owner_account_id: tenant.ownerAccountId, country: tenant.country });
        // else: the same line again, or a new one as it is.
        batch.set(line.id as string, line);
      }
      await importListings(store, ndjsonStream([...batch.values()]), new Date(clock));
      for (const [id, line] of batch) lines.set(id, line);
      for (const tenant of tenants) {
        const version = await versionOf(tenant);
        for (const at of [clock - 3 * MINUTE, clock, clock + MINUTE, clock + Math.floor(rand() * 40) * MINUTE]) {
          const now = iso(at);
          assert.equal(await keptTotal(store.db, tenant, version, now), await counted(tenant, now), `step ${step}, ${tenant.country}, at ${now}`);
        }
      }
    }
  });

  it('is not taken at another version, and an import keeps it again', async (t) => {
    await world(t);
    const tenant = tenants[0]!;
    const clock = START + 1000 * MINUTE;
    await importListings(store, ndjsonStream([listingLine(tenant.ownerAccountId)]), new Date(clock));
    const version = await versionOf(tenant);
    assert.notEqual(await keptTotal(store.db, tenant, version, iso(clock)), undefined);
    // A write that does not keep the count (a release before it): a listing and a version of its own.
    await sql`update listings set status = 'draft' where id in (select id from listings where owner_account_id = ${tenant.ownerAccountId} and country = 'sg' and status = 'active' limit 1)`.execute(store.db);
    await sql`update tenant_versions set version = version + 1000 where owner_account_id = ${tenant.ownerAccountId} and country = 'sg'`.execute(store.db);
    const moved = await versionOf(tenant);
    assert.equal(await keptTotal(store.db, tenant, moved, iso(clock)), undefined, 'a kept count of another version is never taken');
    // The cold page counts the tenant instead, and is right; or, told not to walk it (SQLite), reads nothing.
    assert.equal((await store.listings.pageInOrder(tenant, iso(clock), { offset: 0, limit: 5, walk: true }))!.count.total, await counted(tenant, iso(clock)));
    assert.equal(await store.listings.pageInOrder(tenant, iso(clock), { offset: 0, limit: 5, walk: false }), undefined);
    await importListings(store, ndjsonStream([listingLine(tenant.ownerAccountId)]), new Date(clock + MINUTE));
    assert.equal(await keptTotal(store.db, tenant, await versionOf(tenant), iso(clock + MINUTE)), await counted(tenant, iso(clock + MINUTE)));
    const healed = await store.listings.pageInOrder(tenant, iso(clock + MINUTE), { offset: 0, limit: 5, walk: false });
    assert.equal(healed?.count.total, await counted(tenant, iso(clock + MINUTE)));
  });

  it('migration 017 counts every tenant that has listings', async (t) => {
    await world(t);
    await countsMigration.down(store.db);
    await countsMigration.up(store.db);
    const now = new Date().toISOString();
    for (const tenant of tenants) assert.equal(await keptTotal(store.db, tenant, await versionOf(tenant), now), await counted(tenant, now));
  });
});
