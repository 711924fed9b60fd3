import assert from 'node:assert/strict';
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The SDK as a user gets it: `npm pack` of sdk/, installed (offline: it has no dependencies) into a
 * fresh project that has nothing else, and a script there, importing `@listings-api/sdk` by name,
 * run against a real listening service. Its waits go to this process over IPC, which moves the
 * service's clock by as much instead of sleeping.
 */
const SDK_DIR = fileURLToPath(new URL('../../../sdk/', import.meta.url));

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
    const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', project], { cwd: SDK_DIR, encoding: 'utf8' });
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

  it('ships only dist/ (JavaScript and declarations), its README and package.json, and has no dependencies', () => {
    const listed = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.trim().split('\n').map((p) => p.replace(/^package\//, ''));
    assert.ok(listed.every((p) => /^dist\/[a-z-]+\.(js|d\.ts)$/.test(p) || p === 'README.md' || p === 'package.json'), listed.join(', '));
    assert.ok(listed.includes('dist/index.d.ts') && listed.includes('dist/index.js') && listed.includes('README.md'));
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@listings-api/sdk/package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(manifest.dependencies, undefined);
    assert.deepEqual(readdirSync(join(project, 'node_modules')).filter((n) => !n.startsWith('.')), ['@listings-api']);
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
});
