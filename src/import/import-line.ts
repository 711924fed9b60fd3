import { COUNTRY_CODES, isCountry } from '../core/countries.js';
import { canonicalUuid } from '../core/formats.js';
import type { StagedListing } from '../storage/index.js';
import { IMPORTED_FIELDS, LISTING_FIELD_NAMES, readField, show, type ListingField } from '../listings/fields.js';
import { listingSearchWords, type SearchedFields } from '../listings/search-words.js';

/**
 * One line of an import file, read and checked on its own (OPERATIONS "Import format"): no
 * database, no other line. A pure function of the line's text, so that a worker thread can run it
 * (import-lines.ts) while the import stages what it has read.
 */

/** A bad import line: the message names the line and the field (OPERATIONS "Import format"). */
export class ImportError extends Error {
  constructor(readonly line: number, readonly field: string | undefined, readonly problem: string) {
    // A file's text (a field name, a value, a parser's excerpt) must not drive the operator's
    // terminal: control and direction-changing characters are shown escaped.
    super(escapeControlCharacters(`line ${line}${field === undefined ? '' : `, field "${field}"`}: ${problem}`));
    this.name = 'ImportError';
  }
}

/** C0 and C1 controls (ESC starts terminal sequences), and bidirectional overrides, as \uXXXX. */
export function escapeControlCharacters(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Fields an import line may carry besides the listing object's (OPERATIONS "Import format"). */
const PLACEMENT_FIELDS = ['country', 'owner_account_id'] as const;
const KNOWN_FIELDS: ReadonlySet<string> = new Set<string>([...LISTING_FIELD_NAMES, ...PLACEMENT_FIELDS]);

/** A line's listing, before its owner is known (its `org_id` and JSON come with the owner, D1). */
export type ParsedListing = Omit<StagedListing, 'body_head'>;

export interface ParsedLine {
  line: number;
  /** `created_at` null when the line gave none: an update keeps the stored one, an insert takes the import time. */
  row: ParsedListing;
  /** As given, if given: checked against the owner's kind once owners are known (D1). */
  orgId: string | null | undefined;
}

/**
 * Validates one NDJSON line into a row: each field by its declaration (fields.ts), then the rules
 * between fields. `orgId` is settled later, once the owner's kind is known.
 */
export function parseImportLine(text: string, line: number): ParsedLine {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (error) {
    throw new ImportError(line, undefined, `not valid JSON (${(error as Error).message})`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ImportError(line, undefined, 'expected a JSON object');
  const given = obj as Record<string, unknown>;
  for (const field of Object.keys(given)) {
    if (!KNOWN_FIELDS.has(field)) throw new ImportError(line, field, 'is not a field of a listing');
  }
  const read = (field: ListingField, value: unknown = given[field]): unknown => {
    const result = readField(field, value);
    if ('problem' in result) throw new ImportError(line, field, result.problem);
    return result.value;
  };

  const country = given.country;
  if (country === undefined || country === null) throw new ImportError(line, 'country', 'is required');
  if (!isCountry(country)) throw new ImportError(line, 'country', `expected one of ${COUNTRY_CODES.join(', ')}, got ${show(country)}`);
  const row: Record<string, unknown> = { line, country };
  // In the order of the listing object, so that the first bad field of a line is the one named.
  for (const field of IMPORTED_FIELDS) {
    row[field] = read(field);
    if (field === 'id') row.owner_account_id = readOwner(given.owner_account_id, line);
  }
  // Between fields: the cover is one of the images (or 0 when there are none). `images` was read
  // above: an array of strings, or left out or null (none).
  const imageCount = Array.isArray(given.images) ? given.images.length : 0;
  const cover = row.cover_image_index as number;
  if (imageCount === 0 ? cover !== 0 : cover >= imageCount) {
    throw new ImportError(line, 'cover_image_index', imageCount === 0 ? `must be 0 when there are no images, got ${cover}` : `must be an index into images (0 to ${imageCount - 1}), got ${cover}`);
  }
  const orgId = given.org_id === undefined ? undefined : given.org_id === null ? null : (read('org_id') as string);
  row.org_id = null;
  row.created_at = given.created_at === undefined || given.created_at === null ? null : read('created_at');
  // D26's words, folded here: a file's lines are read in a worker thread (import-lines.ts), beside
  // the staging on the main one.
  row.search_words = listingSearchWords(row as unknown as SearchedFields);
  return { line, orgId, row: row as unknown as ParsedListing };
}

/** The owning account (D1): a UUID, required. */
function readOwner(value: unknown, line: number): string {
  if (value === undefined || value === null) throw new ImportError(line, 'owner_account_id', 'is required');
  const id = canonicalUuid(value);
  if (id === undefined) throw new ImportError(line, 'owner_account_id', `expected a UUID, got ${show(value)}`);
  return id;
}
