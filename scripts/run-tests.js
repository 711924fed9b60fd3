#!/usr/bin/env node
// Runs every compiled test file with Node's test runner. Suites that need PostgreSQL, Redis or
// Chromium check for them themselves and say plainly when they are skipped.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    // Only files whose TypeScript source still exists: a deleted test must not run from a stale build.
    return name.endsWith('.test.js') && existsSync(path.replace(/^dist[/\\]/, '').replace(/\.js$/, '.ts')) ? [path] : [];
  });
}

const only = process.argv.slice(2);
const files = (only.length > 0 ? only : testFiles('dist/test')).sort();
for (const [name, variable] of [['PostgreSQL', 'TEST_DATABASE_URL'], ['Redis', 'TEST_REDIS_URL']]) {
  if (!process.env[variable]) console.log(`NOTE: ${variable} is not set: the ${name} suites are skipped.`);
}
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
