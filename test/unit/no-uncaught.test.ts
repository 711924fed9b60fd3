import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Issue 40: an uncaught exception or unhandled rejection in any suite fails the run. Every test
 * file runs with test/support/no-uncaught.ts loaded (scripts/run-tests.js); here it is shown to
 * fail a file whose tests all pass but whose resources raise an error nobody hears, the way a
 * database connection opened in `before()` did (Node's runner alone printed a diagnostic line).
 */
const HOOK = pathToFileURL(fileURLToPath(new URL('../support/no-uncaught.js', import.meta.url))).href;

describe('no uncaught exception or unhandled rejection in any suite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'no-uncaught-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs a test file as scripts/run-tests.js runs every suite, with the hook. */
  const runFile = (name: string, body: string) => {
    const file = join(dir, name);
    writeFileSync(file, `import { before, describe, it } from 'node:test';\nimport { EventEmitter } from 'node:events';\n${body}`);
    // Not as a child of this runner (NODE_TEST_CONTEXT would make it report to us instead).
    const { NODE_TEST_CONTEXT: _ignored, ...env } = process.env;
    return spawnSync(process.execPath, ['--test', '--test-reporter=spec', `--import=${HOOK}`, file], { encoding: 'utf8', env });
  };

  // A resource made in before() emits 'error' with no listener after the test that used it has ended.
  const lateError = `
describe('suite', () => {
  const resource = new EventEmitter();
  before(() => { setTimeout(() => resource.emit('error', new Error('nobody listened')), 50); });
  it('passes by itself', () => {});
});
setTimeout(() => {}, 200);
`;

  it('an error event nobody hears, after its test ended: the file fails, and says why', () => {
    const result = runFile('late-error.test.mjs', lateError);
    assert.equal(result.status, 1, result.stdout + result.stderr);
    assert.match(result.stdout + result.stderr, /no-uncaught: uncaughtException in .*late-error\.test\.mjs: Error: nobody listened/);
  });

  it('a promise rejected into the void: the file fails', () => {
    const result = runFile('void-rejection.test.mjs', `
describe('suite', () => {
  before(() => { setTimeout(() => void Promise.reject(new Error('rejected into the void')), 50); });
  it('passes by itself', () => {});
});
setTimeout(() => {}, 200);
`);
    assert.equal(result.status, 1, result.stdout + result.stderr);
    assert.match(result.stdout + result.stderr, /no-uncaught: unhandledRejection in .*: Error: rejected into the void/);
  });

  it('a clean file passes', () => {
    const result = runFile('clean.test.mjs', `describe('suite', () => { it('passes', () => {}); });`);
    assert.equal(result.status, 0, result.stdout + result.stderr);
    assert.doesNotMatch(result.stderr, /no-uncaught/);
  });
});
