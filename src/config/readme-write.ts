import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configurationTable } from './index.js';

/** The README's configuration table sits between these two lines. */
export const TABLE_START = '<!-- configuration table: written by `npm run generate` from src/config/index.ts -->';
export const TABLE_END = '<!-- end of configuration table -->';

/** The README with its configuration table replaced by the current one. */
export function withCurrentTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error('README.md: the configuration table\'s markers are missing');
  return `${readme.slice(0, start + TABLE_START.length)}\n${configurationTable()}\n${readme.slice(end)}`;
}

// `npm run generate` (from dist/src/config/, the README is three levels up).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const target = fileURLToPath(new URL('../../../README.md', import.meta.url));
  writeFileSync(target, withCurrentTable(readFileSync(target, 'utf8')));
  console.log(`wrote the configuration table of ${target}`);
}
