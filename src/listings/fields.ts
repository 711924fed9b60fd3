import { canonicalUuid, isLoopbackHost, MAX_INT32, UUID_PATTERN } from '../core/formats.js';
import { usageTypesProblem } from './taxonomy.js';

/**
 * The listing object of spec 2.1, declared once. Everything about a field comes from its entry
 * here: its place in the object (the order of this table), its TypeScript type, its JSON schema
 * (published in the OpenAPI document, and what tests check answers against), its stored form and column
 * type, how a row becomes the API's value, and how an import line is read and checked. Adding a
 * field is one entry here plus a migration that adds its column.
 */

type Json = Record<string, unknown>;

/** A field's kind: everything but its name and its words. */
interface Kind<Api, Stored> {
  /** JSON schema of the API's value (without nullability). */
  schema: Json;
  /** Column type of a migration (for reference: migrations are written out, as they were then). */
  column: string;
  /** The API's value of the stored one. */
  toApi(stored: Stored): Api;
  /**
   * `JSON.stringify(toApi(stored))`, without building the value first where the stored form
   * says it already (the listing bodies of an import, listings/body.ts). Default: that expression.
   */
  toJson?(stored: Stored): string;
  /** An import line's value (present) as stored, or a problem. `nullable`: the message says null is allowed. */
  read(value: unknown, nullable: boolean): { value: Stored } | { problem: string };
  /** When the import line leaves it out (or gives null, for nullable fields). */
  fallback?: Stored;
}

/** A value as an error message quotes it: its JSON, cut at 60 characters. */
export const show = (v: unknown): string => {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** `Date#toISOString` of a year from 0000 to 9999: what a date is stored as (D13). */
const STORED_FORM = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * Parses an ISO 8601 date or date-time with a zone (`Z` or `+hh:mm`; a bare date is midnight UTC)
 * into the one stored form, `Date#toISOString` (D13). Undefined for anything else, including
 * impossible dates such as 2026-02-30.
 */
export function parseIsoDate(value: string): string | undefined {
  // Most dates arrive in the stored form already (exports of this API, other systems' ISO
  // output): such a date is valid when it survives the round trip, which rolls impossible days
  // and hours over (2026-02-30 comes back as 2026-03-02). A third of the cost of the full parse.
  if (STORED_FORM.test(value)) {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms) && new Date(ms).toISOString() === value) return value;
  }
  const m = ISO_DATE_TIME.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  if (+mo! < 1 || +mo! > 12 || +d! < 1 || +h > 23 || +mi > 59 || +s > 59) return undefined;
  // Not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const leap = +y! % 4 === 0 && (+y! % 100 !== 0 || +y! % 400 === 0);
  const daysInMonth = +mo! === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(+mo!) ? 30 : 31;
  if (+d! > daysInMonth) return undefined;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${(frac + '000').slice(0, 3)}${zone}`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/**
 * An absolute http(s) URL. `httpsOnly` (images, D13) also takes plain http on a loopback host
 * (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`): browsers treat those as secure, and it is
 * how a local server (the demo, src/http/demo-images.ts) serves photos with no TLS and no network.
 */
function httpUrl(value: string, httpsOnly: boolean): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || (url.protocol === 'http:' && (!httpsOnly || isLoopbackHost(url.hostname)))) && url.hostname !== '';
  } catch {
    return false;
  }
}

const text = (pattern?: RegExp, hint?: string): Kind<string, string> => ({
  schema: { type: 'string' },
  column: 'text',
  toApi: (v) => v,
  read: (v, nullable) =>
    typeof v !== 'string' ? { problem: `expected a string${nullable ? ' or null' : ''}, got ${show(v)}` } : pattern && !pattern.test(v) ? { problem: `expected ${hint}, got ${show(v)}` } : { value: v },
});

