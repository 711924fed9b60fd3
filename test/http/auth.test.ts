import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { checksum, generateKey } from '../../src/auth/key-format.js';
import { runCli } from '../support/cli.js';
import type { TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { assertError, header } from './helpers.js';

/** A key with one character of the secret changed, so that its checksum no longer matches. */
function mistype(key: string, at: number): string {
  const i = at < 0 ? key.length + at : at;
  const c = key[i] === 'a' ? 'b' : 'a';
  return key.slice(0, i) + c + key.slice(i + 1);
}

describe('authentication (spec 5; D2, D3, D4)', () => {
  let server: TestServer;
  let orgId: string;
  let key: string;
  let myKey: string;
  let ukKey: string;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    orgId = await server.createAccount();
    key = (await server.createKey(orgId)).key;
    myKey = (await server.createKey(orgId, 'my')).key;
    ukKey = (await server.createKey(orgId, 'uk')).key;
    await server.addListings(orgId, [{}, { country: 'my', currency: 'MYR' }, { country: 'uk', currency: 'GBP' }]);
  }

  const call = (authorization: string | undefined, host?: string) =>
    server.get('/v1/listings', { host, headers: authorization === undefined ? {} : { authorization } });

  it('a valid key is accepted: Authorization: Bearer <key> (spec 5 rule 1)', async (t) => {
    await world(t);
    const res = await call(`Bearer ${key}`);
    assert.equal(res.status, 200);
    assert.equal(res.json.total, 1);
  });

  it('a missing or non-Bearer Authorization header gives 401 unauthorized (spec 5 rule 7)', async (t) => {
    await world(t);
    for (const authorization of [undefined, '', 'Bearer', 'Bearer ', key, `Basic ${Buffer.from(`${key}:`).toString('base64')}`, `Token ${key}`, `Bearer: ${key}`, `Bearer${key}`, `Bearer ${key} extra`]) {
      const res = await call(authorization);
      assertError(res, 401, 'unauthorized', String(authorization));
      assert.equal(header(res, 'x-ratelimit-limit'), undefined);
    }
  });

  it('malformed keys give 401: wrong shape, wrong environment, unknown country, truncated, padded (D2)', async (t) => {
    await world(t);
    const secret = key.slice('sg_live_'.length);
    const malformed = [
      'sg_live_', 'sg_live_short', `sg_test_${secret}`, `xx_live_${secret}`, `SG_live_${secret}`, `sg_LIVE_${secret}`,
      `sg-live-${secret}`, `sg_live_${secret.slice(0, -1)}`, `${key}a`, `${key}=`, `sg_live_${secret.slice(0, 20)}-${secret.slice(21)}`,
      `sglive${secret}`, key.toUpperCase(), `"${key}"`,
    ];
    for (const bad of malformed) assertError(await call(`Bearer ${bad}`), 401, 'unauthorized', bad);
  });

  it('a mistyped key (bad checksum) gives 401 (D2)', async (t) => {
    await world(t);
    for (const at of [-1, -3, -6, 'sg_live_'.length, 'sg_live_'.length + 10]) {
      const bad = mistype(key, at);
      assert.notEqual(bad, key);
      assertError(await call(`Bearer ${bad}`), 401, 'unauthorized', `changed at ${at}`);
    }
  });

  it('a well-formed key with a valid checksum that was never issued gives 401 (spec 5 rule 7)', async (t) => {
    await world(t);
    for (const unknown of [generateKey('sg'), generateKey('sg')]) {
      const body = unknown.slice(0, -6);
      assert.equal(unknown.slice(-6), checksum(body), 'the key is well formed');
      assertError(await call(`Bearer ${unknown}`), 401, 'unauthorized');
    }
    assertError(await call(`Bearer ${generateKey('my')}`, 'api.my.localhost'), 401, 'unauthorized');
  });

  it('an organisation may hold several keys; each works (spec 5 rule 5)', async (t) => {
    await world(t);
    const second = (await server.createKey(orgId, 'sg', 'second')).key;
    assert.equal((await call(`Bearer ${second}`)).status, 200);
    assert.equal((await call(`Bearer ${key}`)).status, 200);
  });

  it('a key revoked through the store while the server runs gets 401 on its very next request; other keys keep working (D4)', async (t) => {
    await world(t);
    const victim = await server.createKey(orgId, 'sg', 'to revoke');
    const survivor = await server.createKey(orgId, 'sg', 'survivor');
    // Warm every cache first.
    for (let i = 0; i < 3; i++) assert.equal((await call(`Bearer ${victim.key}`)).status, 200);
    assert.equal((await server.get(`/v1/listings?page=1`, { key: victim.key })).status, 200);
    await server.service.store.keys.revoke(victim.id, new Date(server.clock.now()).toISOString());
    assertError(await call(`Bearer ${victim.key}`), 401, 'unauthorized');
    assertError(await server.get('/v1/listings?page=1', { key: victim.key }), 401, 'unauthorized');
    assert.equal((await call(`Bearer ${survivor.key}`)).status, 200);
  });

  it('a key revoked with the real CLI (`key revoke`) against the same database gets 401 on its next request (D4)', async (t) => {
    await world(t);
    const victim = await server.createKey(orgId, 'sg', 'cli revoke');
    for (let i = 0; i < 3; i++) assert.equal((await call(`Bearer ${victim.key}`)).status, 200);
    const revoked = runCli(['key', 'revoke', victim.id, '--json'], { DATABASE_URL: server.databaseUrl });
    assert.equal(revoked.status, 0, revoked.stderr);
    assert.equal(revoked.json.id, victim.id);
    assertError(await call(`Bearer ${victim.key}`), 401, 'unauthorized');
    assertError(await call(`Bearer ${victim.key}`), 401, 'unauthorized');
    // Revoked is the same answer as unknown: nothing tells an attacker which it was.
    const unknown = await call(`Bearer ${generateKey('sg')}`);
    assert.deepEqual((await call(`Bearer ${victim.key}`)).json, unknown.json);
    assert.equal((await call(`Bearer ${key}`)).status, 200);
  });

  it('a key works only on its own country\'s host; elsewhere 401 (spec 4.1, D3)', async (t) => {
    await world(t);
    assert.equal((await call(`Bearer ${myKey}`, 'api.my.localhost')).status, 200);
    assert.equal((await call(`Bearer ${ukKey}`, 'api.uk.localhost')).status, 200);
    assertError(await call(`Bearer ${key}`, 'api.my.localhost'), 401, 'unauthorized', 'sg key on my');
    assertError(await call(`Bearer ${myKey}`, 'api.localhost'), 401, 'unauthorized', 'my key on sg');
    assertError(await call(`Bearer ${myKey}`, 'api.uk.localhost'), 401, 'unauthorized', 'my key on uk');
    assertError(await call(`Bearer ${ukKey}`, 'api.nz.localhost'), 401, 'unauthorized', 'uk key on nz');
    const detail = await server.get('/v1/listings/a0000000-0000-4000-8000-000000000001', { key: myKey });
    assertError(detail, 401, 'unauthorized', 'detail, my key on sg');
    // The message says which host the key belongs to and where to get one for this host (issue 12).
    assert.match(detail.json.message, /for country "my" and cannot be used on the "sg" host\. Call the "my" host with it, or create a key for "sg" in the dashboard \(Settings > Developer\)/);
  });

  it('a 401 for an unknown or revoked key points at the dashboard, where keys and failed requests are (issue 12)', async (t) => {
    await world(t);
    const victim = await server.createKey(orgId, 'sg', 'revoked for the message');
    await server.service.store.keys.revoke(victim.id, new Date(server.clock.now()).toISOString());
    // Revoked, and well-formed but never issued.
    for (const sent of [victim.key, generateKey('sg')]) {
      const res = await call(`Bearer ${sent}`);
      assertError(res, 401, 'unauthorized');
      assert.match(res.json.message, /^Unknown or revoked API key\. Compare it with your keys in the dashboard \(Settings > Developer\); .* Failed requests\.$/);
      assert.ok(!res.json.message.includes(sent), 'never echoes the key (D20)');
    }
  });

  it('a host that serves no country gives 404 not_found, with or without a key (D3)', async (t) => {
    await world(t);
    for (const host of ['api.xx.localhost', 'api.sg.localhost', 'localhost', '127.0.0.1', 'example.com', 'api.my.localhost.evil.com', 'www.localhost', 'api.my.my.localhost']) {
      assertError(await call(`Bearer ${key}`, host), 404, 'not_found', host);
      assertError(await call(undefined, host), 404, 'not_found', `${host} without key`);
    }
  });

  it('the host is matched without its port and case-insensitively (D3)', async (t) => {
    await world(t);
    for (const host of ['API.LOCALHOST', 'Api.Localhost', `api.localhost:${server.port}`, 'api.localhost:1']) {
      const res = await call(`Bearer ${key}`, host);
      assert.equal(res.status, 200, host);
    }
    assert.equal((await call(`Bearer ${myKey}`, 'API.MY.LOCALHOST')).status, 200);
    assert.equal((await call(`Bearer ${myKey}`, `Api.My.LocalHost:${server.port}`)).status, 200);
    assertError(await call(`Bearer ${key}`, 'API.MY.LOCALHOST'), 401, 'unauthorized');
  });
});

