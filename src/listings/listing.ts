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
const DATE = 'ISO 8601 in UTC, always with milliseconds and a trailing Z, e.g. 2026-10-01T08:30:00.000Z.';
const dateTime = { type: 'string', format: 'date-time', description: `When the listing was created. ${DATE}`, examples: ['2026-10-14T02:45:11.382Z'] } as const;

// The `description`s below are published in the OpenAPI document (openapi.ts): they state each
// rule in plain words, for the users of that document.
export const listingSchema = {
  $id: 'Listing',
  type: 'object',
  description:
    'An active listing. Every field is always present; null means "not set". New fields may be added within v1: ignore fields you do not know.',
  required: [
    'id', 'building_id', 'org_id', 'title', 'size_sqft', 'usage_types', 'price', 'currency', 'is_takeover',
    'is_featured', 'status', 'expiry_date', 'available_from', 'min_lease_tenure', 'view_count', 'inquiry_count',
    'building_name', 'street_address', 'images', 'cover_image_index', 'url', 'created_at',
  ],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'The listing\'s stable, unique id.', examples: ['3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'] },
    building_id: { type: 'string', format: 'uuid', description: 'The building the unit is in.', examples: ['9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35'] },
    org_id: nullable('string', { format: 'uuid', description: 'The owning organisation\'s id; null when the owner is an individual landlord.', examples: ['c2e4a6b8-1d3f-4a5c-8e7b-9f0a1b2c3d4e', null] }),
    title: nullable('string', { description: 'The listing\'s headline.', examples: ['Ground-floor cafe with outdoor seating'] }),
    size_sqft: nullable('number', { description: 'Floor area in square feet.', examples: [1250] }),
    usage_types: {
      type: 'array',
      items: { type: 'string' },
      description:
        'Usage tags: the main type, then the sub-type where one is set. Main types and their sub-types: Office (Shared Office); F&B (Pub, Cafe, Restaurant, Cloud Kitchen); Industrial (Food Factory, Warehouse); Retail (Kiosk, Shop, Anchor); Clinic (none).',
      examples: [['F&B', 'Cafe'], ['Office']],
    },
    price: nullable('number', { description: 'Asking rent in `currency`, per the listing\'s pricing basis (typically per square foot per month). There is no formatted price string.', examples: [9.5] }),
    currency: { type: 'string', description: 'The ISO 4217 code of `price`.', examples: ['SGD'] },
    is_takeover: { type: 'boolean', description: 'True when the listing is a lease takeover (assignment).', examples: [false] },
    is_featured: { type: 'boolean', description: 'True when the listing is promoted. Featured listings come first in the list.', examples: [true] },
    status: { type: 'string', enum: ['active'], description: 'Always `active`: the API shows active listings only.', examples: ['active'] },
    expiry_date: nullable('string', { format: 'date-time', description: `When the listing expires; it drops out of the API at that instant. ${DATE}`, examples: ['2027-03-31T15:59:59.000Z', null] }),
    available_from: nullable('string', { format: 'date-time', description: `When the space becomes available. ${DATE}`, examples: ['2026-12-01T00:00:00.000Z'] }),
    min_lease_tenure: nullable('string', { description: 'Minimum lease term as free text, in the form "<number> months".', examples: ['24 months'] }),
    view_count: { type: 'integer', description: 'Total views on the public site.', examples: [1874] },
    inquiry_count: { type: 'integer', description: 'Total inquiries received.', examples: [23] },
    building_name: nullable('string', { description: 'The building or complex name.', examples: ['Telok Ayer Point'] }),
    street_address: nullable('string', { description: 'The building\'s street address.', examples: ['18 Telok Ayer Street'] }),
    images: {
      type: 'array',
      items: { type: 'string', format: 'uri' },
      description: 'Public, watermarked image URLs (absolute https); fetching them needs no key and no CORS. [] means no photos.',
      examples: [['https://cdn.example.com/listings/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71/1.jpg'], []],
    },
    cover_image_index: { type: 'integer', description: 'The cover image is `images[cover_image_index]`; 0 when there are no images.', examples: [1] },
    url: { type: 'string', format: 'uri', description: 'The listing\'s canonical public page.', examples: ['https://www.example.com/listings/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'] },
    created_at: dateTime,
  },
  additionalProperties: false,
} as const;

export const pageSchema = {
  $id: 'ListingPage',
  type: 'object',
  description: 'A page of listings. New fields may be added within v1: ignore fields you do not know.',
  required: ['items', 'page', 'per_page', 'total', 'pages'],
  properties: {
    items: { type: 'array', items: { $ref: 'Listing#' }, description: 'The listings on this page, in the list\'s order.' },
    page: { type: 'integer', minimum: 1, description: 'This page\'s number, from 1.', examples: [1] },
    per_page: { type: 'integer', minimum: 1, maximum: 100, description: 'The page size applied, after clamping to 100.', examples: [20] },
    total: { type: 'integer', minimum: 0, description: "How many active listings the key's account has in the key's country.", examples: [42] },
    pages: { type: 'integer', minimum: 1, description: 'How many pages there are at this `per_page`: max(1, ceil(total / per_page)), so never 0.', examples: [3] },
  },
  additionalProperties: false,
} as const;

export const errorSchema = {
  $id: 'Error',
  type: 'object',
  description: 'Every error answer. More fields may be added within v1.',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'string',
      enum: ['bad_request', 'unauthorized', 'origin_not_allowed', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error'],
      description: 'A stable, machine-readable code: branch on this.',
      examples: ['not_found'],
    },
    message: { type: 'string', description: 'A human-readable explanation, which may change: show or log it, do not parse it.', examples: ['No active listing with this id is visible to this key.'] },
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
