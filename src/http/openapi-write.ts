import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from './openapi.js';

/**
 * `npm run openapi`: writes the OpenAPI document to openapi.json at the repository root (from
 * dist/src/http/ that is three levels up), pretty-printed with a trailing newline. The committed
 * file is checked against buildOpenApiDocument() by test/http/openapi.test.ts.
 */
const target = fileURLToPath(new URL('../../../openapi.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log(`wrote ${target}`);