const strings = (check: (list: string[]) => string | undefined): Kind<string[], string> => ({
  schema: { type: 'array', items: { type: 'string' } },
  column: 'text',
  toApi: (v) => JSON.parse(v) as string[],
  // Stored as `JSON.stringify` of the array (`read` below), which is the API's JSON already.
  toJson: (v) => v,
  read: (v) => {
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return { problem: `expected an array of strings, got ${show(v)}` };
    const problem = check(v as string[]);
    return problem === undefined ? { value: JSON.stringify(v) } : { problem };
  },
});

/**
 * D25: what a listing's `price` is per. Rent per square foot per month (shops, offices: the
 * typical quote), or for the whole unit per month (kiosks, cloud kitchens, a whole floor).
 */
export const PRICE_BASES = ['per_sqft_per_month', 'per_month'] as const;
export type PriceBasis = (typeof PRICE_BASES)[number];

/** A place on the map (D28). */
export interface GeoPoint {
  lat: number;
  lng: number;
}

/** The kinds of the fields. */
const KINDS = {
  uuid: {
    schema: { type: 'string', pattern: UUID_PATTERN },
    column: 'varchar(36)',
    toApi: (v: string) => v,
    read: (v: unknown) => {
      const id = canonicalUuid(v);
      return id === undefined ? { problem: `expected a UUID, got ${show(v)}` } : { value: id };
    },
  } satisfies Kind<string, string>,
  text: text(),
  number: {
    schema: { type: 'number' },
    column: 'double precision',
    toApi: (v: number) => v,
    read: (v: unknown) => (typeof v !== 'number' || !Number.isFinite(v) || v < 0 ? { problem: `expected a non-negative number or null, got ${show(v)}` } : { value: v }),
  } satisfies Kind<number, number>,
  count: {
    schema: { type: 'integer' },
    column: 'integer',
    toApi: (v: number) => v,
    read: (v: unknown) => (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_INT32 ? { problem: `expected a whole number from 0 to ${MAX_INT32}, got ${show(v)}` } : { value: v }),
    fallback: 0,
  } satisfies Kind<number, number>,
  flag: {
    schema: { type: 'boolean' },
    column: 'integer',
    toApi: (v: number) => v === 1,
    toJson: (v: number) => (v === 1 ? 'true' : 'false'),
    read: (v: unknown) => (typeof v !== 'boolean' ? { problem: `expected true or false, got ${show(v)}` } : { value: v ? 1 : 0 }),
    fallback: 0,
  } satisfies Kind<boolean, number>,
  date: {
    schema: { type: 'string', format: 'date-time' },
    column: 'varchar(30)',
    toApi: (v: string) => v,
    read: (v: unknown) => {
      const parsed = typeof v === 'string' ? parseIsoDate(v) : undefined;
      return parsed === undefined ? { problem: `expected an ISO 8601 date-time in UTC such as 2026-10-01T08:30:00Z, got ${show(v)}` } : { value: parsed };
    },
  } satisfies Kind<string, string>,
  currency: text(/^[A-Z]{3}$/, 'a three-letter ISO 4217 code such as SGD'),
  tenure: text(/^[0-9]{1,4} months?$/, 'the form "<number> months"'),
  /** The API shows active listings only; an import line gives any lowercase status (OPERATIONS). */
  status: {
    schema: { type: 'string', enum: ['active'] },
    column: 'varchar(32)',
    toApi: (): 'active' => 'active',
    read: (v: unknown) => (typeof v !== 'string' || !/^[a-z][a-z_]{0,31}$/.test(v) ? { problem: `expected a lowercase status such as active, leased, expired or draft, got ${show(v)}` } : { value: v }),
  } satisfies Kind<'active', string>,
  /** D25: what `price` is per; one of PRICE_BASES. */
  priceBasis: {
    schema: { type: 'string', enum: PRICE_BASES },
    column: 'varchar(32)',
    toApi: (v: PriceBasis) => v,
    read: (v: unknown) =>
      typeof v !== 'string' || !(PRICE_BASES as readonly string[]).includes(v)
        ? { problem: `expected one of ${PRICE_BASES.map((b) => `"${b}"`).join(', ')} or null, got ${show(v)}` }
        : { value: v as PriceBasis },
  } satisfies Kind<PriceBasis, PriceBasis>,
  // Each item a name of the taxonomy: the `UsageType` schema (listing.ts), by reference.
  usageTypes: { ...strings(usageTypesProblem), schema: { type: 'array', items: { $ref: 'UsageType#' } } },
  images: {
    ...strings((list) => {
      const bad = list.findIndex((url) => !httpUrl(url, true));
      return bad === -1 ? undefined : `entry ${bad} is not an absolute https URL (http only on a loopback host such as localhost): ${show(list[bad])}`;
    }),
    schema: { type: 'array', items: { type: 'string', format: 'uri' } },
    fallback: '[]',
  } satisfies Kind<string[], string>,
  /**
   * D28: WGS 84 decimal degrees. Stored as the API's JSON text (`{"lat":..,"lng":..}`, the two
   * numbers as JSON writes them), so a body needs no encoding and the index parses one column.
   */
  location: {
    schema: {
      type: 'object',
      properties: {
        lat: { type: 'number', minimum: -90, maximum: 90, description: 'Latitude, -90 to 90.', examples: [1.2812] },
        lng: { type: 'number', minimum: -180, maximum: 180, description: 'Longitude, -180 to 180.', examples: [103.8486] },
      },
      required: ['lat', 'lng'],
      additionalProperties: false,
    },
    column: 'text',
    toApi: (v: string) => JSON.parse(v) as GeoPoint,
    toJson: (v: string) => v,
    read: (v: unknown) => {
      const point = v as Partial<Record<string, unknown>>;
      const keys = typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.keys(v) : [];
      const inRange = (n: unknown, limit: number): n is number => typeof n === 'number' && Number.isFinite(n) && n >= -limit && n <= limit;
      if (keys.length !== 2 || !inRange(point.lat, 90) || !inRange(point.lng, 180)) {
        return { problem: `expected {"lat": -90 to 90, "lng": -180 to 180} (WGS 84 decimal degrees) or null, got ${show(v)}` };
      }
      return { value: JSON.stringify({ lat: point.lat, lng: point.lng }) };
    },
  } satisfies Kind<GeoPoint, string>,
  url: {
    schema: { type: 'string', format: 'uri' },
    column: 'text',
    toApi: (v: string) => v,
    read: (v: unknown) => (typeof v !== 'string' || !httpUrl(v, false) ? { problem: `expected an absolute http(s) URL, got ${show(v)}` } : { value: v }),
  } satisfies Kind<string, string>,
} as const;

