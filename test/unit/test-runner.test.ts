import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const RUNNER = fileURLToPath(new URL('../../../scripts/run-tests.js', import.meta.url));

describe('the test runner\'s summary (issue 8, item 19)', () => {
  it('counts skipped suites and skipped tests, and lists each with its reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'runner-'));
    try {
      const file = join(dir, 'fixture.test.mjs');
      writeFileSync(file, `import { describe, it } from 'node:test';
describe('needs a service', { skip: 'SERVICE_URL is not set' }, () => { it('a', () => {}); it('b', () => {}); });
describe('mixed', () => { it('runs', () => {}); it('one skipped', { skip: 'not here' }, () => {}); });
`);
      // Without NODE_TEST_CONTEXT: the nested runner must report as it does on its own.
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const result = spawnSync(process.execPath, [RUNNER, file], { encoding: 'utf8', env: { ...env, TEST_DATABASE_URL: '' } });
      assert.equal(result.status, 0, result.stderr);
      assert.match(result.stdout, /\ntests: 1 passed, 0 failed, 2 skipped, in 0 min [0-9]+ s on Node.js v[0-9.]+\n/);
      assert.match(result.stdout, /SKIPPED \(2\):\n {2}- SQLite \(embedded default\): needs a service # SERVICE_URL is not set\n {2}- SQLite \(embedded default\): one skipped # not here\n/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
