import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Listing } from '@listings-api/sdk';

/** openapi.json, for validating what the SDK returns against the schemas its types are generated from. */
const doc = JSON.parse(readFileSync(new URL('../../../openapi.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const DOC_ID = 'https://listings.invalid/openapi.json';
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats.default(ajv);
ajv.addFormat('decimal', /^[-+]?[0-9]+(\.[0-9]+)?$/);
for (const keyword of ['openapi', 'info', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'example', 'discriminator']) ajv.addKeyword(keyword);
ajv.addSchema({ ...doc, $id: DOC_ID });

/** Asserts that a value the SDK returned is valid against a schema of openapi.json. */
export function assertSchema(schema: 'Listing' | 'ListingPage' | 'ChangePage' | 'ErrorBody', value: unknown): void {
  const validate = ajv.getSchema(`${DOC_ID}#/components/schemas/${schema}`)!;
  assert.ok(validate(value), `${schema}: ${ajv.errorsText(validate.errors)}`);
}

/**
 * Every field of the SDK's Listing type, exactly (the compiler refuses a missing or an extra one), to
 * compare with the fields of real answers.
 */
export const LISTING_TYPE_FIELDS: Record<keyof Listing, true> = {
  id: true, building_id: true, org_id: true, title: true, size_sqft: true, usage_types: true, price: true, price_basis: true, currency: true,
  is_takeover: true, is_featured: true, status: true, expiry_date: true, available_from: true, min_lease_tenure: true,
  view_count: true, inquiry_count: true, building_name: true, street_address: true, images: true, cover_image_index: true,
  url: true, created_at: true,
};
