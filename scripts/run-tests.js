#!/usr/bin/env node
// Runs the compiled tests with Node's test runner: every suite on the embedded default (SQLite),
// then the store-dependent suites again on PostgreSQL when TEST_DATABASE_URL is set. Suites that
// need Redis or Chromium check for them themselves and say plainly when they are skipped.
// Usage: node scripts/run-tests.js [dist/test/.../x.test.js ...]
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Where compiled tests are, and the folder of their TypeScript sources: the service's, and the
 * workspaces' own (sdk/, examples/website/), each compiled to its dist-test/.
 */
const TEST_ROOTS = [
  ['dist/test', 'test'],
  ['sdk/dist-test', 'sdk/test'],
  ['examples/website/dist-test', 'examples/website/test'],
];

function testFiles(dir, sourceDir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path, join(sourceDir, name));
    // Only files whose TypeScript source still exists: a deleted test must not run from a stale build.
    return name.endsWith('.test.js') && existsSync(join(sourceDir, name.replace(/\.js$/, '.ts'))) ? [path] : [];
  });
}

/** Folders whose suites depend on the store and so run on both SQLite and PostgreSQL. */
const STORE_SUITES = ['dist/test/http', 'dist/test/storage', 'dist/test/dashboard', 'dist/test/webhooks'];

/** Loaded into every test file's process: an uncaught exception or unhandled rejection fails the run (test/support/no-uncaught.ts). */
const NO_UNCAUGHT = pathToFileURL(resolve('dist/test/support/no-uncaught.js')).href;

/**
 * Node.js 22 and later keep the code they compiled for each module in this folder and reuse it in
 * the next process (NODE_COMPILE_CACHE, a public setting; Node.js 20 ignores it). Every test file,
 * server and CLI command the suite starts loads the same modules: importing the service took about
 * a tenth less on Node.js 24 with the cache warm (471 -> 419 ms). The cache checks each module's
 * source, so a changed file is compiled again.
 */
const COMPILE_CACHE = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'listings-api-test-compile-cache');

function run(label, files, env) {
  console.log(`\n=== ${label}: ${files.length} test files`);
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=2', '--test-reporter=spec', `--import=${NO_UNCAUGHT}`, ...files], {
      env: { ...process.env, NODE_COMPILE_CACHE: COMPILE_CACHE, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      output += chunk.toString();
    });
    child.on('close', (code) => {
      const count = (name) => Number(output.match(new RegExp(`^ℹ ${name} (\\d+)$`, 'm'))?.[1] ?? 0);
      // The runner's own "skipped" counts skipped tests but not skipped suites (whose tests are
      // not even counted): every skip, of a test or a whole suite, is a "﹣ name # reason" line.
      const skips = [...output.matchAll(/^\s*\ufe63 (.*)$/gm)].map((m) => `${label}: ${m[1].replace(/ \([0-9.]+ms\)/, '')}`);
      done({ code: code ?? 1, pass: count('pass'), fail: count('fail'), skipped: skips.length, skips });
    });
  });
}

const started = Date.now();
/** Minutes and seconds since the suite started, for the closing line (issue 42: the suite says how long it took). */
const elapsed = () => {
  const seconds = Math.round((Date.now() - started) / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
};

const only = process.argv.slice(2);
const all = (only.length > 0 ? only : TEST_ROOTS.flatMap(([dir, sourceDir]) => testFiles(dir, sourceDir))).sort();
const runs = [await run('SQLite (embedded default)', all, { TEST_STORE: 'sqlite' })];
console.log(`\n=== SQLite run done after ${elapsed()}`);

const storeFiles = all.filter((f) => STORE_SUITES.some((dir) => f.startsWith(dir)));
const notes = [];
if (!process.env.TEST_DATABASE_URL && storeFiles.length > 0) {
  notes.push(`the PostgreSQL run of ${storeFiles.length} store-dependent test files (TEST_DATABASE_URL is not set)`);
} else if (process.env.TEST_DATABASE_URL && storeFiles.length > 0) {
  runs.push(await run('PostgreSQL', storeFiles, { TEST_STORE: 'postgres' }));
}

const total = runs.reduce((a, r) => ({ pass: a.pass + r.pass, fail: a.fail + r.fail, skipped: a.skipped + r.skipped }), { pass: 0, fail: 0, skipped: 0 });
const skips = [...runs.flatMap((r) => r.skips), ...notes];
const failed = runs.some((r) => r.code !== 0);
if (skips.length > 0) console.log(`\nSKIPPED (${skips.length}):\n${skips.map((s) => `  - ${s}`).join('\n')}`);
console.log(`\ntests: ${total.pass} passed, ${total.fail} failed, ${total.skipped + notes.length} skipped, in ${elapsed()} on Node.js ${process.version}`);
process.exit(failed ? 1 : 0);
