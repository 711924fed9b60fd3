#!/usr/bin/env node
// Writes src/openapi.ts, the SDK's data types, from the API's OpenAPI document (../openapi.json):
// one interface per schema of components.schemas, with each description as its doc comment, and the
// query parameter names and enums of each operation. No dependency: it handles what the document
// uses (objects, type arrays with "null", enum, const, arrays, $ref, oneOf).
//   node scripts/generate-types.mjs          write src/openapi.ts
//   node scripts/generate-types.mjs --check  exit 1 if src/openapi.ts is not what the document gives
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOCUMENT = fileURLToPath(new URL('../../openapi.json', import.meta.url));
const TARGET = fileURLToPath(new URL('../src/openapi.ts', import.meta.url));

/** Schema names as TypeScript names: `Error` would shadow the global Error. */
const RENAME = { Error: 'ErrorBody' };
const nameOf = (schema) => RENAME[schema] ?? schema;

function doc(text, indent) {
  if (!text) return '';
  const lines = text.replace(/\*\//g, '*\\/').split('\n');
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

const literal = (value) => JSON.stringify(value).replace(/"/g, "'");

function typeOf(schema, indent) {
  if (schema.$ref) return nameOf(schema.$ref.replace('#/components/schemas/', ''));
  if (schema.oneOf) return schema.oneOf.map((s) => typeOf(s, indent)).join(' | ');
  if (schema.const !== undefined) return literal(schema.const);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const parts = types.map((type) => {
    if (schema.enum && type !== 'null') return schema.enum.filter((v) => v !== null).map(literal).join(' | ');
    switch (type) {
      case 'string': return 'string';
      case 'integer': case 'number': return 'number';
      case 'boolean': return 'boolean';
      case 'null': return 'null';
      case 'array': {
        const item = typeOf(schema.items, indent);
        return /[| ]/.test(item) ? `Array<${item}>` : `${item}[]`;
      }
      case 'object': return objectType(schema, indent);
      default: throw new Error(`generate-types: unsupported schema type ${JSON.stringify(type)}`);
    }
  });
  return parts.join(' | ');
}

function objectType(schema, indent) {
  const required = new Set(schema.required ?? []);
  const inner = `${indent}  `;
  const fields = Object.entries(schema.properties ?? {}).map(
    ([name, prop]) => `${doc(prop.description, inner)}${inner}${name}${required.has(name) ? '' : '?'}: ${typeOf(prop, inner)};\n`,
  );
  return `{\n${fields.join('')}${indent}}`;
}

function parametersOf(document, path) {
  return document.paths[path].get.parameters
    .map((p) => (p.$ref ? document.components.parameters[p.$ref.split('/').pop()] : p))
    .filter((p) => p.in === 'query');
}

export function generate(document) {
  let out = `// Generated from openapi.json by sdk/scripts/generate-types.mjs (npm run generate -w sdk): do not edit.
// A test fails when this file is not what the document gives.

`;
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    out += doc(schema.description, '');
    out += `export interface ${nameOf(name)} ${objectType(schema, '')}\n\n`;
  }
  const ops = { ListListings: '/v1/listings', ListChanges: '/v1/listings/changes' };
  for (const [op, path] of Object.entries(ops)) {
    const params = parametersOf(document, path);
    out += `/** The query parameters of GET ${path}, as the API names them. */\n`;
    out += `export const ${op.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}_PARAMETERS = [${params.map((p) => literal(p.name)).join(', ')}] as const;\n\n`;
  }
  const sort = parametersOf(document, '/v1/listings').find((p) => p.name === 'sort');
  out += `${doc(sort.description, '')}export type SortKey = ${typeOf(sort.schema, '')};\n\n`;
  const codes = document.components.schemas.Error.properties.error.enum;
  out += `/** The stable error codes of the API (the \`error\` of every error answer). */\nexport const ERROR_CODES = [${codes.map(literal).join(', ')}] as const;\n`;
  out += `export type ErrorCode = (typeof ERROR_CODES)[number];\n`;
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate(JSON.parse(readFileSync(DOCUMENT, 'utf8')));
  if (process.argv.includes('--check')) {
    if (readFileSync(TARGET, 'utf8') !== text) {
      console.error('sdk/src/openapi.ts is stale: openapi.json changed. Run `npm run generate -w sdk` and commit the result.');
      process.exit(1);
    }
    console.log('sdk/src/openapi.ts matches openapi.json');
  } else {
    writeFileSync(TARGET, text);
    console.log(`wrote ${TARGET}`);
  }
}