type Kinds = typeof KINDS;
type KindName = keyof Kinds;
type ApiOf<K extends KindName> = ReturnType<Kinds[K]['toApi']>;
type StoredOf<K extends KindName> = Parameters<Kinds[K]['toApi']>[0];

interface FieldSpec {
  kind: KindName;
  nullable: boolean;
  /** An import line's null means "leave it out" (the default), though the API never shows null. */
  nullMeansDefault?: boolean;
  /** An import line must give it. */
  required?: boolean;
  /** Not read from an import line as given (`org_id` is derived from the owner, D1; `created_at` defaults at the swap). */
  derived?: boolean;
  description: string;
  examples: readonly unknown[];
}

const DATE = 'ISO 8601 in UTC, always with milliseconds and a trailing Z, e.g. 2026-10-01T08:30:00.000Z.';

// The `description`s are published in the OpenAPI document (openapi.ts): they state each rule in
// plain words, for the users of that document.
export const LISTING_FIELDS = {
  id: { kind: 'uuid', nullable: false, required: true, description: 'The listing\'s stable, unique id.', examples: ['3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'] },
  building_id: { kind: 'uuid', nullable: false, required: true, description: 'The building the unit is in.', examples: ['9a1d7c3e-5f2b-4a86-b0e4-7c6d2e8f1a35'] },
  org_id: { kind: 'uuid', nullable: true, derived: true, description: 'The owning organisation\'s id; null when the owner is an individual landlord.', examples: ['c2e4a6b8-1d3f-4a5c-8e7b-9f0a1b2c3d4e', null] },
  title: { kind: 'text', nullable: true, description: 'The listing\'s headline.', examples: ['Ground-floor cafe with outdoor seating'] },
  size_sqft: { kind: 'number', nullable: true, description: 'Floor area in square feet.', examples: [1250] },
  usage_types: {
    kind: 'usageTypes', nullable: false, required: true,
    description: 'Usage tags: the main type, then the sub-type where one is set. Main types and their sub-types: Office (Shared Office); F&B (Pub, Cafe, Restaurant, Cloud Kitchen); Industrial (Food Factory, Warehouse); Retail (Kiosk, Shop, Anchor); Clinic (none).',
    examples: [['F&B', 'Cafe'], ['Office']],
  },
  price: { kind: 'number', nullable: true, description: 'Asking rent in `currency`, per `price_basis` (typically per square foot per month). There is no formatted price string.', examples: [9.5] },
  price_basis: {
    kind: 'priceBasis', nullable: true,
    description: 'What `price` is per: `per_sqft_per_month` (rent per square foot per month) or `per_month` (rent for the whole unit per month); null when not set. Filters and sorts on `price` compare the number as given, whatever its basis.',
    examples: ['per_sqft_per_month', 'per_month', null],
  },
  currency: { kind: 'currency', nullable: false, required: true, description: 'The ISO 4217 code of `price`.', examples: ['SGD'] },
  is_takeover: { kind: 'flag', nullable: false, description: 'True when the listing is a lease takeover (assignment).', examples: [false] },
  is_featured: { kind: 'flag', nullable: false, description: 'True when the listing is promoted. Featured listings come first in the list.', examples: [true] },
  status: { kind: 'status', nullable: false, required: true, description: 'Always `active`: the API shows active listings only.', examples: ['active'] },
  expiry_date: { kind: 'date', nullable: true, description: `When the listing expires; it drops out of the API at that instant. ${DATE}`, examples: ['2027-03-31T15:59:59.000Z', null] },
  available_from: { kind: 'date', nullable: true, description: `When the space becomes available. ${DATE}`, examples: ['2026-12-01T00:00:00.000Z'] },
  min_lease_tenure: { kind: 'tenure', nullable: true, description: 'Minimum lease term as free text, in the form "<number> months".', examples: ['24 months'] },
  view_count: { kind: 'count', nullable: false, description: 'Total views on the public site.', examples: [1874] },
  inquiry_count: { kind: 'count', nullable: false, description: 'Total inquiries received.', examples: [23] },
  building_name: { kind: 'text', nullable: true, description: 'The building or complex name.', examples: ['Telok Ayer Point'] },
  street_address: { kind: 'text', nullable: true, description: 'The building\'s street address.', examples: ['18 Telok Ayer Street'] },
  location: {
    kind: 'location', nullable: true,
    description: 'Where the listing is, in WGS 84 decimal degrees (`lat` -90 to 90, `lng` -180 to 180); null when not set. `near`, `bbox` and `sort=distance` use it; a listing without a location never matches `near` or `bbox`.',
    examples: [{ lat: 1.2812, lng: 103.8486 }, null],
  },
  images: {
    kind: 'images', nullable: false, nullMeansDefault: true,
    description: 'Public, watermarked image URLs (absolute https; plain http only on a loopback host such as a local server\'s localhost); fetching them needs no key and no CORS. [] means no photos.',
    examples: [['https://cdn.example.com/listings/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71/1.jpg'], []],
  },
  cover_image_index: { kind: 'count', nullable: false, description: 'The cover image is `images[cover_image_index]`; 0 when there are no images.', examples: [1] },
  url: { kind: 'url', nullable: false, required: true, description: 'The listing\'s canonical public page.', examples: ['https://www.example.com/listings/3f6c1a2e-8b4d-4e7a-9c15-2d8e6f0a4b71'] },
  created_at: { kind: 'date', nullable: false, derived: true, description: `When the listing was created. ${DATE}`, examples: ['2026-10-14T02:45:11.382Z'] },
} as const satisfies Record<string, FieldSpec>;

