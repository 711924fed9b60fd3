import { ERROR_CODES } from '../core/api-error.js';
import { UUID_PATTERN } from '../core/formats.js';
import { LISTING_FIELD_NAMES, listingProperties, PRICE_BASES } from './fields.js';
import { USAGE_NAMES } from './taxonomy.js';

/** The largest page of GET /v1/listings: a larger `per_page` is clamped to it (spec, D7). */
export const MAX_PER_PAGE = 100;

export { toListing, type Listing } from './fields.js';

/**
 * The JSON schemas of the answers: they document them (OpenAPI, openapi.ts), and the tests check
 * real answers against them. The listing object's comes from its one declaration (fields.ts), as
 * does the listing's JSON (body.ts), so the two cannot drift. They are strict
 * (`additionalProperties: false`) for the tests that check real answers; the published copies
 * allow fields added within v1.
 */
export const listingSchema = {
  $id: 'Listing',
  type: 'object',
  description:
    'An active listing. Every field is always present; null means "not set". New fields may be added within v1: ignore fields you do not know.',
  required: LISTING_FIELD_NAMES,
  properties: listingProperties(),
  additionalProperties: false,
} as const;

/** A name of the usage taxonomy (spec 2.2): named, so that generated clients have it as one type. */
export const usageTypeSchema = {
  $id: 'UsageType',
  type: 'string',
  enum: USAGE_NAMES,
  description: 'A usage type of the taxonomy: a main type (Office, F&B, Industrial, Retail, Clinic) or one of its sub-types.',
  examples: ['Office'],
} as const;

export const pageSchema = {
  $id: 'ListingPage',
  type: 'object',
  description: 'A page of listings. New fields may be added within v1: ignore fields you do not know.',
  required: ['items', 'page', 'per_page', 'total', 'pages'],
  properties: {
    items: { type: 'array', items: { $ref: 'Listing#' }, description: 'The listings on this page, in the list\'s order.' },
    page: { type: 'integer', minimum: 1, description: 'This page\'s number, from 1.', examples: [1] },
    per_page: { type: 'integer', minimum: 1, maximum: MAX_PER_PAGE, description: `The page size applied, after clamping to ${MAX_PER_PAGE}.`, examples: [20] },
    total: { type: 'integer', minimum: 0, description: "How many active listings the key's account has in the key's country.", examples: [42] },
    pages: { type: 'integer', minimum: 1, description: 'How many pages there are at this `per_page`: max(1, ceil(total / per_page)), so never 0.', examples: [3] },
  },
  additionalProperties: false,
} as const;

const COUNT = { type: 'integer', minimum: 0 } as const;
const FLAG_COUNTS = (flag: string) => ({
  type: 'object',
  required: ['true', 'false'],
  properties: {
    true: { ...COUNT, description: `Listings with \`${flag}\` true.`, examples: [2] },
    false: { ...COUNT, description: `Listings with \`${flag}\` false.`, examples: [17] },
  },
  additionalProperties: false,
  description: `Counts by \`${flag}\`, computed as if the request had no \`${flag === 'is_featured' ? 'featured' : 'takeover'}\` filter (every other filter applies).`,
}) as const;

