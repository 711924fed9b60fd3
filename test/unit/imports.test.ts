import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'dist' ? [] : sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('imports', () => {
  it("Kysely is imported as #kysely everywhere (its one-file bundle): a plain 'kysely' import would load a second copy", () => {
    const offenders = ['src', 'test', 'bench'].flatMap((dir) => sources(join(ROOT, dir))).filter((file) => /from 'kysely(\/[^']*)?'/.test(readFileSync(file, 'utf8')));
    assert.deepEqual(offenders.map((f) => f.slice(ROOT.length)), []);
  });
});