describe('country hosts follow COUNTRIES and API_DOMAIN (OPERATIONS, D3)', () => {
  let restricted: TestServer;
  let domain: TestServer;
  const keys: Record<string, string> = {};
  const domainKeys: Record<string, string> = {};

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    restricted = await freshServer(t, { COUNTRIES: 'sg,my' });
    const org = await restricted.createAccount();
    for (const cc of ['sg', 'my', 'uk'] as const) keys[cc] = (await restricted.createKey(org, cc)).key;
    domain = await freshServer(t, { API_DOMAIN: 'Listings.Example.TEST' });
    const org2 = await domain.createAccount();
    for (const cc of ['sg', 'my', 'nz'] as const) domainKeys[cc] = (await domain.createKey(org2, cc)).key;
  }

  it('COUNTRIES: only the listed countries are served; another country\'s host is 404 even with its valid key', async (t) => {
    await world(t);
    assert.equal((await restricted.get('/v1/listings', { key: keys.sg })).status, 200);
    assert.equal((await restricted.get('/v1/listings', { key: keys.my, host: 'api.my.localhost' })).status, 200);
    assertError(await restricted.get('/v1/listings', { key: keys.uk, host: 'api.uk.localhost' }), 404, 'not_found');
    assertError(await restricted.get('/v1/listings', { host: 'api.uk.localhost' }), 404, 'not_found');
    // A key of a country not served is still refused on a served host.
    assertError(await restricted.get('/v1/listings', { key: keys.uk }), 401, 'unauthorized');
  });

  it('API_DOMAIN: sg at api.D and every other country at api.cc.D; the default domain is no longer served', async (t) => {
    await world(t);
    assert.equal((await domain.get('/v1/listings', { key: domainKeys.sg, host: 'api.listings.example.test' })).status, 200);
    assert.equal((await domain.get('/v1/listings', { key: domainKeys.my, host: 'api.my.listings.example.test' })).status, 200);
    assert.equal((await domain.get('/v1/listings', { key: domainKeys.nz, host: 'API.NZ.Listings.Example.Test:8443' })).status, 200);
    assertError(await domain.get('/v1/listings', { key: domainKeys.my, host: 'api.listings.example.test' }), 401, 'unauthorized');
    assertError(await domain.get('/v1/listings', { key: domainKeys.sg }), 404, 'not_found'); // api.localhost
    assertError(await domain.get('/v1/listings', { key: domainKeys.my, host: 'api.my.localhost' }), 404, 'not_found');
  });
});
