#!/usr/bin/env node
// Writes src/openapi.ts, the SDK's data types, from the API's OpenAPI document (../openapi.json):
// one interface per schema of components.schemas, with each description as its doc comment, the
// query parameter names and enums of each operation, and the rules of each query parameter (from
// its schema and serialisation style) that the proxy handler checks before asking the API. No
// dependency: it handles what the document uses (objects, type arrays with "null", enum, const,
// arrays, $ref, oneOf), and for parameters the standard keywords of their schemas (type, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, pattern, enum, const, minLength, maxLength, items,
// minItems, maxItems) and `style`/`explode`; anything else it refuses rather than guessing.
//   node scripts/generate-types.mjs          write src/openapi.ts
//   node scripts/generate-types.mjs --check  exit 1 if src/openapi.ts is not what the document gives
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOCUMENT = fileURLToPath(new URL('../../openapi.json', import.meta.url));
const TARGET = fileURLToPath(new URL('../src/openapi.ts', import.meta.url));

function doc(text, indent) {
  if (!text) return '';
  const lines = text.replace(/\*\//g, '*\\/').split('\n');
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/** A TypeScript literal of a JSON value: strings single-quoted (double-quoted when they hold a `'`). */
function literal(value) {
  if (typeof value === 'string' && !value.includes("'")) return `'${JSON.stringify(value).slice(1, -1).replace(/\\"/g, '"')}'`;
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{ ${Object.entries(value).map(([k, v]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : literal(k)}: ${literal(v)}`).join(', ')} }`;
  return JSON.stringify(value);
}

function typeOf(schema, indent) {
  if (schema.$ref) return schema.$ref.replace('#/components/schemas/', '');
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

/** The object a local `$ref` (`#/components/...`) points at, followed until it is not a reference. */
function resolve(document, node) {
  let seen = 0;
  while (node && node.$ref) {
    if (!node.$ref.startsWith('#/') || ++seen > 20) throw new Error(`generate-types: unsupported reference ${JSON.stringify(node.$ref)}`);
    node = node.$ref.slice(2).split('/').reduce((at, part) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
    if (node === undefined) throw new Error('generate-types: a reference does not resolve');
  }
  return node;
}

function parametersOf(document, path) {
  return document.paths[path].get.parameters.map((p) => resolve(document, p)).filter((p) => p.in === 'query');
}

/** An array parameter's separator by its style (OpenAPI 3.1, 4.8.12.4): the items of one `name=a,b` value. */
const SEPARATORS = { form: ',', spaceDelimited: ' ', pipeDelimited: '|' };

/**
 * The rule of one query parameter value: its type, and the keywords of its schema that decide
 * whether the API takes it. A schema keyword the proxy could not check is refused here, so that a
 * document that starts using one breaks the generation instead of being checked wrongly.
 */
function ruleOf(document, schema, where) {
  schema = resolve(document, schema);
  const known = new Set(['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'pattern', 'enum', 'const', 'minLength', 'maxLength', 'items', 'minItems', 'maxItems', 'default', 'description', 'example', 'examples', 'title', 'format', 'deprecated']);
  for (const keyword of Object.keys(schema)) if (!known.has(keyword)) throw new Error(`generate-types: ${where}: the proxy cannot check the keyword ${JSON.stringify(keyword)}`);
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t) => t !== 'null');
  if (types.length !== 1 || !['integer', 'number', 'string', 'boolean', 'array'].includes(types[0])) throw new Error(`generate-types: ${where}: unsupported type ${JSON.stringify(schema.type)}`);
  const rule = { type: types[0] };
  for (const keyword of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'pattern', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
    if (schema[keyword] !== undefined) rule[keyword] = schema[keyword];
  }
  const values = schema.const !== undefined ? [schema.const] : schema.enum;
  if (values !== undefined) rule.enum = values.filter((v) => v !== null).map(String);
  if (rule.type === 'array') {
    if (schema.items === undefined) throw new Error(`generate-types: ${where}: an array without items`);
    rule.items = ruleOf(document, schema.items, `${where} items`);
  }
  return rule;
}

/** The rule of a query parameter: its schema's, with the separator of an array's items. */
function parameterRule(document, parameter) {
  const where = `query parameter ${parameter.name}`;
  if (parameter.schema === undefined) throw new Error(`generate-types: ${where}: only parameters with a schema are supported`);
  const rule = ruleOf(document, parameter.schema, where);
  if (rule.type === 'array') {
    const style = parameter.style ?? 'form';
    const explode = parameter.explode ?? style === 'form';
    // An exploded array is the name repeated (`a=1&a=2`), which the API refuses for every parameter.
    if (explode || SEPARATORS[style] === undefined) throw new Error(`generate-types: ${where}: only style form, spaceDelimited or pipeDelimited with explode: false is supported`);
    return { type: 'array', separator: SEPARATORS[style], ...Object.fromEntries(Object.entries(rule).filter(([k]) => k !== 'type')) };
  }
  // The document's example, for the message about a value that does not match the pattern: an
  // optional parameter's is an Example Object (`examples.default`), not a value to send.
  const example = parameter.example ?? parameter.examples?.default?.value;
  if (rule.pattern !== undefined && typeof example === 'string') rule.example = example;
  return rule;
}

const constName = (op) => op.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();

export function generate(document) {
  let out = `// Generated from openapi.json by sdk/scripts/generate-types.mjs (npm run generate -w sdk): do not edit.
// A test fails when this file is not what the document gives.

`;
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    out += doc(schema.description, '');
    // An object is an interface; anything else (an enum of names, say) a type alias.
    if (schema.type === 'object' || (schema.type === undefined && schema.properties !== undefined)) out += `export interface ${name} ${objectType(schema, '')}\n\n`;
    else out += `export type ${name} = ${typeOf(schema, '')};\n\n`;
  }
  const ops = { ListListings: '/v1/listings', ListListingFacets: '/v1/listings/facets', ListChanges: '/v1/listings/changes' };
  for (const [op, path] of Object.entries(ops)) {
    const params = parametersOf(document, path);
    out += `/** The query parameters of GET ${path}, as the API names them. */\n`;
    out += `export const ${constName(op)}_PARAMETERS = [${params.map((p) => literal(p.name)).join(', ')}] as const;\n\n`;
  }
  const listParams = parametersOf(document, '/v1/listings');
  const sort = listParams.find((p) => p.name === 'sort');
  out += `${doc(sort.description, '')}export type SortKey = ${typeOf(resolve(document, sort.schema), '')};\n\n`;
  const usage = parameterRule(document, listParams.find((p) => p.name === 'usage_type'));
  out += `/** The usage types of the taxonomy, main types and sub-types: the names \`usage_type\` takes. */\n`;
  out += `export const USAGE_TYPES = ${literal(usage.items.enum)} as const;\n`;
  // A document that names the taxonomy as a schema of its own (components.schemas.UsageType, which
  // Listing.usage_types can then reference) has given the type above already.
  if (document.components.schemas.UsageType === undefined) out += `export type UsageType = (typeof USAGE_TYPES)[number];\n`;
  out += '\n';
  out += `/**
 * What decides whether the API takes a query parameter's value, from its schema and style in the
 * document: the proxy handler refuses locally what the API would refuse. \`integer\`: base-10 digits
 * (an optional leading \`+\`) within the bounds; \`number\`: a decimal number within the bounds;
 * \`boolean\`: \`true\` or \`false\`; \`string\`: the pattern, enum and lengths; \`array\`: one
 * value whose items, joined by \`separator\`, each follow \`items\`.
 */
export interface QueryRule {
  readonly type: 'integer' | 'number' | 'string' | 'boolean' | 'array';
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly exclusiveMaximum?: number;
  readonly pattern?: string;
  readonly enum?: readonly string[];
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly separator?: string;
  readonly items?: QueryRule;
  readonly minItems?: number;
  readonly maxItems?: number;
  /** The parameter's example in the document, for the message about a value off its pattern. */
  readonly example?: string;
}

`;
  for (const [op, path] of Object.entries(ops)) {
    const params = parametersOf(document, path);
    out += `/** The rules of the query parameters of GET ${path}, in the document's order. */\n`;
    out += `export const ${constName(op)}_RULES = {\n${params.map((p) => `  ${p.name}: ${literal(parameterRule(document, p))},\n`).join('')}} as const satisfies Record<(typeof ${constName(op)}_PARAMETERS)[number], QueryRule>;\n\n`;
    // Bounds by name: \`min_<x>\` and \`max_<x>\` of one operation bound one range (the documents'
    // descriptions say a lower bound above its upper bound is refused).
    const names = new Set(params.map((p) => p.name));
    const ranges = params.filter((p) => p.name.startsWith('min_') && names.has(`max_${p.name.slice(4)}`)).map((p) => [p.name, `max_${p.name.slice(4)}`]);
    out += `/** The ranges of GET ${path}: each \`min_<x>\` with its \`max_<x>\`; a lower bound above its upper bound is refused. */\n`;
    out += `export const ${constName(op)}_RANGES = ${literal(ranges)} as const;\n\n`;
  }
  // The hosts (D3): the server that names its country (x-country) and the one whose `country`
  // variable lists the others. The SDK's country list and host rule are these.
  const own = document.servers.find((server) => typeof server['x-country'] === 'string');
  const regional = document.servers.find((server) => server.variables?.country?.enum !== undefined);
  if (own === undefined || regional === undefined) throw new Error('openapi.json: expected a server with x-country and one with a country variable');
  out += `/** The countries of the API (D2, D3): the two letters every key starts with. */\n`;
  out += `export const COUNTRIES = ${literal([own['x-country'], ...regional.variables.country.enum])} as const;\n`;
  out += `export type Country = (typeof COUNTRIES)[number];\n\n`;
  out += `/** D3: the host of ${literal(own['x-country'])}, and of every other country, as URL templates ({scheme}, {domain}, {country}). */\n`;
  out += `export const HOST_URLS = ${literal({ [own['x-country']]: own.url, other: regional.url })} as const;\n\n`;
  const codes = document.components.schemas.ErrorBody.properties.error.enum;
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
