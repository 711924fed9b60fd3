import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { BIN } from '../support/cli.js';
import { listingLine } from '../support/server.js';
import { okJson, tempDatabase, type CliDatabase } from './helpers.js';

/**
 * A big import and other writers at once (issue 8, item 4): an import stages its lines without
 * taking the write lock and swaps them in with one short transaction, so a `key revoke` issued
 * while it runs succeeds (D4), and readers see all of the import or none of it.
 */
const LINES = 40_000;

function runBin(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

describe(`import of ${LINES.toLocaleString('en')} listings while keys are revoked`, () => {
  let db: CliDatabase;
  let accountId: string;
  let file: string;

  before(async () => {
    db = tempDatabase();
    accountId = okJson(await db.call(['account', 'create', '--name', 'Big', '--json'])).id;
    file = join(db.dir, 'big.ndjson');
    const out = createWriteStream(file);
    for (let i = 0; i < LINES; i++) {
      const line = listingLine(accountId, { id: randomUUID(), title: `Unit ${i} ${'x'.repeat(200)}`, images: [`https://img.example.com/${i}/1.jpg`] });
      if (!out.write(`${JSON.stringify(line)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
    await new Promise<void>((r) => out.end(() => r()));
  });
  after(() => db.remove());

  it('every revoke succeeds while the import runs; the import succeeds; readers never see part of it', async () => {
    const keys: string[] = [];
    // Thirty keys of one account in one country: past the default MAX_KEYS_PER_ACCOUNT_COUNTRY, so raised.
    const many = { MAX_KEYS_PER_ACCOUNT_COUNTRY: '30' };
    for (let i = 0; i < 30; i++) keys.push(okJson(await db.call(['key', 'create', '--account', accountId, '--country', 'sg', '--label', `k${i}`, '--json'], undefined, many)).id);

    const env = { DATABASE_URL: db.url };
    let importDone = false;
    const importing = runBin(['import', file, '--json'], env).then((r) => {
      importDone = true;
      return r;
    });
    const reader = new BetterSqlite3(db.file, { readonly: true });
    const seen = new Set<number>();
    const revokes: Array<{ status: number | null; stderr: string }> = [];
    try {
      // Revoke keys one after another for as long as the import runs (its swap included).
      while (!importDone && keys.length > 0) {
        seen.add((reader.prepare('SELECT count(*) AS n FROM listings').get() as { n: number }).n);
        revokes.push(await runBin(['key', 'revoke', keys.shift()!], env));
      }
      const result = await importing;
      assert.equal(result.status, 0, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), { inserted: LINES, updated: 0, unchanged: 0 });
      seen.add((reader.prepare('SELECT count(*) AS n FROM listings').get() as { n: number }).n);
    } finally {
      reader.close();
    }
    assert.ok(revokes.length >= 2, `revokes ran during the import (${revokes.length})`);
    for (const r of revokes) assert.equal(r.status, 0, `a revoke failed during the import: ${r.stderr}`);
    assert.deepEqual([...seen].filter((n) => n !== 0 && n !== LINES), [], 'readers saw all or nothing');
  });
});
