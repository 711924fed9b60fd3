import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * Every TypeScript and JavaScript block of sdk/README.md compiles, as a module of its own, against
 * the SDK's declarations (dist/index.d.ts, what a site gets), under `strict` and
 * `exactOptionalPropertyTypes`, with Node's types and those of the frameworks the recipes use: what
 * a reader copies works (issue 40 item 4: the webhook example did not compile). A block may use the
 * names that the README leaves to the reader, declared below with the types the SDK expects; every
 * name of the SDK, of Node or of a framework must be imported by the block itself.
 */
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** What the README's blocks take as given: the reader's own values. */
const READER_SUPPLIES = `
declare const client: import('@listings-api/sdk').ListingsClient;
declare const apiKey: string;
declare const baseUrl: string;
declare const myKey: string;
declare const mirror: Map<string, import('@listings-api/sdk').Listing>;
declare const myDatabaseStore: import('@listings-api/sdk').ListingStore;
declare const logger: { warn(fields: Record<string, unknown>, message: string): void };
declare const rawBody: string;
declare const headers: Record<string, string | undefined>;
declare const secret: string;
`;

/** The ```ts and ```js blocks of a Markdown text, with the line each starts on. */
function codeBlocks(markdown: string): Array<{ language: 'ts' | 'js'; line: number; code: string }> {
  const blocks: Array<{ language: 'ts' | 'js'; line: number; code: string }> = [];
  for (const match of markdown.matchAll(/^```(ts|js)\n([\s\S]*?)^```$/gm)) {
    blocks.push({ language: match[1] as 'ts' | 'js', line: markdown.slice(0, match.index).split('\n').length, code: match[2]! });
  }
  return blocks;
}

describe('sdk/README.md: its code blocks compile', () => {
  it('every ts and js block type-checks against the SDK as a site would use it', () => {
    const readme = readFileSync(join(REPO, 'sdk/README.md'), 'utf8');
    const blocks = codeBlocks(readme);
    assert.ok(blocks.length >= 15, `${blocks.length} blocks found`);
    const dir = mkdtempSync(join(tmpdir(), 'sdk-readme-'));
    try {
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      writeFileSync(join(dir, 'reader.d.ts'), READER_SUPPLIES);
      const files = blocks.map((block) => {
        const name = `readme-line-${block.line}.${block.language}`;
        writeFileSync(join(dir, name), block.code);
        return name;
      });
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: {
          strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, noEmit: true, skipLibCheck: true,
          allowJs: true, checkJs: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'],
          types: ['node'], typeRoots: [join(REPO, 'node_modules/@types')],
          paths: {
            '@listings-api/sdk': [join(REPO, 'sdk/dist/index.d.ts')],
            express: [join(REPO, 'node_modules/@types/express/index.d.ts')],
            hono: [join(REPO, 'node_modules/hono/dist/types/index.d.ts')],
            '@hono/node-server': [join(REPO, 'node_modules/@hono/node-server/dist/index.d.mts')],
          },
        },
        files: ['reader.d.ts', ...files],
      }));
      const tsc = spawnSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: dir, encoding: 'utf8' });
      assert.equal(tsc.status, 0, `README blocks that do not compile (file names give the block's first line):\n${tsc.stdout}${tsc.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
