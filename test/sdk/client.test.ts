import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchWithLocalhost, FileStateStore, ListingsApiError, ListingsClient, type Listing } from '@listings-api/sdk';
import { startTestServer, type TestServer } from '../support/server.js';
import { assertSchema, LISTING_TYPE_FIELDS } from './helpers.js';

/**
 * The SDK against a real listening service (127.0.0.1, an injected clock): local host names on
 * Node, paging through everything, detail, revalidation (D21), a 429 storm survived by waiting as
 * told (D14, D15), and the change feed (D22). Answers are checked against openapi.json, the source
 * of the SDK's types.
 */
describe('SDK against a real server', () => {
  let server: TestServer;
  let accountId: string;
  let key: { id: string; key: string };
  let myKey: { id: string; key: string };
  let base: string;

  before(async () => {
    server = await startTestServer();
    accountId = await server.createAccount();
    key = await server.createKey(accountId, 'sg');
    myKey = await server.createKey(accountId, 'my');
    await server.addListings(accountId, Array.from({ length: 25 }, (_, i) => ({ title: `Unit ${i}`, created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() })));
    await server.addListings(accountId, [{ country: 'my', currency: 'MYR', title: 'Kuala Lumpur office' }]);
    await server.service.store.keys.setRateLimit(key.id, 1000);
    base = `http://api.localhost:${server.port}`;
  });
  after(() => server?.close());

  it('reaches api.localhost and api.my.localhost on Node, with the right Host (RFC 6761), where Node\'s resolver may not', async () => {
    const resolved = await lookup('api.localhost').then(() => true, () => false);
    if (!resolved) console.log('# node:dns cannot resolve api.localhost on this machine: the SDK\'s own loopback mapping is what makes the next calls work');
    const sg = new ListingsClient({ apiKey: key.key, baseUrl: base });
    assert.equal((await sg.listings.list()).total, 25);
    const my = new ListingsClient({ apiKey: myKey.key, apiDomain: `localhost:${server.port}` });
    assert.equal(my.baseUrl, `http://api.my.localhost:${server.port}`);
    assert.deepEqual((await my.listings.list()).items.map((l) => l.title), ['Kuala Lumpur office']);
    // The host picks the country (D3): a my key at the sg host is refused, so the Host header was the URL's.
    const wrongHost = new ListingsClient({ apiKey: myKey.key, baseUrl: base });
    await assert.rejects(wrongHost.listings.list(), { status: 401, code: 'unauthorized' });
    // An unknown host under localhost is the server's 404, not a DNS failure.
    const unknown = new ListingsClient({ apiKey: key.key, baseUrl: `http://api.zz.localhost:${server.port}` });
    await assert.rejects(unknown.listings.list(), { status: 404, code: 'not_found' });
  });

  it('iterate yields every listing of the key exactly once, across pages (spec 4.2), valid against openapi.json', async () => {
    const client = new ListingsClient({ apiKey: key.key, baseUrl: base });
    const seen: Listing[] = [];
    for await (const listing of client.listings.iterate({ perPage: 7 })) {
      assertSchema('Listing', listing);
      seen.push(listing);
    }
    assert.equal(seen.length, 25);
    assert.equal(new Set(seen.map((l) => l.id)).size, 25);
    // The generated type has exactly the fields the server sends.
    assert.deepEqual(Object.keys(seen[0]!).sort(), Object.keys(LISTING_TYPE_FIELDS).sort());
    const page = await client.listings.list({ perPage: 10, page: 3 });
    assertSchema('ListingPage', page);
    assert.deepEqual([page.page, page.per_page, page.total, page.pages, page.items.length], [3, 10, 25, 3, 5]);
  });

  it('filters reach the API as D23 names them', async () => {
    await server.addListings(accountId, [{ title: 'Cafe A', usage_types: ['F&B', 'Cafe'], price: 9 }, { title: 'Shop B', usage_types: ['Retail', 'Shop'], price: 3 }]);
    const client = new ListingsClient({ apiKey: key.key, baseUrl: base });
    const page = await client.listings.list({ usageType: ['F&B', 'Retail'], sort: '-price', minPrice: 2.5 });
    assert.deepEqual(page.items.map((l) => l.title), ['Cafe A', 'Shop B']);
  });

  it('get returns one listing; an unknown id is a not_found ListingsApiError with the request id', async () => {
    const client = new ListingsClient({ apiKey: key.key, baseUrl: base });
    const [first] = (await client.listings.list({ perPage: 1 })).items;
    const listing = await client.listings.get(first!.id);
    assert.deepEqual(listing, first);
    const error = await client.listings.get('00000000-0000-4000-8000-000000000000').catch((e: unknown) => e);
    assert.ok(error instanceof ListingsApiError);
    assert.equal(error.code, 'not_found');
    assert.match(error.requestId ?? '', /\S/);
  });

  it('a repeated read is a free 304, returned as the kept listing (D21)', async () => {
    const client = new ListingsClient({ apiKey: key.key, baseUrl: base });
    const id = (await client.listings.list({ perPage: 1 })).items[0]!.id;
    const first = await client.listings.get(id);
    const remaining = client.rateLimit!.remaining;
    const second = await client.listings.get(id);
    assert.deepEqual(second, first);
    assert.equal(client.rateLimit!.remaining, remaining, 'the 304 was not counted');
    const statuses = server.logs.lines.filter((l) => String(l.path).endsWith(id)).map((l) => l.status);
    assert.ok(statuses.includes(304), `the server answered 304: ${JSON.stringify(statuses)}`);
  });

  it('reads the server\'s IETF RateLimit fields when a proxy passes only those (D29): the same limit and remaining as X-RateLimit-*', async () => {
    const both = new ListingsClient({ apiKey: key.key, baseUrl: base });
    // A proxy in between that drops the X-RateLimit-* headers and keeps the standard ones.
    const ietfOnly = new ListingsClient({
      apiKey: key.key,
      baseUrl: base,
      fetch: async (url, init) => {
        const res = await fetchWithLocalhost(url, init);
        const headers = new Headers(res.headers);
        for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) headers.delete(name);
        assert.ok(headers.get('ratelimit') && headers.get('ratelimit-policy'), 'the server sent both IETF fields');
        return new Response(res.status === 304 ? null : await res.text(), { status: res.status, headers });
      },
    });
    await both.listings.list({ perPage: 2 });
    const viaProxy = await ietfOnly.listings.list({ perPage: 3 }).then(() => ietfOnly.rateLimit);
    await both.listings.list({ perPage: 4 });
    assert.equal(viaProxy?.limit, 1000);
    assert.equal(viaProxy?.remaining, both.rateLimit!.remaining + 1, 'between the two direct calls');
    const now = Math.floor(Date.now() / 1000);
    assert.ok(viaProxy!.reset >= now - 5 && viaProxy!.reset <= now, 't=0 while requests are left: reset is now');
  });

  it('survives a 429 storm by waiting as told (Retry-After plus jitter), with the clock moved instead of slept', async () => {
    const stormKey = await server.createKey(accountId, 'sg', 'storm');
    await server.service.store.keys.setRateLimit(stormKey.id, 2);
    const waits: number[] = [];
    const client = new ListingsClient({
      apiKey: stormKey.key,
      baseUrl: base,
      sleep: async (ms) => {
        waits.push(ms);
        server.clock.advance(ms);
      },
    });
    const refusedBefore = server.logs.lines.filter((l) => l.status === 429).length;
    // Six pages one after another on a limit of two a minute: the third and the fifth are refused,
    // and each goes through after the wait the 429 asked for. (Distinct pages: a repeat of one
    // URL would be a free 304, which is never refused.)
    for (let page = 1; page <= 6; page++) assert.equal((await client.listings.list({ page, perPage: 1 })).items.length, 1);
    const refused = server.logs.lines.filter((l) => l.status === 429).length - refusedBefore;
    assert.equal(waits.length, 2);
    assert.equal(refused, 2);
    // Whole seconds of Retry-After (the window frees a minute after the first two), plus < 250 ms.
    for (const ms of waits) assert.ok(ms >= 59_000 && ms <= 60_250, `a wait of ${ms} ms`);
    assert.equal(client.rateLimit!.limit, 2);

    // And at once: six pages concurrently, every one answered in the end.
    const pages = await Promise.all(Array.from({ length: 6 }, (_, i) => client.listings.list({ page: i + 7, perPage: 1 })));
    assert.ok(pages.every((p) => p.items.length === 1));
    assert.ok(waits.length > 2, 'the concurrent burst was refused and waited too');
  });

  it('sync mirrors the key\'s listings from the change feed; a poll with nothing new is a free 304 (D22)', async () => {
    const client = new ListingsClient({ apiKey: key.key, baseUrl: base });
    const mirror = new Map<string, Listing>();
    const cursor = await client.listings.sync(mirror, { limit: 10 });
    const all: Listing[] = [];
    for await (const l of client.listings.iterate()) all.push(l);
    assert.deepEqual([...mirror.keys()].sort(), all.map((l) => l.id).sort());
    // The first poll from the kept cursor is an ordinary request; polling that answer again is free.
    assert.equal(await client.listings.sync(mirror, { cursor, limit: 10 }), cursor);
    const remaining = client.rateLimit!.remaining;
    assert.equal(await client.listings.sync(mirror, { cursor, limit: 10 }), cursor);
    assert.equal(client.rateLimit!.remaining, remaining);
    const changes = await client.listings.changes({ cursor, limit: 10 });
    assertSchema('ChangePage', changes);
  });

  it('a cron sync with a FileStateStore: the next run (another client, as another process) is one free 304', async () => {
    const cronKey = await server.createKey(accountId, 'sg', 'cron');
    const dir = mkdtempSync(join(tmpdir(), 'sdk-sync-state-'));
    const path = join(dir, 'listings-sync.json');
    try {
      // The first run: every listing, then the poll that finds nothing new (2 requests in all).
      const firstRun = new ListingsClient({ apiKey: cronKey.key, baseUrl: base, maxRetries: 0 });
      const mirror = new Map<string, Listing>();
      const cursor = await firstRun.listings.sync(mirror, { state: new FileStateStore(path) });
      assert.equal(mirror.size, (await firstRun.listings.list({ perPage: 100 })).total);
      assert.ok(!readFileSync(path, 'utf8').includes(cronKey.key), 'the key is not in the state file');

      // The key's whole limit is now spent: a request that counted would be refused (maxRetries 0).
      await server.service.store.keys.setRateLimit(cronKey.id, 3);

      const written = statSync(path).mtimeMs;
      // The second run: a new client and a new store object, only the file shared.
      const before = server.logs.lines.length;
      const secondRun = new ListingsClient({ apiKey: cronKey.key, baseUrl: base, maxRetries: 0 });
      assert.equal(await secondRun.listings.sync(new Map(), { state: new FileStateStore(path) }), cursor);
      const sent = server.logs.lines.slice(before).filter((l) => String(l.path).startsWith('/v1/'));
      assert.deepEqual(sent.map((l) => [l.path, l.status]), [['/v1/listings/changes', 304]]);
      assert.equal(secondRun.rateLimit!.remaining, 0, 'the 304 was admitted with nothing left, and counted nothing');
      // Nothing new: the state file is as the first run left it (a run with nothing new writes nothing).
      assert.equal(statSync(path).mtimeMs, written);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
