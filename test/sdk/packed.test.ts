import assert from 'node:assert/strict';
import { fork, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createListingsHandler, ListingsClient } from '@listings-api/sdk';
import { chromiumAvailable, CHROMIUM, launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The SDK as a user gets it: `npm pack` of sdk/, installed (offline: it has no dependencies) into a
 * fresh project that has nothing else, and a script there, importing `@listings-api/sdk` by name,
 * run against a real listening service. Its waits go to this process over IPC, which moves the
 * service's clock by as much instead of sleeping.
 */
const SDK_DIR = fileURLToPath(new URL('../../../sdk/', import.meta.url));
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const SCRIPT = `
import { ListingsClient, ListingsApiError } from '@listings-api/sdk';

let next = 0;
const pending = new Map();
process.on('message', (m) => { pending.get(m.id)?.(m); pending.delete(m.id); });
const ask = (message) => new Promise((resolve) => { const id = ++next; pending.set(id, resolve); process.send({ ...message, id }); });

const client = new ListingsClient({
  apiKey: process.env.LISTINGS_API_KEY,
  baseUrl: process.env.LISTINGS_API_URL,
  sleep: async (ms) => { await ask({ op: 'sleep', ms }); },
});
const ids = [];
for await (const listing of client.listings.iterate({ perPage: 10 })) ids.push(listing.id);
const one = await client.listings.get(ids[0]);
let notFound;
try { await client.listings.get('00000000-0000-4000-8000-000000000000'); } catch (e) { notFound = { isApiError: e instanceof ListingsApiError, status: e.status, code: e.code }; }

await ask({ op: 'limit', perMinute: 2 });
const storm = await Promise.all([1, 2, 3, 4, 5, 6].map((page) => client.listings.list({ page, perPage: 1 })));
const again = await client.listings.get(ids[0]);
process.send({ op: 'result', ids, one, notFound, storm: storm.map((p) => p.items[0].id), again, rateLimit: client.rateLimit });
process.disconnect();
`;

describe('the packed SDK in a fresh project (npm pack, npm install <tarball>, nothing else)', () => {
  let server: TestServer;
  let project: string;
  let tarball: string;
  let key: { id: string; key: string };

  before(async () => {
    project = mkdtempSync(join(tmpdir(), 'sdk-fresh-'));
    // --ignore-scripts: the build ran before the tests; prepack's clean build would pull dist/ from
    // under the suites running alongside.
    const pack = spawnSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project], { cwd: SDK_DIR, encoding: 'utf8' });
    assert.equal(pack.status, 0, pack.stderr);
    const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(project, info!.filename);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-site', version: '1.0.0', private: true, type: 'module' }));
    const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: project, encoding: 'utf8' });
    assert.equal(install.status, 0, install.stderr);

    server = await startTestServer();
    const accountId = await server.createAccount();
    key = await server.createKey(accountId, 'sg');
    await server.addListings(accountId, Array.from({ length: 23 }, (_, i) => ({ title: `Unit ${i}`, created_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() })));
  });
  after(async () => {
    await server?.close();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('ships only dist/ (JavaScript, declarations, the browser build), README, CHANGELOG, LICENSE (MIT) and package.json, and has no dependencies', () => {
    const listed = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.trim().split('\n').map((p) => p.replace(/^package\//, ''));
    assert.ok(listed.every((p) => /^dist\/[a-z-]+\.(js|d\.ts)$/.test(p) || ['dist/browser/index.js', 'README.md', 'CHANGELOG.md', 'LICENSE', 'package.json'].includes(p)), listed.join(', '));
    for (const file of ['dist/index.d.ts', 'dist/index.js', 'dist/browser/index.js', 'README.md', 'CHANGELOG.md', 'LICENSE']) assert.ok(listed.includes(file), file);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@listings-api/sdk/package.json'), 'utf8')) as Record<string, any>;
    assert.equal(manifest.dependencies, undefined);
    assert.equal(manifest.private, undefined, 'publishable');
    assert.equal(manifest.license, 'MIT', 'a license that lets any site use it');
    assert.deepEqual(manifest.exports['.'].browser, { types: './dist/index.d.ts', default: './dist/browser/index.js' });
    assert.deepEqual(manifest.exports['.'].node, { types: './dist/index.d.ts', default: './dist/index.js' });
    assert.deepEqual(readdirSync(join(project, 'node_modules')).filter((n) => !n.startsWith('.')), ['@listings-api']);
  });

  it('its README and CHANGELOG stand alone: links only to their own headings, the README, or the web', () => {
    const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const installed = join(project, 'node_modules/@listings-api/sdk');
    const anchors = (file: string) => new Set([...readFileSync(join(installed, file), 'utf8').replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1]!)));
    for (const file of ['README.md', 'CHANGELOG.md']) {
      const text = readFileSync(join(installed, file), 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
      assert.ok(links.length > 0);
      for (const link of links) {
        if (/^https:\/\//.test(link)) continue;
        const [target, anchor] = link.split('#') as [string, string | undefined];
        assert.ok(target === '' || target === 'README.md', `${file}: ${link} leads out of the package`);
        if (anchor !== undefined) assert.ok(anchors(target === '' ? file : target).has(anchor), `${file}: ${link} has no such heading`);
      }
      assert.doesNotMatch(text, /\.\.\/|docs\/api\.md/, `${file} points into the repository`);
    }
  });

  it('a site installs it with npm ci and type-checks it under strict and exactOptionalPropertyTypes, for Node.js (with Express and Hono) and for browsers', () => {
    const site = join(project, 'typed-site');
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(site, path)), { recursive: true });
      writeFileSync(join(site, path), text);
    };
    // The SDK is the site's one dependency, installed from the tarball with no network; the
    // frameworks' and Node's types are the repository's (mapped below), so that no registry is needed.
    write('package.json', JSON.stringify({ name: 'typed-site', version: '1.0.0', private: true, type: 'module', dependencies: { '@listings-api/sdk': `file:${tarball}` } }));
    const npm = (args: string[]) => spawnSync('npm', [...args, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: site, encoding: 'utf8' });
    const install = npm(['install']);
    assert.equal(install.status, 0, install.stderr);
    rmSync(join(site, 'node_modules'), { recursive: true });
    const ci = npm(['ci']);
    assert.equal(ci.status, 0, `npm ci: ${ci.stderr}`);

    const strict = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, noEmit: true, skipLibCheck: false, target: 'ES2022' };
    const repoTypes = {
      typeRoots: [join(REPO, 'node_modules/@types')],
      paths: {
        express: [join(REPO, 'node_modules/@types/express/index.d.ts')],
        hono: [join(REPO, 'node_modules/hono/dist/types/index.d.ts')],
        '@hono/node-server': [join(REPO, 'node_modules/@hono/node-server/dist/index.d.mts')],
      },
    };
    // Node.js without the DOM lib, the SDK's declarations checked too (skipLibCheck false).
    write('tsconfig.node.json', JSON.stringify({
      compilerOptions: { ...strict, ...repoTypes, module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'] },
      files: ['server.ts', 'route.ts'],
    }));
    // With the frameworks, whose own declarations need the DOM lib (Hono's websocket helper): those
    // are skipped (skipLibCheck), the site's code is not.
    write('tsconfig.frameworks.json', JSON.stringify({
      compilerOptions: { ...strict, ...repoTypes, skipLibCheck: true, module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'] },
      files: ['frameworks.ts'],
    }));
    write('tsconfig.browser.json', JSON.stringify({
      compilerOptions: { ...strict, module: 'ESNext', moduleResolution: 'Bundler', customConditions: ['browser'], lib: ['ES2022', 'DOM'], types: [] },
      files: ['page.ts'],
    }));
    write('server.ts', `
import { createServer } from 'node:http';
import {
  createListingsHandler, FileStateStore, ListingsApiError, ListingsClient, verifyWebhook,
  type Listing, type ListParams, type SyncStateStore, type UpstreamFailure, type UsageType,
} from '@listings-api/sdk';

// Values that may be undefined, passed as options (exactOptionalPropertyTypes).
const apiKey: string | undefined = process.env.LISTINGS_API_KEY;
const maybePage: number | undefined = process.env.PAGE === undefined ? undefined : Number(process.env.PAGE);
const cursor: string | undefined = process.env.CURSOR;
const client = new ListingsClient({ apiKey, apiDomain: 'example.com', baseUrl: process.env.LISTINGS_API_URL, maxRetries: undefined, timeoutMs: undefined });
const params: ListParams = { page: maybePage, perPage: undefined, usageType: ['F&B', 'Shared Office'], sort: undefined };
const page = await client.listings.list(params, { signal: undefined });
const first: Listing | undefined = page.items[0];
const types: string[] | undefined = first?.usage_types;
await client.listings.list({ page: maybePage });
for await (const listing of client.listings.iterate({ usageType: 'Office', featured: undefined })) console.log(listing.title, types);
const mirror = new Map<string, Listing>();
let next = await client.listings.sync(mirror, { cursor });
next = await client.listings.sync(mirror, { cursor: next, limit: undefined });
const redisLike: SyncStateStore = { get: async (key: string) => (key === 'x' ? null : undefined), set: async () => 'OK' };
await client.listings.sync(mirror, { state: new FileStateStore('state.json'), stateKey: undefined });
await client.listings.sync(mirror, { state: redisLike });
// @ts-expect-error: not a name of the taxonomy
await client.listings.list({ usageType: 'Offices' });
const office: UsageType = 'Office';
try {
  await client.listings.get('x');
} catch (error) {
  if (error instanceof ListingsApiError && error.code === 'not_found') console.log(office, error.status, error.requestId);
}

const listings = createListingsHandler({
  client, basePath: undefined, freshMs: undefined, visitorKey: undefined,
  onError: (failure: UpstreamFailure) => console.error(failure.error.status, failure.error.code, failure.path, failure.outcome),
});
createServer(listings.node).listen(0);
await verifyWebhook('{}', { 'webhook-id': 'a' }, 'whsec_AAAA');
`);
    write('frameworks.ts', `
import { serve, type HttpBindings } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { createListingsHandler, ListingsClient } from '@listings-api/sdk';
const client = new ListingsClient({ apiKey: process.env.LISTINGS_API_KEY, apiDomain: 'example.com' });
const listings = createListingsHandler({ client, basePath: '/api' });
const app = express();
app.use(listings.node);
app.use('/api', listings.node);
const hono = new Hono();
hono.mount('/api', createListingsHandler({ client, visitorKey: (_request, env) => (env as HttpBindings).incoming.socket.remoteAddress }));
serve({ fetch: hono.fetch, port: 0 });
`);
    // A Next.js app router route (app/api/listings/[[...path]]/route.ts), checked against the shape
    // Next.js requires of a route's GET, without Next's own types.
    write('route.ts', `
import { createListingsHandler, ListingsClient } from '@listings-api/sdk';
const listings = createListingsHandler({ client: new ListingsClient({ apiKey: process.env.LISTINGS_API_KEY, apiDomain: 'example.com' }), basePath: '/api/listings' });
type RouteGet = (request: Request, context: { params: Promise<{ path?: string[] }> }) => Response | Promise<Response>;
export const GET: RouteGet = listings;
`);
    write('page.ts', `
import { ListingsClient, type ListingPage, type UsageType } from '@listings-api/sdk';
const client = new ListingsClient({ baseUrl: \`\${location.origin}/api\` });
const chosen = new URLSearchParams(location.search).get('type') as UsageType | null;
const page: ListingPage = await client.listings.list({ usageType: chosen ?? undefined, perPage: 12 });
document.querySelector('#count')!.textContent = String(page.total);
`);
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
    for (const config of ['tsconfig.node.json', 'tsconfig.frameworks.json', 'tsconfig.browser.json']) {
      const check = spawnSync(process.execPath, [tsc, '-p', config], { cwd: site, encoding: 'utf8' });
      assert.equal(check.status, 0, `${config}:\n${check.stdout}${check.stderr}`);
    }
    // And the browser configuration really took the browser build.
    const trace = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.browser.json', '--traceResolution'], { cwd: site, encoding: 'utf8' });
    assert.match(trace.stdout, /Matched 'exports' condition 'browser'/);
  });

  it('iterates every listing, fetches one, survives a 429 storm by waiting as told, and reads a 304 as the cached listing', async () => {
    writeFileSync(join(project, 'check.mjs'), SCRIPT);
    const waits: number[] = [];
    const child = fork(join(project, 'check.mjs'), [], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', LISTINGS_API_KEY: key.key, LISTINGS_API_URL: `http://api.localhost:${server.port}` },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const result = await new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill();
        reject(new Error('the script did not finish within 60 s'));
      }, 60_000);
      child.on('message', async (m: { op: string; id: number; ms?: number; perMinute?: number }) => {
        if (m.op === 'sleep') {
          waits.push(m.ms!);
          server.clock.advance(m.ms!);
        } else if (m.op === 'limit') {
          await server.service.store.keys.setRateLimit(key.id, m.perMinute!);
        } else if (m.op === 'result') {
          clearTimeout(timer);
          return resolve(m);
        }
        child.send({ id: m.id });
      });
      child.on('exit', (code) => code !== 0 && reject(new Error(`the script exited with ${code}`)));
    });

    assert.equal(result.ids.length, 23);
    assert.equal(new Set(result.ids).size, 23);
    assert.equal(result.one.id, result.ids[0]);
    assert.deepEqual(result.notFound, { isApiError: true, status: 404, code: 'not_found' });
    // Six pages at once on a limit of two a minute: refused (usually four, at least two), all
    // answered in the end, each refusal waited out for Retry-After seconds (plus under 250 ms).
    assert.deepEqual(result.storm, result.ids.slice(0, 6));
    const refused = server.logs.lines.filter((l) => l.status === 429).length;
    assert.ok(refused >= 2, `the service refused ${refused} requests`);
    assert.equal(waits.length, refused, 'one wait per refusal');
    for (const ms of waits) assert.ok(ms >= 1000 && ms % 1000 <= 250, `a wait of ${ms} ms`);
    // The repeated get was a 304 (free), returned as the listing the client had kept.
    assert.deepEqual(result.again, result.one);
    const detail = server.logs.lines.filter((l) => l.path === `/v1/listings/${result.ids[0]}`);
    assert.deepEqual(detail.map((l) => l.status), [200, 304]);
    assert.equal(result.rateLimit.limit, 2);
  });

  // Without Chromium: one skipped test, so that the runner's count says so too.
  it('a real Chromium loads the browser ESM build with <script type="module"> and lists listings through the proxy handler', {
    skip: chromiumAvailable ? false : `${CHROMIUM} not found: browser test SKIPPED`,
  }, async () => {
    const browserBuild = readFileSync(join(project, 'node_modules/@listings-api/sdk/dist/browser/index.js'), 'utf8');
    await server.service.store.keys.setRateLimit(key.id, 1000);
    const listings = createListingsHandler({ client: new ListingsClient({ apiKey: key.key, baseUrl: `http://api.localhost:${server.port}` }), onError: () => {} });
    const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Listings</title></head>
<body><p id="status">loading</p><ul id="listings"></ul>
<script type="module">
  import { ListingsClient, ListingsApiError, USAGE_TYPES } from '/static/listings-sdk.js';
  const client = new ListingsClient({ baseUrl: location.origin + '/api' });
  try {
    const page = await client.listings.list({ perPage: 5, sort: '-created_at' });
    for (const listing of page.items) {
      const li = document.createElement('li');
      li.textContent = listing.title;
      document.getElementById('listings').append(li);
    }
    const missing = await client.listings.get('00000000-0000-4000-8000-000000000000').catch((e) => e);
    document.getElementById('status').textContent = ['ok', page.total, missing instanceof ListingsApiError && missing.code, USAGE_TYPES.length].join(' ');
  } catch (error) {
    document.getElementById('status').textContent = 'error ' + error;
  }
</script></body></html>`;
    const site: Server = createServer((req, res) => {
      if (req.url === '/static/listings-sdk.js') {
        res.setHeader('content-type', 'text/javascript; charset=utf-8');
        return res.end(browserBuild);
      }
      if (req.url === '/') {
        res.setHeader('content-type', 'text/html; charset=utf-8');
        return res.end(PAGE);
      }
      listings.node(req, res);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const browser = await launchChromium();
    try {
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`http://127.0.0.1:${(site.address() as { port: number }).port}/`);
      await page.waitForFunction(() => document.getElementById('status')?.textContent !== 'loading', undefined, { timeout: 20_000 });
      assert.equal(await page.textContent('#status'), 'ok 23 not_found 15', errors.join('; '));
      assert.deepEqual(await page.$$eval('#listings li', (items) => items.map((li) => li.textContent)), ['Unit 22', 'Unit 21', 'Unit 20', 'Unit 19', 'Unit 18']);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await new Promise((resolve) => site.close(resolve));
    }
  });
});
