#!/usr/bin/env node
// Two dependencies ship as hundreds of small ES modules, and loading them was a large share of
// every process's start-up (Node 20 has no compile cache): Kysely's ES module build is some 280
// files (about half of a CLI command's start-up: a `key list` spent ~0.1 s importing it), and
// TypeBox's 373 (about 0.3 s of CPU in every process that builds the API's routes: each `serve`,
// and each test file). The build bundles each into one file under dist/vendor/, which the code
// imports as `#kysely` and `#typebox` (package.json "imports"; their types stay the packages'
// own). Same code, one file: 5 to 12 times faster to load (docs/design/cli-startup.md).
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const bundles = [
  ['kysely', require.resolve('kysely').replace(/dist\/cjs\/index\.js$/, 'dist/esm/index.js')],
  ['typebox', fileURLToPath(import.meta.resolve('typebox'))],
];
for (const [name, entry] of bundles) {
  await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile: `dist/vendor/${name}.js`,
    logLevel: 'warning',
    legalComments: 'inline',
  });
}