type Fields = typeof LISTING_FIELDS;
export type ListingField = keyof Fields;
export const LISTING_FIELD_NAMES = Object.keys(LISTING_FIELDS) as ListingField[];

type Nullable<F extends ListingField, T> = Fields[F]['nullable'] extends true ? T | null : T;

/** The listing object of the API (spec 2.1): every field always present, null where unset (D12). */
export type Listing = { [F in ListingField]: Nullable<F, ApiOf<Fields[F]['kind']>> };
/** The stored form of the listing object's fields (the listings table adds owner, country and bookkeeping). */
export type StoredListingFields = { [F in ListingField]: F extends 'status' ? string : Nullable<F, StoredOf<Fields[F]['kind']>> };

/** The JSON schema of the listing object, in the table's order: published, and checked against answers. */
export function listingProperties(): Record<ListingField, Json> {
  return Object.fromEntries(LISTING_FIELD_NAMES.map((name) => {
    const spec: FieldSpec = LISTING_FIELDS[name];
    const schema = (KINDS[spec.kind] as Kind<unknown, unknown>).schema;
    const nullable = spec.nullable ? { type: [schema.type, 'null'], ...(Array.isArray(schema.enum) && { enum: [...(schema.enum as unknown[]), null] }) } : {};
    return [name, { ...schema, ...nullable, description: spec.description, examples: spec.examples } as Json];
  })) as Record<ListingField, Json>;
}

