import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The folder tree is the architecture (README, Architecture): each folder of src/ is a capability
 * with a small public surface, and the folders depend on each other in one direction only. ESLint
 * (import-x/no-cycle) refuses cycles between modules; this test refuses them between folders,
 * which no module cycle shows. Migrations call no live code: what they write is frozen in them.
 */

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports of a source: `from './x.js'`, `import('./x.js')`. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\()\s*'(\.[^']+)'/g)].map((m) => resolve(dirname(file), m[1]!));
}

const folderOf = (path: string) => relative(SRC, path).split(sep)[0]!.replace(/\.ts$|\.js$/, '');

describe('architecture', () => {
  it('the folders of src/ import each other without a cycle', () => {
    const edges = new Map<string, Map<string, string>>();
    for (const file of sources(SRC)) {
      for (const target of relativeImports(file)) {
        if (!target.startsWith(SRC)) continue;
        const from = folderOf(file);
        const to = folderOf(target);
        if (from === to) continue;
        if (!edges.has(from)) edges.set(from, new Map());
        if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, relative(SRC, file));
      }
    }
    // Depth-first search; a folder met again while still on the path closes a cycle.
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (folder: string, path: string[]) => {
      state.set(folder, 'open');
      for (const [next, via] of edges.get(folder) ?? []) {
        if (state.get(next) === 'open') cycles.push(`${[...path, folder].slice(path.indexOf(next) >= 0 ? path.indexOf(next) : path.length).join(' -> ')} -> ${next} (${via})`);
        else if (state.get(next) === undefined) visit(next, [...path, folder]);
      }
      state.set(folder, 'done');
    };
    for (const folder of edges.keys()) if (state.get(folder) === undefined) visit(folder, []);
    assert.deepEqual(cycles, []);
  });

  it('migrations import nothing from the live code but the database helpers and other migrations (what they write is frozen in them)', () => {
    const migrations = join(SRC, 'storage', 'migrations');
    const allowed = new Set([join(SRC, 'storage', 'database.js')]);
    const offending = sources(migrations).flatMap((file) =>
      relativeImports(file).filter((target) => !allowed.has(target) && !target.startsWith(migrations + sep)).map((target) => `${relative(SRC, file)} imports ${relative(SRC, target)}`));
    assert.deepEqual(offending, []);
  });
});
