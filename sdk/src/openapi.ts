// Generated from openapi.json by sdk/scripts/generate-types.mjs (npm run generate -w sdk): do not edit.
// A test fails when this file is not what the document gives.

/** An active listing. Every field is always present; null means "not set". New fields may be added within v1: ignore fields you do not know. */
export interface Listing {
  /** The listing's stable, unique id. */
  id: string;
  /** The building the unit is in. */
  building_id: string;
  /** The owning organisation's id; null when the owner is an individual landlord. */
  org_id: string | null;
  /** The listing's headline. */
  title: string | null;
  /** Floor area in square feet. */
  size_sqft: number | null;
  /** Usage tags: the main type, then the sub-type where one is set. Main types and their sub-types: Office (Shared Office); F&B (Pub, Cafe, Restaurant, Cloud Kitchen); Industrial (Food Factory, Warehouse); Retail (Kiosk, Shop, Anchor); Clinic (none). */
  usage_types: UsageType[];
  /** Asking rent in `currency`, per `price_basis` (typically per square foot per month). There is no formatted price string. */
  price: number | null;
  /** What `price` is per: `per_sqft_per_month` (rent per square foot per month) or `per_month` (rent for the whole unit per month); null when not set. Filters and sorts on `price` compare the number as given, whatever its basis. */
  price_basis: 'per_sqft_per_month' | 'per_month' | null;
  /** The ISO 4217 code of `price`. */
  currency: string;
  /** True when the listing is a lease takeover (assignment). */
  is_takeover: boolean;
  /** True when the listing is promoted. Featured listings come first in the list. */
  is_featured: boolean;
  /** Always `active`: the API shows active listings only. */
  status: 'active';
  /** When the listing expires; it drops out of the API at that instant. ISO 8601 in UTC, always with milliseconds and a trailing Z, e.g. 2026-10-01T08:30:00.000Z. */
  expiry_date: string | null;
  /** When the space becomes available. ISO 8601 in UTC, always with milliseconds and a trailing Z, e.g. 2026-10-01T08:30:00.000Z. */
  available_from: string | null;
  /** Minimum lease term as free text, in the form "<number> months". */
  min_lease_tenure: string | null;
  /** Total views on the public site. */
  view_count: number;
  /** Total inquiries received. */
  inquiry_count: number;
  /** The building or complex name. */
  building_name: string | null;
  /** The building's street address. */
  street_address: string | null;
  /** Where the listing is, in WGS 84 decimal degrees (`lat` -90 to 90, `lng` -180 to 180); null when not set. `near`, `bbox` and `sort=distance` use it; a listing without a location never matches `near` or `bbox`. */
  location: {
    /** Latitude, -90 to 90. */
    lat: number;
    /** Longitude, -180 to 180. */
    lng: number;
  } | null;
  /** Public, watermarked image URLs (absolute https; plain http only on a loopback host such as a local server's localhost); fetching them needs no key and no CORS. [] means no photos. */
  images: string[];
  /** The cover image is `images[cover_image_index]`; 0 when there are no images. */
  cover_image_index: number;
  /** The listing's canonical public page. */
  url: string;
  /** When the listing was created. ISO 8601 in UTC, always with milliseconds and a trailing Z, e.g. 2026-10-01T08:30:00.000Z. */
  created_at: string;
}

/** A usage type of the taxonomy: a main type (Office, F&B, Industrial, Retail, Clinic) or one of its sub-types. */
export type UsageType = 'Office' | 'Shared Office' | 'F&B' | 'Pub' | 'Cafe' | 'Restaurant' | 'Cloud Kitchen' | 'Industrial' | 'Food Factory' | 'Warehouse' | 'Retail' | 'Kiosk' | 'Shop' | 'Anchor' | 'Clinic';

/** A page of listings. New fields may be added within v1: ignore fields you do not know. */
export interface ListingPage {
  /** The listings on this page, in the list's order. */
  items: Listing[];
  /** This page's number, from 1. */
  page: number;
  /** The page size applied, after clamping to 100. */
  per_page: number;
  /** How many active listings the key's account has in the key's country. */
  total: number;
  /** How many pages there are at this `per_page`: max(1, ceil(total / per_page)), so never 0. */
  pages: number;
}