/** A stored row as the API shows it. */
export function toListing(row: StoredListingFields): Listing {
  const listing: Record<string, unknown> = {};
  for (const name of LISTING_FIELD_NAMES) {
    const value = row[name];
    const kind = KINDS[LISTING_FIELDS[name].kind] as Kind<unknown, unknown>;
    listing[name] = value === null ? null : kind.toApi(value);
  }
  return listing as Listing;
}

/**
 * For each field of the listing object, in order: its name and the JSON of its API value from
 * the stored one (`null` for null), the same text as `JSON.stringify` of `toListing` gives it.
 * listings/body.ts writes a listing's JSON with these, without building the object first.
 */
export const LISTING_FIELD_JSON: ReadonlyArray<readonly [ListingField, (stored: unknown) => string]> = LISTING_FIELD_NAMES.map((name) => {
  const kind = KINDS[LISTING_FIELDS[name].kind] as Kind<unknown, unknown>;
  const toJson = kind.toJson ?? ((stored: unknown) => JSON.stringify(kind.toApi(stored)));
  return [name, (stored: unknown) => (stored === null ? 'null' : toJson(stored))] as const;
});

/**
 * Reads one field of an import line by its kind: the stored value, the default when it is left
 * out, or a problem to report. `required` fields may not be left out or null.
 */
export function readField(name: ListingField, value: unknown): { value: unknown } | { problem: string } {
  const spec: FieldSpec = LISTING_FIELDS[name];
  const kind = KINDS[spec.kind] as Kind<unknown, unknown>;
  if (value === undefined || (value === null && (spec.required || spec.nullable || spec.nullMeansDefault))) {
    if (spec.required) return { problem: 'is required' };
    return { value: value === null && spec.nullable ? null : (kind.fallback ?? null) };
  }
  return kind.read(value, spec.nullable);
}

/** Fields an import line gives as they are (`org_id` and `created_at` are settled by the import itself). */
export const IMPORTED_FIELDS = LISTING_FIELD_NAMES.filter((name) => !(LISTING_FIELDS[name] as FieldSpec).derived);
