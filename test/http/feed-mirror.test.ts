import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { prng } from '../support/random.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';

/**
 * D22's promise, as a randomised test: a mirror built by replaying the change feed equals, object
 * for object, what reading every page of the list gives, after any sequence of imports (new,
 * changed, leased, re-activated, moved to another owner or country, identical re-imports) and
 * after expiries pass with no write at all; from no cursor, from the last cursor, and from old
 * cursors (a copy exact then, brought up to date). Polls alternate between two instances on one
 * database, so a cursor from one instance is used on the other. Seeded: a failure is repeatable.
 * MIRROR_ROUNDS sets the number of rounds (default 600 per store; run with thousands when changing
 * the feed).
 */
const ROUNDS = Number(process.env.MIRROR_ROUNDS ?? 600);
const SEED = Number(process.env.MIRROR_SEED ?? 2222);

type Json = Record<string, unknown>;
interface Mirror {
  listings: Map<string, Json>;
  cursor: string | undefined;
}

describe(`change feed mirror (D22): ${ROUNDS} seeded rounds over two instances`, () => {
  let a: TestServer;
  let b: TestServer;
  let owner: string;
  let other: string;
  let landlord: string;
  let key: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    a = await freshServer(t);
    b = await freshServer(t, { DATABASE_URL: a.databaseUrl }, { clock: a.clock });
    owner = await a.createAccount('organisation');
    other = await a.createAccount('organisation');
    landlord = await a.createAccount('individual');
    const created = await a.createKey(owner);
    key = created.key;
    await a.service.store.keys.setRateLimit(created.id, 100_000_000);
  }

  it('replaying the feed always gives exactly the listed set and objects', async (t) => {
    await world(t);
    const rand = prng(SEED);
    const chance = (p: number) => rand() < p;
    const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
    const instance = () => (chance(0.5) ? a : b);
    const ids: string[] = [];
    const state = new Map<string, Json>();
    const main = { listings: new Map<string, Json>(), cursor: undefined } as Mirror;
    const saved: Mirror[] = [];

    /** Every page of the list, as a client reads it (spec 4.2 rule 1). */
    async function listed(): Promise<Map<string, Json>> {
      const seen = new Map<string, Json>();
      const perPage = 1 + Math.floor(rand() * 100);
      for (let page = 1; ; page++) {
        const res = await instance().get(`/v1/listings?per_page=${perPage}&page=${page}`, { key });
        assert.equal(res.status, 200, res.body);
        for (const item of res.json.items) seen.set(item.id, item);
        if (res.json.page >= res.json.pages) return seen;
      }
    }

    /** Polls until caught up, applying each event as put or delete. */
    async function replay(mirror: Mirror): Promise<void> {
      for (let polls = 0; ; polls++) {
        assert.ok(polls < 10_000, 'the feed ends');
        const limit = chance(0.2) ? 1000 : 1 + Math.floor(rand() * 25);
        const query = mirror.cursor === undefined ? `?limit=${limit}` : `?limit=${limit}&cursor=${mirror.cursor}`;
        const res = await instance().get(`/v1/listings/changes${query}`, { key });
        assert.equal(res.status, 200, res.body);
        const { items, next_cursor: next, has_more: hasMore } = res.json as { items: Json[]; next_cursor: string; has_more: boolean };
        assert.ok(items.length <= limit);
        if (hasMore) assert.equal(items.length, limit, 'an answer holds limit events whenever that many are pending');
        const inAnswer = new Set<string>();
        for (const event of items) {
          assert.ok(!inAnswer.has(event.id as string), 'a listing comes once per answer');
          inAnswer.add(event.id as string);
          if (event.type === 'listing.upserted') {
            assert.equal((event.listing as Json).id, event.id);
            mirror.listings.set(event.id as string, event.listing as Json);
          } else {
            assert.equal(event.type, 'listing.removed');
            mirror.listings.delete(event.id as string);
          }
        }
        mirror.cursor = next;
        if (!hasMore) return;
      }
    }

    const check = async (mirror: Mirror, label: string) => {
      const truth = await listed();
      const differing = [...new Set([...mirror.listings.keys(), ...truth.keys()])].filter((id) => mirror.listings.has(id) !== truth.has(id));
      if (differing.length > 0) {
        // What the database says of each listing the mirror got wrong, to find the rule that failed.
        const db = a.service.store.db;
        const rows = await db.selectFrom('listings').select(['id', 'owner_account_id', 'country', 'status', 'expiry_date', 'updated_at', 'change_seq']).where('id', 'in', differing).execute();
        const changes = await db.selectFrom('listing_changes').selectAll().where('listing_id', 'in', differing).orderBy('seq').execute();
        assert.fail(`${label}: the same set; now ${new Date(a.clock.now()).toISOString()}, cursor ${mirror.cursor}, ` +
          `in the mirror only: ${differing.filter((id) => mirror.listings.has(id)).join(' ')}, listed only: ${differing.filter((id) => truth.has(id)).join(' ')}\n` +
          `rows: ${JSON.stringify(rows)}\nchanges: ${JSON.stringify(changes)}`);
      }
      for (const [id, listing] of truth) {
        if (isDeepStrictEqual(mirror.listings.get(id), listing)) continue;
        const db = a.service.store.db;
        const row = await db.selectFrom('listings').select(['id', 'owner_account_id', 'country', 'status', 'expiry_date', 'updated_at', 'change_seq']).where('id', '=', id).executeTakeFirst();
        const changes = await db.selectFrom('listing_changes').selectAll().where('listing_id', '=', id).orderBy('seq').execute();
        assert.fail(`${label}: the same object for ${id}; now ${new Date(a.clock.now()).toISOString()}, cursor ${mirror.cursor}\n` +
          `mirror: ${JSON.stringify(mirror.listings.get(id))}\nlisted: ${JSON.stringify(listing)}\nrow: ${JSON.stringify(row)}\nchanges: ${JSON.stringify(changes)}`);
      }
    };

    /** One random change of a listing, as an import line. */
    function change(): Json {
      const now = a.clock.now();
      const existing = ids.length > 0 && chance(0.75) ? state.get(pick(ids)) : undefined;
      const line: Json = existing !== undefined ? { ...existing } : {
        id: randomUUID(), owner_account_id: owner, country: 'sg', building_id: randomUUID(), usage_types: ['Office'], currency: 'SGD',
        status: 'active', url: 'https://www.example.com/l', title: 'new', created_at: new Date(now - Math.floor(rand() * 1e9)).toISOString(),
      };
      const roll = rand();
      if (roll < 0.25) line.title = `title ${Math.floor(rand() * 1e6)}`;
      else if (roll < 0.35) line.status = line.status === 'active' ? pick(['leased', 'expired', 'draft']) : 'active';
      else if (roll < 0.45) line.owner_account_id = pick([owner, owner, other, landlord]);
      else if (roll < 0.55) [line.country, line.currency] = pick([['sg', 'SGD'], ['sg', 'SGD'], ['my', 'MYR']]);
      else if (roll < 0.8) line.expiry_date = pick([
        null,
        new Date(now - 1000).toISOString(),
        new Date(now + Math.floor(rand() * 60_000)).toISOString(),
        new Date(now + 1).toISOString(),
      ]);
      else if (roll < 0.9) line.is_featured = !line.is_featured;
      else line.price = chance(0.3) ? null : Math.floor(rand() * 100) / 4; // (or an identical re-import)
      return line;
    }

    for (let round = 0; round < ROUNDS; round++) {
      // Writes: a batch of changes, each listing once.
      if (chance(0.7)) {
        const batch = new Map<string, Json>();
        for (let n = 1 + Math.floor(rand() * 4); n > 0; n--) {
          const line = change();
          batch.set(line.id as string, line);
        }
        await a.addListings(owner, [...batch.values()]);
        for (const line of batch.values()) {
          if (!state.has(line.id as string)) ids.push(line.id as string);
          state.set(line.id as string, line);
        }
      }
      // Time passes: expiries happen with no write.
      if (chance(0.5)) a.clock.advance(Math.floor(rand() * (chance(0.2) ? 120_000 : 5_000)));

      const roll = rand();
      if (roll < 0.1) {
        // A new client: from no cursor.
        const fresh: Mirror = { listings: new Map(), cursor: undefined };
        await replay(fresh);
        await check(fresh, `round ${round}, from no cursor`);
      } else if (roll < 0.25 && saved.length > 0) {
        // A copy that was exact at an old cursor, brought up to date.
        const old = pick(saved);
        const copy: Mirror = { listings: new Map(old.listings), cursor: old.cursor };
        await replay(copy);
        await check(copy, `round ${round}, from an old cursor`);
      }
      await replay(main);
      if (chance(0.5)) await check(main, `round ${round}`);
      if (chance(0.1)) saved.push({ listings: new Map(main.listings), cursor: main.cursor });
      if (saved.length > 20) saved.splice(Math.floor(rand() * saved.length), 1);
    }
    await replay(main);
    await check(main, 'the end');
    assert.ok(ids.length > 20, 'many listings took part');
  });
});