/** Counts of the listings the filters select. New fields may be added within v1: ignore fields you do not know. */
export interface ListingFacets {
  /** How many listings the filters select: the list's `total` for the same filters. */
  total: number;
  /** Every usage type of the taxonomy (main types and sub-types, in taxonomy order) with how many listings have it, counted as if the request had no `usage_type` filter (every other filter applies), so that a page can show the other types' counts beside a chosen one. */
  usage_types: Array<{
    name: UsageType;
    /** Selected listings of this type. */
    count: number;
  }>;
  /** Counts by `is_featured`, computed as if the request had no `featured` filter (every other filter applies). */
  featured: {
    /** Listings with `is_featured` true. */
    true: number;
    /** Listings with `is_featured` false. */
    false: number;
  };
  /** Counts by `is_takeover`, computed as if the request had no `takeover` filter (every other filter applies). */
  takeover: {
    /** Listings with `is_takeover` true. */
    true: number;
    /** Listings with `is_takeover` false. */
    false: number;
  };
  /** The range of `price` per currency and price basis, over the selected listings that have a price (listings without one are in no group); sorted by currency, then price basis, null last. Empty when none has a price. */
  price: Array<{
    /** The ISO 4217 code. */
    currency: string;
    /** What the prices are per; null for listings without a basis. */
    price_basis: 'per_sqft_per_month' | 'per_month' | null;
    /** The lowest price. */
    min: number;
    /** The highest price. */
    max: number;
    /** Selected listings with a price in this currency and basis. */
    count: number;
  }>;
  /** The range of `size_sqft` over the selected listings that have one; `min` and `max` are null when none has. */
  size_sqft: {
    /** The smallest size. */
    min: number | null;
    /** The largest size. */
    max: number | null;
    /** Selected listings with a size. */
    count: number;
  };
}

/** Changes since the cursor, in the order they took effect. New fields may be added within v1: ignore fields you do not know. */
export interface ChangePage {
  /** Events; the last one of an id is its current state. An answer holds `limit` events whenever that many are pending. */
  items: Array<ListingUpserted | ListingRemoved>;
  /** The cursor to send next (opaque). When `has_more` is false, keep it for the next poll. */
  next_cursor: string;
  /** True while more events are pending: ask again at once with `next_cursor`. False: caught up. */
  has_more: boolean;
}

/** The listing is visible to the key, in this state: store it (put), replacing any copy you hold. */
export interface ListingUpserted {
  type: 'listing.upserted';
  /** The listing's id. */
  id: string;
  /** When the change took effect (for an expiry: the expiry instant). ISO 8601 in UTC with milliseconds and Z. Events come in this order. */
  at: string;
  listing: Listing;
}

/** The listing is no longer visible to the key (it was leased or otherwise made inactive, moved to another owner or country, or expired): delete your copy. A removal of an id you do not hold is nothing to do. */
export interface ListingRemoved {
  type: 'listing.removed';
  /** The listing's id. */
  id: string;
  /** When the change took effect (for an expiry: the expiry instant). ISO 8601 in UTC with milliseconds and Z. Events come in this order. */
  at: string;
}

