import { LISTING_FIELD_JSON, LISTING_FIELD_NAMES, type StoredListingFields } from './fields.js';

/**
 * A listing's JSON (spec 2.1) is computed when the listing is written, not when it is read: the
 * listings table keeps it in `body` (migration 009), and the read path sends those bytes. Reading
 * the 26 columns of a row and encoding them again cost about 12 µs a listing (most of a cold page
 * of 20); reading one text column costs about 4.
 *
 * `body` is derived data: the same function of the row's other columns everywhere. The import
 * stages each line's JSON up to its `created_at` value (`listingBodyHead`), because only the swap
 * knows which `created_at` a listing ends up with (the line's, the stored one, or the import's
 * time); the swap completes it in SQL with the date and BODY_TAIL. A change to the listing
 * object's JSON is a migration that computes every body again (as 009 does).
 *
 * The text is `JSON.stringify(toListing(row))` (fields.ts), whose keys follow the declaration's
 * order (the schema's), so the answers match the published schema field for field. It is written
 * field by field (LISTING_FIELD_JSON) rather than by building that object and encoding it: an
 * import writes one per line, and building the object (parsing the stored arrays again) cost as
 * much as validating the line. A unit test holds the two equal.
 */
export function listingBodyOf(row: StoredListingFields): string {
  return `${fieldsJson(row, LISTING_FIELD_JSON.length)}}`;
}

// `created_at` is the listing object's last field, so a body is its head, the date, and this tail.
if (LISTING_FIELD_NAMES.at(-1) !== 'created_at') throw new Error('listings/body.ts expects created_at to be the last field of the listing object');
const HEAD_END = ',"created_at":"';
/** What follows the `created_at` value in a body: the swap appends it in SQL. */
export const BODY_TAIL = '"}';

/**
 * A listing's JSON up to (and with the opening quote of) its `created_at` value. A date is stored
 * validated (ISO 8601, `parseIsoDate`), so it needs no JSON escaping when appended.
 */
export function listingBodyHead(fields: Omit<StoredListingFields, 'created_at'>): string {
  return fieldsJson(fields, LISTING_FIELD_JSON.length - 1) + HEAD_END;
}

/** `"name":value` of each field, the key of the first after the opening brace. */
const FIELD_KEYS = LISTING_FIELD_JSON.map(([name], i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`);

/** The object's JSON up to the end of its first `count` fields. */
function fieldsJson(fields: Partial<StoredListingFields>, count: number): string {
  const values = fields as Record<string, unknown>;
  let json = '';
  for (let i = 0; i < count; i++) {
    const [name, toJson] = LISTING_FIELD_JSON[i]!;
    json += FIELD_KEYS[i] + toJson(values[name]);
  }
  return json;
}
