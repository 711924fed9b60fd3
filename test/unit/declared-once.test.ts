import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The listing object is declared once (src/listings/fields.ts) and every layer follows it. Proven
 * on a scratch copy of the built service: one field is added to the declaration (and, as its
 * migration would, a column to the table), nothing else is edited, and then an import stores it,
 * the stored JSON the API answers with carries it, and the OpenAPI document publishes it.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('declared once: a field added to fields.ts reaches every layer with no other edit', () => {
  it('import, stored JSON and OpenAPI pick up a scratch field', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'listings-scratch-field-'));
    try {
      cpSync(join(ROOT, 'dist'), join(scratch, 'dist'), { recursive: true });
      cpSync(join(ROOT, 'package.json'), join(scratch, 'package.json'));
      symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'), 'dir');
      const fields = join(scratch, 'dist', 'src', 'listings', 'fields.js');
      const declaration = readFileSync(fields, 'utf8');
      const anchor = "    url: { kind: 'url',";
      assert.ok(declaration.includes(anchor), 'the declaration of `url` in the built fields.js');
      writeFileSync(fields, declaration.replace(anchor, "    floor_level: { kind: 'text', nullable: true, description: 'The unit\\'s floor.', examples: ['12'] },\n" + anchor));

      const script = `
        import { randomUUID } from 'node:crypto';
        import { Readable } from 'node:stream';
        import { sql } from '#kysely';
        import { openStore } from './dist/src/storage/index.js';
        import { importListings } from './dist/src/import/import.js';
        import { buildOpenApiDocument } from './dist/src/http/openapi.js';
        const store = openStore('file:' + ${JSON.stringify(join(scratch, 'scratch.db'))});
        await store.migrate();
        await sql\`alter table listings add column floor_level text\`.execute(store.db);
        const owner = randomUUID();
        const now = new Date('2026-11-27T00:00:00.000Z');
        await store.accounts.create({ id: owner, name: 'Scratch', kind: 'organisation', created_at: now.toISOString() });
        const id = randomUUID();
        const line = { id, owner_account_id: owner, country: 'sg', building_id: randomUUID(), title: 'T', size_sqft: 100, usage_types: ['Office'],
          price: 5, currency: 'SGD', status: 'active', url: 'https://example.com/' + id, images: [], floor_level: '12' };
        await importListings(store, Readable.from(JSON.stringify(line)), now);
        const [row] = await store.listings.rows([id]);
        const stored = (await sql\`select floor_level from listings where id = \${id}\`.execute(store.db)).rows[0].floor_level;
        const schema = buildOpenApiDocument().components.schemas.Listing;
        console.log(JSON.stringify({ stored, body: JSON.parse(row.body), published: schema.properties.floor_level ?? null, required: schema.required.includes('floor_level') }));
        await store.close();
      `;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: scratch, encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 0, run.stderr);
      const seen = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { stored: unknown; body: Record<string, unknown>; published: Record<string, unknown> | null; required: boolean };
      assert.equal(seen.stored, '12', 'the import staged, compared and swapped its column');
      assert.equal(seen.body.floor_level, '12', 'the stored JSON the API answers with carries it');
      assert.ok(Object.keys(seen.body).indexOf('floor_level') === Object.keys(seen.body).indexOf('url') - 1, 'just before url, where it was declared');
      assert.ok(seen.published !== null, 'the OpenAPI document publishes it');
      assert.equal(seen.required, true, 'every field of a listing is always present');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