/** Every error answer. More fields may be added within v1. */
export interface ErrorBody {
  /** A stable, machine-readable code: branch on this. */
  error: 'bad_request' | 'unauthorized' | 'origin_not_allowed' | 'not_found' | 'method_not_allowed' | 'rate_limited' | 'internal_error';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `bad_request`. More fields may be added within v1. */
export interface BadRequestError {
  error: 'bad_request';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `unauthorized`. More fields may be added within v1. */
export interface UnauthorizedError {
  error: 'unauthorized';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `origin_not_allowed`. More fields may be added within v1. */
export interface OriginNotAllowedError {
  error: 'origin_not_allowed';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `not_found`. More fields may be added within v1. */
export interface NotFoundError {
  error: 'not_found';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `rate_limited`. More fields may be added within v1. */
export interface RateLimitedError {
  error: 'rate_limited';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** An error answer whose code is `internal_error`. More fields may be added within v1. */
export interface InternalErrorError {
  error: 'internal_error';
  /** A human-readable explanation, which may change: show or log it, do not parse it. */
  message: string;
}

/** Listings of the account changed in this country: rebuild the pages that show these ids, or read the change feed. At most 1,000 ids; each id in one list, by its latest change. */
export interface ListingsChangedMessage {
  type: 'listings.changed';
  /** When the message was made (the same on every retry of it). */
  timestamp: string;
  data: {
    /** The country of the endpoint (and of the listings). */
    country: string;
    /** Listings that are visible now, new or changed: read them (the feed, or GET /v1/listings/{id}). */
    upserted: string[];
    /** Listings that are no longer visible (another status, expired, removed): drop them. */
    removed: string[];
  };
}

/** The changes since the last delivered message can no longer be told one by one (the endpoint was disabled longer than the history kept): read every listing again. */
export interface ListingsResyncMessage {
  type: 'listings.resync';
  /** When the message was made (the same on every retry of it). */
  timestamp: string;
  data: {
    /** The country of the endpoint (and of the listings). */
    country: string;
  };
}

/** A test event, sent on request from the dashboard or the CLI. */
export interface WebhookTestMessage {
  type: 'webhook.test';
  /** When the message was made (the same on every retry of it). */
  timestamp: string;
  data: {
    /** The country of the endpoint (and of the listings). */
    country: string;
  };
}

/** The query parameters of GET /v1/listings, as the API names them. */
export const LIST_LISTINGS_PARAMETERS = ['page', 'per_page', 'usage_type', 'min_size_sqft', 'max_size_sqft', 'min_price', 'max_price', 'featured', 'takeover', 'q', 'near', 'radius_m', 'bbox', 'sort'] as const;

/** The query parameters of GET /v1/listings/facets, as the API names them. */
export const LIST_LISTING_FACETS_PARAMETERS = ['usage_type', 'min_size_sqft', 'max_size_sqft', 'min_price', 'max_price', 'featured', 'takeover', 'q', 'near', 'radius_m', 'bbox'] as const;

/** The query parameters of GET /v1/listings/changes, as the API names them. */
export const LIST_CHANGES_PARAMETERS = ['cursor', 'limit'] as const;

/** Orders by one field instead of the default order (featured first, then newest first): `price`, `size_sqft` or `created_at`, ascending, or descending with a leading `-`. Listings whose field is null come last in both directions; ties are broken by `id`, ascending; featured listings are not put first. `distance`: nearest to `near` first (then by `id`), only with `near` (else 400). */
export type SortKey = 'price' | '-price' | 'size_sqft' | '-size_sqft' | 'created_at' | '-created_at' | 'distance';

/** The usage types of the taxonomy, main types and sub-types: the names `usage_type` takes. */
export const USAGE_TYPES = ['Office', 'Shared Office', 'F&B', 'Pub', 'Cafe', 'Restaurant', 'Cloud Kitchen', 'Industrial', 'Food Factory', 'Warehouse', 'Retail', 'Kiosk', 'Shop', 'Anchor', 'Clinic'] as const;

/**
 * What decides whether the API takes a query parameter's value, from its schema and style in the
 * document: the proxy handler refuses locally what the API would refuse. `integer`: base-10 digits
 * (an optional leading `+`) within the bounds; `number`: a decimal number within the bounds;
 * `boolean`: `true` or `false`; `string`: the pattern, enum and lengths; `array`: one
 * value whose items, joined by `separator`, each follow `items`.
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

/** The rules of the query parameters of GET /v1/listings, in the document's order. */
export const LIST_LISTINGS_RULES = {
  page: { type: 'integer', minimum: 1, maximum: 2147483647 },
  per_page: { type: 'integer', minimum: 1, maximum: 2147483647 },
  usage_type: { type: 'array', separator: ',', minItems: 1, items: { type: 'string', enum: ['Office', 'Shared Office', 'F&B', 'Pub', 'Cafe', 'Restaurant', 'Cloud Kitchen', 'Industrial', 'Food Factory', 'Warehouse', 'Retail', 'Kiosk', 'Shop', 'Anchor', 'Clinic'] } },
  min_size_sqft: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '800' },
  max_size_sqft: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '2500' },
  min_price: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '4.5' },
  max_price: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '12' },
  featured: { type: 'boolean' },
  takeover: { type: 'boolean' },
  q: { type: 'string', pattern: '[\\p{L}\\p{N}]', example: 'marina office' },
  near: { type: 'string', pattern: '^[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?$', example: '1.2834,103.8513' },
  radius_m: { type: 'integer', minimum: 1, maximum: 100000 },
  bbox: { type: 'string', pattern: '^[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?$', example: '103.80,1.26,103.87,1.31' },
  sort: { type: 'string', enum: ['price', '-price', 'size_sqft', '-size_sqft', 'created_at', '-created_at', 'distance'] },
} as const satisfies Record<(typeof LIST_LISTINGS_PARAMETERS)[number], QueryRule>;

/** The ranges of GET /v1/listings: each `min_<x>` with its `max_<x>`; a lower bound above its upper bound is refused. */
export const LIST_LISTINGS_RANGES = [['min_size_sqft', 'max_size_sqft'], ['min_price', 'max_price']] as const;

/** The rules of the query parameters of GET /v1/listings/facets, in the document's order. */
export const LIST_LISTING_FACETS_RULES = {
  usage_type: { type: 'array', separator: ',', minItems: 1, items: { type: 'string', enum: ['Office', 'Shared Office', 'F&B', 'Pub', 'Cafe', 'Restaurant', 'Cloud Kitchen', 'Industrial', 'Food Factory', 'Warehouse', 'Retail', 'Kiosk', 'Shop', 'Anchor', 'Clinic'] } },
  min_size_sqft: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '800' },
  max_size_sqft: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '2500' },
  min_price: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '4.5' },
  max_price: { type: 'string', pattern: '^\\+?[0-9]+(\\.[0-9]+)?$', example: '12' },
  featured: { type: 'boolean' },
  takeover: { type: 'boolean' },
  q: { type: 'string', pattern: '[\\p{L}\\p{N}]', example: 'marina office' },
  near: { type: 'string', pattern: '^[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?$', example: '1.2834,103.8513' },
  radius_m: { type: 'integer', minimum: 1, maximum: 100000 },
  bbox: { type: 'string', pattern: '^[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?,[+-]?[0-9]+(?:\\.[0-9]+)?$', example: '103.80,1.26,103.87,1.31' },
} as const satisfies Record<(typeof LIST_LISTING_FACETS_PARAMETERS)[number], QueryRule>;

