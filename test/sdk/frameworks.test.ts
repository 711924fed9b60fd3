import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { serve, type HttpBindings, type ServerType } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { createListingsHandler, ListingsClient, type ListingsHandler } from '@listings-api/sdk';
import { httpCall, startTestServer, type TestServer } from '../support/server.js';

/**
 * The proxy handler mounted as the README's recipes say, in the real frameworks, each on a real
 * listening server: Express (5), Hono (with @hono/node-server; `app.mount` removes the prefix before
 * the handler sees the request) and a Next.js app router route handler (a fixture app built with
 * `next build` and served by `next start`). Through each: the SDK's own browser-side client (no key)
 * lists, gets and reads the feed; the site's own routes are untouched.
 */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

describe('the proxy handler in Express, Hono and Next.js (real servers)', () => {
  let api: TestServer;
  let key: string;
  let ids: string[];
  const apiUrl = () => `http://api.localhost:${api.port}`;

  before(async () => {
    api = await startTestServer();
    const accountId = await api.createAccount();
    const created = await api.createKey(accountId, 'sg');
    key = created.key;
    await api.service.store.keys.setRateLimit(created.id, 1000);
    await api.addListings(accountId, Array.from({ length: 12 }, (_, i) => ({
      title: `Unit ${i}`,
      usage_types: i % 2 === 0 ? ['Office'] : ['F&B', 'Cafe'],
      created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString(),
    })));
    ids = (await new ListingsClient({ apiKey: key, baseUrl: apiUrl() }).listings.list({ perPage: 100 })).items.map((l) => l.id);
  });
  after(() => api?.close());

  const handlerAt = (basePath?: string): ListingsHandler =>
    createListingsHandler({ client: new ListingsClient({ apiKey: key, baseUrl: apiUrl() }), basePath, onError: () => {} });

  /** What a page's script does through the proxy at `base`: the SDK with no key. */
  async function browse(port: number, base: string): Promise<void> {
    const browser = new ListingsClient({ baseUrl: `http://127.0.0.1:${port}${base}` });
    const page = await browser.listings.list({ usageType: 'Office', perPage: 4, sort: '-created_at' });
    assert.equal(page.total, 6);
    assert.deepEqual(page.items.map((l) => l.usage_types[0]), ['Office', 'Office', 'Office', 'Office']);
    assert.equal((await browser.listings.get(ids[2]!)).id, ids[2]);
    assert.equal((await browser.listings.changes({ limit: 100 })).items.length, 12);
    await assert.rejects(browser.listings.get('00000000-0000-4000-8000-000000000000'), { status: 404, code: 'not_found' });
    await assert.rejects(browser.listings.list({ page: 0 }), { status: 400, code: 'bad_request' });

    const raw = await httpCall(port, `${base}/v1/listings?per_page=2`, { host: 'www.example.test' });
    assert.equal(raw.status, 200);
    assert.ok(!raw.body.includes(key) && !JSON.stringify(raw.headers).includes(key), 'the key stays on the server');
    const again = await httpCall(port, `${base}/v1/listings?per_page=2`, { host: 'www.example.test', headers: { 'if-none-match': String(raw.headers.etag) } });
    assert.equal(again.status, 304);
    const post = await httpCall(port, `${base}/v1/listings`, { method: 'POST', host: 'www.example.test' });
    assert.equal(post.status, 405);
  }

  async function listen(server: Server): Promise<number> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }
  const close = (server: Server | ServerType) => new Promise<void>((resolve) => server.close(() => resolve()));

  it('Express 5: app.use(handler.node) at the root, and app.use(prefix, handler.node) under a prefix Express removes', async () => {
    const app = express();
    app.get('/', (_req, res) => void res.send('home page'));
    // The README's recipe: the handler answers under its basePath (/api) and passes the rest on.
    app.use(handlerAt().node);
    // Mounted under a prefix: Express removes it from req.url (req.originalUrl keeps it).
    app.use('/shop/listings-api', handlerAt('/shop/listings-api').node);
    app.use('/other', handlerAt().node);
    const server = createServer(app);
    const port = await listen(server);
    try {
      await browse(port, '/api');
      await browse(port, '/shop/listings-api');
      // A prefix that is not basePath: read after what Express removed.
      await browse(port, '/other');
      assert.equal((await httpCall(port, '/')).body, 'home page');
      const notOurs = await httpCall(port, '/about');
      assert.equal(notOurs.status, 404);
      assert.match(notOurs.body, /Cannot GET \/about/, 'outside basePath, Express\'s own 404 (next() was called)');
    } finally {
      await close(server);
    }
  });

  it('Hono: app.mount("/api", handler) (the prefix removed before the handler sees it) and a route passing c.req.raw (not removed)', async () => {
    const app = new Hono();
    app.get('/', (c) => c.text('home page'));
    // The README's recipe: the visitor is the peer address, from the node server's bindings that
    // app.mount passes after the request.
    const visitors = new Set<string | undefined>();
    const mounted = createListingsHandler({
      client: new ListingsClient({ apiKey: key, baseUrl: apiUrl() }),
      visitorKey: (_request, env) => {
        const visitor = (env as HttpBindings | undefined)?.incoming.socket.remoteAddress;
        visitors.add(visitor);
        return visitor;
      },
      onError: () => {},
    });
    app.mount('/api', mounted);
    const routed = handlerAt('/v2-api');
    app.all('/v2-api/*', (c) => routed(c.req.raw));
    let port = 0;
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        port = info.port;
        resolve(s);
      });
    });
    try {
      await browse(port, '/api');
      assert.deepEqual([...visitors], ['127.0.0.1']);
      await browse(port, '/v2-api');
      assert.equal((await httpCall(port, '/')).body, 'home page');
      assert.equal((await httpCall(port, '/about')).status, 404);
    } finally {
      await close(server);
    }
  });

  /**
   * A real Next.js app (test/sdk/next-app: app/api/listings/[[...path]]/route.js, `export const GET
   * = handler`), copied out of the source tree, built by `next build` and served by `next start`:
   * about 15 s on two cores, with no network (telemetry off).
   */
  it('Next.js: an app router route handler (app/api/listings/[[...path]]/route.js, export const GET = handler), built and started', { timeout: 180_000 }, async () => {
    const app = `${REPO}.test-tmp/next-app-${process.pid}`;
    rmSync(app, { recursive: true, force: true });
    mkdirSync(`${REPO}.test-tmp`, { recursive: true });
    cpSync(`${REPO}test/sdk/next-app`, app, { recursive: true });
    const next = `${REPO}node_modules/next/dist/bin/next`;
    // Next evaluates route modules while building ("Collecting page data"), so the key is set there too.
    const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1', LISTINGS_API_KEY: key, LISTINGS_API_URL: apiUrl() };
    let server: ChildProcess | undefined;
    try {
      const build = spawnSync(process.execPath, [next, 'build'], { cwd: app, env, encoding: 'utf8', timeout: 150_000 });
      assert.equal(build.status, 0, `next build failed:\n${build.stdout}\n${build.stderr}`);
      // A free port (next start needs one up front).
      const probe = createServer();
      const port = await listen(probe);
      await close(probe);
      // Its own process group, so that the server it starts ends with it.
      server = spawn(process.execPath, [next, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: app, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      for (let i = 0; !/Ready in/.test(output); i++) {
        assert.ok(i < 300 && server.exitCode === null, `next start did not get ready:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await browse(port, '/api/listings');
      const outside = await httpCall(port, '/api/other');
      assert.equal(outside.status, 404);
    } finally {
      if (server?.pid !== undefined && server.exitCode === null) {
        const exited = new Promise((resolve) => server!.once('exit', resolve));
        process.kill(-server.pid, 'SIGTERM');
        await exited;
      }
      rmSync(app, { recursive: true, force: true });
    }
  });
});
