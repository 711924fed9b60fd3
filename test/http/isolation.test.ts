import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Country } from '../../src/core/countries.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, readAll } from './helpers.js';

const HOST: Record<string, string> = { sg: 'api.localhost', my: 'api.my.localhost', uk: 'api.uk.localhost', au: 'api.au.localhost' };
const CURRENCY: Record<string, string> = { sg: 'SGD', my: 'MYR', uk: 'GBP', au: 'AUD' };

/**
 * Two organisations and an individual landlord, with listings in several countries (some not
 * active): each key sees exactly its own account's active listings in its own country (spec 1,
 * 5 rule 3; D1).
 */
describe('isolation by account and country (spec 1, 2.3, 5 rule 3; D1)', () => {
  let server: TestServer;
  interface Owner {
    id: string;
    kind: 'organisation' | 'individual';
    /** Active listing ids per country. */
    visible: Partial<Record<Country, string[]>>;
    /** Keys per country (two in sg for the first organisation). */
    keys: Array<{ country: Country; key: string }>;
  }
  const owners: Record<'orgA' | 'orgB' | 'landlord', Owner> = {
    orgA: { id: '', kind: 'organisation', visible: {}, keys: [] },
    orgB: { id: '', kind: 'organisation', visible: {}, keys: [] },
    landlord: { id: '', kind: 'individual', visible: {}, keys: [] },
  };
  const hidden: string[] = [];
  const plan: Record<keyof typeof owners, Partial<Record<Country, number>>> = {
    orgA: { sg: 7, my: 3, uk: 2 },
    orgB: { sg: 4, my: 5 },
    landlord: { sg: 2, au: 1 },
  };
  let serial = 0;
  const nextId = () => `9${(++serial).toString(16).padStart(7, '0')}-0000-4000-8000-000000000000`;

  /** Each test's own world (issue 42): a fresh server with the plan's owners, listings and keys. */
  async function world(t: TestContext): Promise<void> {
    // Isolation, not rate limiting, is under test here: many requests per key.
    // No dashboard: no test here asks it anything, and its routes' schemas were most of a world's start.
    server = await freshServer(t, { RATE_LIMIT_PER_MINUTE: '100000', DASHBOARD_PORT: 'off' });
    hidden.length = 0;
    for (const owner of Object.values(owners)) Object.assign(owner, { visible: {}, keys: [] });
    for (const [name, owner] of Object.entries(owners) as Array<[keyof typeof owners, Owner]>) {
      owner.id = await server.createAccount(owner.kind);
      const lines: Array<Record<string, unknown>> = [];
      for (const [country, count] of Object.entries(plan[name]) as Array<[Country, number]>) {
        owner.visible[country] = [];
        for (let i = 0; i < count; i++) {
          const id = nextId();
          owner.visible[country]!.push(id);
          lines.push({ id, country, currency: CURRENCY[country] });
        }
        // Not active in the same country: never seen by anyone.
        for (const status of ['leased', 'expired', 'draft']) {
          const id = nextId();
          hidden.push(id);
          lines.push({ id, country, currency: CURRENCY[country], status });
        }
        const expired = nextId();
        hidden.push(expired);
        lines.push({ id: expired, country, currency: CURRENCY[country], expiry_date: new Date(server.clock.now() - 1000).toISOString() });
      }
      await server.addListings(owner.id, lines);
      for (const country of ['sg', 'my', 'uk', 'au'] as Country[]) {
        owner.keys.push({ country, key: (await server.createKey(owner.id, country)).key });
      }
    }
    owners.orgA.keys.push({ country: 'sg', key: (await server.createKey(owners.orgA.id, 'sg', 'second')).key });
  }

  const allKeys = () => Object.values(owners).flatMap((o) => o.keys.map((k) => ({ owner: o, ...k })));

  it('each key lists exactly its own account\'s active listings in its own country; total counts per key', async (t) => {
    await world(t);
    for (const { owner, country, key } of allKeys()) {
      const expected = [...(owner.visible[country] ?? [])].sort();
      for (const perPage of [2, 100]) {
        const { ids, total } = await readAll(server, key, perPage, { host: HOST[country] });
        assert.deepEqual([...ids].sort(), expected, `${owner.kind} ${owner.id.slice(0, 8)} ${country} per_page=${perPage}`);
        assert.equal(total, expected.length);
      }
    }
  });

  it('items carry the owner\'s org_id, or null for the individual landlord (D1)', async (t) => {
    await world(t);
    for (const { owner, country, key } of allKeys()) {
      const res = await server.get('/v1/listings?per_page=100', { key, host: HOST[country] });
      for (const item of res.json.items) assert.equal(item.org_id, owner.kind === 'organisation' ? owner.id : null);
    }
  });

  it('by id, a key sees its own listings and gets 404 for every other listing, hidden ones included', async (t) => {
    await world(t);
    const everyVisible = Object.values(owners).flatMap((o) =>
      (Object.entries(o.visible) as Array<[Country, string[]]>).flatMap(([country, ids]) => ids.map((id) => ({ owner: o, country, id }))));
    for (const { owner, country, key } of allKeys()) {
      for (const listing of everyVisible) {
        const res = await server.get(`/v1/listings/${listing.id}`, { key, host: HOST[country] });
        if (listing.owner === owner && listing.country === country) assert.equal(res.status, 200, listing.id);
        else assertError(res, 404, 'not_found', `${listing.id} for a key of ${owner.id.slice(0, 8)} in ${country}`);
      }
      for (const id of hidden) assertError(await server.get(`/v1/listings/${id}`, { key, host: HOST[country] }), 404, 'not_found', id);
    }
  });

  it('two keys of one account in one country see the same listings', async (t) => {
    await world(t);
    const [first, second] = owners.orgA.keys.filter((k) => k.country === 'sg');
    const a = await server.get('/v1/listings?per_page=100', { key: first!.key });
    const b = await server.get('/v1/listings?per_page=100', { key: second!.key });
    assert.equal(a.status, 200);
    assert.deepEqual(b.json, a.json);
    assert.equal(a.json.total, 7);
  });

  it('a country with no listings for the account is an empty list, not another country\'s data', async (t) => {
    await world(t);
    const ukB = owners.orgB.keys.find((k) => k.country === 'uk')!;
    const res = await server.get('/v1/listings', { key: ukB.key, host: HOST.uk });
    assert.deepEqual(res.json, { items: [], page: 1, per_page: 20, total: 0, pages: 1 });
  });
});
