import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { BIN } from '../support/cli.js';
import { startServerProcess } from '../support/process.js';
import { dom, only } from '../support/html.js';
import { httpCall } from '../support/server.js';
import { okJson, tempDatabase, type CliDatabase } from './helpers.js';

/**
 * Start-up cost: each command loads only what it uses (src/cli/program.ts). A key, origin or
 * account command must not load the HTTP stack, the dashboard, the demo, the importer or Redis,
 * and a SQLite database must not load the PostgreSQL driver. Checked by what the real bin loads,
 * not by timing it (timings are noisy): a preload records every ES module resolved (a loader hook)
 * and every CommonJS module required (require.cache at exit).
 */

const RECORDER = `
import { createRequire, register } from 'node:module';
import { appendFileSync } from 'node:fs';
const log = process.env.LOAD_LOG;
register('data:text/javascript,' + encodeURIComponent(\`
  import { appendFileSync } from 'node:fs';
  let log;
  export function initialize(data) { log = data.log; }
  export async function resolve(specifier, context, next) {
    const resolved = await next(specifier, context);
    appendFileSync(log, resolved.url + '\\\\n');
    return resolved;
  }\`), { data: { log } });
process.on('exit', () => {
  const cache = createRequire(import.meta.url).cache;
  appendFileSync(log, Object.keys(cache).map((file) => 'cjs:' + file + '\\n').join(''));
});
`;