/** D27: what the listings a filter selects hold, counted for a page of filter chips. */
export const facetsSchema = {
  $id: 'ListingFacets',
  type: 'object',
  description: 'Counts of the listings the filters select. New fields may be added within v1: ignore fields you do not know.',
  required: ['total', 'usage_types', 'featured', 'takeover', 'price', 'size_sqft'],
  properties: {
    total: { ...COUNT, description: 'How many listings the filters select: the list\'s `total` for the same filters.', examples: [19] },
    usage_types: {
      type: 'array',
      description: 'Every usage type of the taxonomy (main types and sub-types, in taxonomy order) with how many listings have it, counted as if the request had no `usage_type` filter (every other filter applies), so that a page can show the other types\' counts beside a chosen one.',
      items: {
        type: 'object',
        required: ['name', 'count'],
        properties: { name: { $ref: 'UsageType#' }, count: { ...COUNT, description: 'Selected listings of this type.', examples: [12] } },
        additionalProperties: false,
      },
    },
    featured: FLAG_COUNTS('is_featured'),
    takeover: FLAG_COUNTS('is_takeover'),
    price: {
      type: 'array',
      description: 'The range of `price` per currency and price basis, over the selected listings that have a price (listings without one are in no group); sorted by currency, then price basis, null last. Empty when none has a price.',
      items: {
        type: 'object',
        required: ['currency', 'price_basis', 'min', 'max', 'count'],
        properties: {
          currency: { type: 'string', description: 'The ISO 4217 code.', examples: ['SGD'] },
          price_basis: { type: ['string', 'null'], enum: [...PRICE_BASES, null], description: 'What the prices are per; null for listings without a basis.', examples: ['per_sqft_per_month'] },
          min: { type: 'number', description: 'The lowest price.', examples: [4.2] },
          max: { type: 'number', description: 'The highest price.', examples: [11.5] },
          count: { ...COUNT, description: 'Selected listings with a price in this currency and basis.', examples: [10] },
        },
        additionalProperties: false,
      },
    },
    size_sqft: {
      type: 'object',
      required: ['min', 'max', 'count'],
      description: 'The range of `size_sqft` over the selected listings that have one; `min` and `max` are null when none has.',
      properties: {
        min: { type: ['number', 'null'], description: 'The smallest size.', examples: [450] },
        max: { type: ['number', 'null'], description: 'The largest size.', examples: [5200] },
        count: { ...COUNT, description: 'Selected listings with a size.', examples: [18] },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

export const errorSchema = {
  $id: 'ErrorBody',
  type: 'object',
  description: 'Every error answer. More fields may be added within v1.',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'string',
      enum: ERROR_CODES,
      description: 'A stable, machine-readable code: branch on this.',
      examples: ['not_found'],
    },
    message: { type: 'string', description: 'A human-readable explanation, which may change: show or log it, do not parse it.', examples: ['No active listing with this id is visible to this key.'] },
  },
} as const;

const EVENT_ID = { type: 'string', pattern: UUID_PATTERN, description: 'The listing\'s id.', examples: ['3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'] } as const;
const EVENT_AT = {
  type: 'string',
  format: 'date-time',
  description: 'When the change took effect (for an expiry: the expiry instant). ISO 8601 in UTC with milliseconds and Z. Events come in this order.',
  examples: ['2026-11-20T03:14:07.512Z'],
} as const;

/** A change feed event: the listing is visible, with this state (new, changed or re-activated). */
export const listingUpsertedSchema = {
  $id: 'ListingUpserted',
  type: 'object',
  description: 'The listing is visible to the key, in this state: store it (put), replacing any copy you hold.',
  required: ['type', 'id', 'at', 'listing'],
  properties: { type: { type: 'string', const: 'listing.upserted', examples: ['listing.upserted'] }, id: EVENT_ID, at: EVENT_AT, listing: { $ref: 'Listing#' } },
} as const;

/** A change feed event: the listing stopped being visible (another status, owner or country; expired). */
export const listingRemovedSchema = {
  $id: 'ListingRemoved',
  type: 'object',
  description: 'The listing is no longer visible to the key (it was leased or otherwise made inactive, moved to another owner or country, or expired): delete your copy. A removal of an id you do not hold is nothing to do.',
  required: ['type', 'id', 'at'],
  properties: { type: { type: 'string', const: 'listing.removed', examples: ['listing.removed'] }, id: EVENT_ID, at: EVENT_AT },
} as const;

/** An answer of the change feed (D22). */
export const changePageSchema = {
  $id: 'ChangePage',
  type: 'object',
  description: 'Changes since the cursor, in the order they took effect. New fields may be added within v1: ignore fields you do not know.',
  required: ['items', 'next_cursor', 'has_more'],
  properties: {
    items: {
      type: 'array',
      description: 'Events; the last one of an id is its current state. An answer holds `limit` events whenever that many are pending.',
      items: {
        oneOf: [{ $ref: 'ListingUpserted#' }, { $ref: 'ListingRemoved#' }],
        discriminator: { propertyName: 'type', mapping: { 'listing.upserted': '#/components/schemas/ListingUpserted', 'listing.removed': '#/components/schemas/ListingRemoved' } },
      },
    },
    next_cursor: { type: 'string', description: 'The cursor to send next (opaque). When `has_more` is false, keep it for the next poll.', examples: ['WzEsImFjYyIsInNnIiwibCIsNDIsIiIsIiIsIiIsIiJd.9dY3xN0pQm2Lr7Vs8Kc1Za'] },
    has_more: { type: 'boolean', description: 'True while more events are pending: ask again at once with `next_cursor`. False: caught up.', examples: [false] },
  },
  additionalProperties: false,
} as const;