/** The ranges of GET /v1/listings/facets: each `min_<x>` with its `max_<x>`; a lower bound above its upper bound is refused. */
export const LIST_LISTING_FACETS_RANGES = [['min_size_sqft', 'max_size_sqft'], ['min_price', 'max_price']] as const;

/** The rules of the query parameters of GET /v1/listings/changes, in the document's order. */
export const LIST_CHANGES_RULES = {
  cursor: { type: 'string' },
  limit: { type: 'integer', minimum: 1, maximum: 2147483647 },
} as const satisfies Record<(typeof LIST_CHANGES_PARAMETERS)[number], QueryRule>;

/** The ranges of GET /v1/listings/changes: each `min_<x>` with its `max_<x>`; a lower bound above its upper bound is refused. */
export const LIST_CHANGES_RANGES = [] as const;

/** The countries of the API (D2, D3): the two letters every key starts with. */
export const COUNTRIES = ['sg', 'my', 'uk', 'in', 'us', 'ca', 'au', 'nz'] as const;
export type Country = (typeof COUNTRIES)[number];

/** D3: the host of 'sg', and of every other country, as URL templates ({scheme}, {domain}, {country}). */
export const HOST_URLS = { sg: '{scheme}://api.{domain}', other: '{scheme}://api.{country}.{domain}' } as const;

/** The stable error codes of the API (the `error` of every error answer). */
export const ERROR_CODES = ['bad_request', 'unauthorized', 'origin_not_allowed', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