/** What a command line must never load: name, and a pattern of the loaded file's path. */
const HEAVY: Array<[string, RegExp]> = [
  ['fastify', /\/node_modules\/(fastify|@fastify)\//],
  ['ioredis', /\/node_modules\/ioredis\//],
  ['pino', /\/node_modules\/pino\//],
  ['the HTTP stack', /\/dist\/src\/(http\/|service\.js|cli\/serve\.js)/],
  ['the dashboard', /\/dist\/src\/dashboard\//],
  ['the demo', /\/dist\/src\/demo\//],
  ['the importer', /\/dist\/src\/listings\/import\.js/],
  ['the rate limiter', /\/dist\/src\/ratelimit\//],
];
const PG = /\/node_modules\/(pg|pg-pool|pg-protocol)\//;
const SQLITE = /\/node_modules\/better-sqlite3\//;

describe('CLI start-up: each command loads only what it needs', () => {
  let db: CliDatabase;
  let recorder: string;
  let account: string;
  let keyId: string;

  before(async () => {
    db = tempDatabase();
    recorder = join(db.dir, 'record-loads.mjs');
    writeFileSync(recorder, RECORDER);
    account = okJson(await db.call(['account', 'create', '--name', 'Start-up Ltd', '--json'])).id;
    keyId = okJson(await db.call(['key', 'create', '--account', account, '--country', 'sg', '--label', 'startup', '--json'])).id;
  });
  after(() => db.remove());

  /** Runs the real bin with the recorder; returns its exit status and every file it loaded. */
  function loadedBy(args: string[], env: Record<string, string> = {}): { status: number | null; stderr: string; files: string[] } {
    const log = join(db.dir, `loaded-${Math.random().toString(36).slice(2)}.txt`);
    writeFileSync(log, '');
    const result = spawnSync(process.execPath, ['--import', pathToFileURL(recorder).href, BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: db.url, LOAD_LOG: log, ...env },
      encoding: 'utf8',
    });
    const files = readFileSync(log, 'utf8').split('\n').filter((line) => line !== '').map((line) => line.replace(/^cjs:/, '').replace(/^file:\/\//, ''));
    return { status: result.status, stderr: result.stderr, files };
  }

  it('key, origin and account commands on SQLite: no HTTP stack, dashboard, demo, importer, Redis or pg', () => {
    // The commands of one module share its imports, and the recorder slows a process down a lot
    // (every module goes through the hook thread): so one or two commands of each module.
    const commands: Array<[string[], string]> = [
      [['key', 'list', '--account', account], 'key-commands.js'],
      [['key', 'revoke', keyId], 'key-commands.js'],
      [['origin', 'add', '--account', account, '--country', 'sg', 'https://www.example.com'], 'origin-commands.js'],
      [['account', 'list'], 'account-commands.js'],
    ];
    for (const [args, module] of commands) {
      const { status, stderr, files } = loadedBy(args);
      const label = args.join(' ');
      assert.equal(status, 0, `${label}: ${stderr}`);
      // The recorder sees both kinds of module: the command's own (ES) and the SQLite driver (CommonJS).
      assert.ok(files.some((f) => f.endsWith(`/dist/src/cli/${module}`)), `${label}: recorded ${module}`);
      assert.ok(files.some((f) => SQLITE.test(f)), `${label}: recorded better-sqlite3`);
      for (const [name, pattern] of HEAVY) {
        assert.deepEqual(files.filter((f) => pattern.test(f)), [], `${label} loaded ${name}`);
      }
      assert.deepEqual(files.filter((f) => PG.test(f)), [], `${label} loaded pg for a SQLite database`);
    }
  });

  it('a postgres:// URL loads pg and not the SQLite driver (the check above sees pg when it is there)', () => {
    // Nothing listens on port 1: the command fails (exit 1) after opening the database.
    const { status, stderr, files } = loadedBy(['key', 'list', '--account', account], { DATABASE_URL: 'postgres://listings@127.0.0.1:1/listings' });
    assert.equal(status, 1, stderr);
    assert.ok(files.some((f) => PG.test(f)), 'pg loaded');
    assert.deepEqual(files.filter((f) => SQLITE.test(f)), [], 'better-sqlite3 not loaded');
    for (const [name, pattern] of HEAVY) assert.deepEqual(files.filter((f) => pattern.test(f)), [], `loaded ${name}`);
  });
  it('serve loads TypeBox as one bundle, and Scalar\'s plugin (a 4.3 MB module) on the first request for /docs, not at start', async (t) => {
    const log = join(db.dir, 'loaded-serve.txt');
    writeFileSync(log, '');
    const server = await startServerProcess({ DATABASE_URL: db.url, NODE_OPTIONS: `--import ${pathToFileURL(recorder).href}`, LOAD_LOG: log });
    t.after(() => server.stop());
    const scalarLoaded = () => readFileSync(log, 'utf8').includes('/node_modules/@scalar/fastify-api-reference/');
    const atStart = readFileSync(log, 'utf8');
    assert.ok(atStart.includes('/dist/src/http/docs.js'), 'the recorder sees the docs module');
    // TypeBox (the endpoints' schemas) as its one-file bundle, not its 373 modules (scripts/build-vendor.js).
    assert.ok(atStart.includes('/dist/vendor/typebox.js'), 'the TypeBox bundle');
    assert.equal(atStart.includes('/node_modules/typebox/'), false, 'TypeBox\'s own modules');
    assert.equal((await httpCall(server.port, '/openapi.json', { host: 'api.localhost' })).status, 200);
    assert.equal(scalarLoaded(), false, 'Scalar loaded before /docs was asked for');
    const page = await httpCall(server.port, '/docs/', { host: 'api.localhost' });
    assert.equal(page.status, 200);
    assert.equal(only(dom(page.body), 'script[src]').getAttribute('src'), 'js/scalar.js', 'the page Scalar rendered');
    assert.equal(scalarLoaded(), true);
  });
});

describe('npx listings-api in a clone runs the linked bin at once (item 11 of issue 40)', () => {
  const root = dirname(dirname(BIN));

  it('runs bin/listings-api.js from node_modules/.bin, never installing the repository into the npx cache', () => {
    // npm 11 installs a local package whose own `bin` names the command into its npx cache (and
    // runs its `prepare`, rebuilding dist/ under a running server). The command comes from the bin/
    // workspace instead, linked by `npm ci`. An empty cache and --offline make the old way fail
    // fast (nothing to install from) instead of rewriting dist/.
    const cache = mkdtempSync(join(tmpdir(), 'npx-cache-'));
    try {
      const started = Date.now();
      const result = spawnSync('npx', ['--offline', 'listings-api', '--help'], {
        cwd: join(root, 'docs'), // any folder of the clone
        env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const took = Date.now() - started;
      assert.equal(result.status, 0, result.stderr);
      assert.match(result.stdout, /^Usage: listings-api /);
      assert.equal(existsSync(join(cache, '_npx')), false, 'npx installed something into its cache');
      assert.ok(took < 15_000, `npx listings-api --help took ${took} ms`);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('the root package declares no bin of that name (npm would install the clone), the bin/ workspace does', () => {
    const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    assert.equal(rootPackage.bin, undefined);
    assert.ok(rootPackage.workspaces.includes('bin'));
    const cliPackage = JSON.parse(readFileSync(join(root, 'bin', 'package.json'), 'utf8'));
    assert.deepEqual(cliPackage.bin, { 'listings-api': 'listings-api.js' });
  });
});
