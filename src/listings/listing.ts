import type { ListingRow } from '../storage/index.js';

/**
 * The listing object of spec 2.1, every field always present (null where unset; D12, D13), in the
 * spec's order. `listingSchema` is the JSON Schema that serialises responses (fast-json-stringify)
 * and documents them (OpenAPI), so the two cannot drift.
 */
export interface Listing {
  id: string;
  building_id: string;
  org_id: string | null;
  title: string | null;
  size_sqft: number | null;
  usage_types: string[];
  price: number | null;
  currency: string;
  is_takeover: boolean;
  is_featured: boolean;
  status: 'active';
  expiry_date: string | null;
  available_from: string | null;
  min_lease_tenure: string | null;
  view_count: number;
  inquiry_count: number;
  building_name: string | null;
  street_address: string | null;
  images: string[];
  cover_image_index: number;
  url: string;
  created_at: string;
}

const nullable = (type: string, extra: Record<string, unknown> = {}) => ({ type: [type, 'null'], ...extra });
const dateTime = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with milliseconds and Z (D13)' } as const;

export const listingSchema = {
  $id: 'Listing',
  type: 'object',
  description: 'An active listing (spec 2.1). New fields may be added within v1; ignore unknown fields.',
  required: [
    'id', 'building_id', 'org_id', 'title', 'size_sqft', 'usage_types', 'price', 'currency', 'is_takeover',
    'is_featured', 'status', 'expiry_date', 'available_from', 'min_lease_tenure', 'view_count', 'inquiry_count',
    'building_name', 'street_address', 'images', 'cover_image_index', 'url', 'created_at',
  ],
  properties: {
    id: { type: 'string', format: 'uuid' },
    building_id: { type: 'string', format: 'uuid' },
    org_id: nullable('string', { format: 'uuid', description: 'Null for individual-landlord listings (D1)' }),
    title: nullable('string'),
    size_sqft: nullable('number'),
    usage_types: { type: 'array', items: { type: 'string' }, description: 'Main type, then sub-type where set (spec 2.2)' },
    price: nullable('number', { description: 'Asking rent per the pricing basis' }),
    currency: { type: 'string', description: 'ISO 4217 code' },
    is_takeover: { type: 'boolean' },
    is_featured: { type: 'boolean' },
    status: { type: 'string', enum: ['active'] },
    expiry_date: nullable('string', { format: 'date-time' }),
    available_from: nullable('string', { format: 'date-time' }),
    min_lease_tenure: nullable('string', { description: 'Free text, "<number> months"' }),
    view_count: { type: 'integer' },
    inquiry_count: { type: 'integer' },
    building_name: nullable('string'),
    street_address: nullable('string'),
    images: { type: 'array', items: { type: 'string', format: 'uri' }, description: 'Absolute https URLs; [] means no photos' },
    cover_image_index: { type: 'integer', description: 'Index into images of the cover image' },
    url: { type: 'string', format: 'uri' },
    created_at: dateTime,
  },
  additionalProperties: false,
} as const;

export const pageSchema = {
  $id: 'ListingPage',
  type: 'object',
  description: 'Page envelope (spec 2.3)',
  required: ['items', 'page', 'per_page', 'total', 'pages'],
  properties: {
    items: { type: 'array', items: { $ref: 'Listing#' } },
    page: { type: 'integer', minimum: 1 },
    per_page: { type: 'integer', minimum: 1, maximum: 100, description: 'The page size applied, after clamping' },
    total: { type: 'integer', minimum: 0, description: "Active listings of the key's account in its country" },
    pages: { type: 'integer', minimum: 1, description: 'max(1, ceil(total / per_page)) (D8)' },
  },
  additionalProperties: false,
} as const;

export const errorSchema = {
  $id: 'Error',
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'string',
      enum: ['bad_request', 'unauthorized', 'origin_not_allowed', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error'],
    },
    message: { type: 'string' },
  },
} as const;

/** A stored row as the API shows it. */
export function toListing(row: ListingRow): Listing {
  return {
    id: row.id,
    building_id: row.building_id,
    org_id: row.org_id,
    title: row.title,
    size_sqft: row.size_sqft,
    usage_types: JSON.parse(row.usage_types) as string[],
    price: row.price,
    currency: row.currency,
    is_takeover: Boolean(row.is_takeover),
    is_featured: Boolean(row.is_featured),
    status: 'active',
    expiry_date: row.expiry_date,
    available_from: row.available_from,
    min_lease_tenure: row.min_lease_tenure,
    view_count: row.view_count,
    inquiry_count: row.inquiry_count,
    building_name: row.building_name,
    street_address: row.street_address,
    images: JSON.parse(row.images) as string[],
    cover_image_index: row.cover_image_index,
    url: row.url,
    created_at: row.created_at,
  };
}
