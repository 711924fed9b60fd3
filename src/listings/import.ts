import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { isCountry } from '../core/countries.js';
import { canonicalUuid, MAX_INT32 } from '../core/formats.js';
import type { AccountKind, ImportCounts, StagedListing, Store } from '../storage/index.js';
import { usageTypesProblem } from './taxonomy.js';

/** A bad import line: the message names the line and the field (OPERATIONS "Import format"). */
export class ImportError extends Error {
  constructor(readonly line: number, readonly field: string | undefined, problem: string) {
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

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** The fields an import line may carry: the listing object (spec 2.1) plus OPERATIONS' three. */
const FIELDS = new Set([
  'id', 'building_id', 'org_id', 'title', 'size_sqft', 'usage_types', 'price', 'currency', 'is_takeover',
  'is_featured', 'status', 'expiry_date', 'available_from', 'min_lease_tenure', 'view_count', 'inquiry_count',
  'building_name', 'street_address', 'images', 'cover_image_index', 'url', 'created_at',
  'country', 'owner_account_id',
]);

/**
 * Parses an ISO 8601 date or date-time with a zone (`Z` or `+hh:mm`; a bare date is midnight UTC)
 * into the one stored form, `Date#toISOString` (D13). Undefined for anything else, including
 * impossible dates such as 2026-02-30.
 */
export function parseIsoDate(value: string): string | undefined {
  const m = ISO_DATE_TIME.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  if (+mo! < 1 || +mo! > 12 || +d! < 1 || +h > 23 || +mi > 59 || +s > 59) return undefined;
  const daysInMonth = new Date(Date.UTC(+y!, +mo!, 0)).getUTCDate();
  if (+d! > daysInMonth) return undefined;
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${(frac + '000').slice(0, 3)}${zone}`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

type Json = Record<string, unknown>;

/** Field readers: each returns the stored value or throws the line's ImportError. */
class LineReader {
  constructor(readonly line: number, readonly obj: Json) {}

  fail(field: string, problem: string): never {
    throw new ImportError(this.line, field, problem);
  }

  has(field: string): boolean {
    return this.obj[field] !== undefined;
  }

  uuid(field: string): string {
    const v = this.obj[field];
    if (v === undefined || v === null) this.fail(field, 'is required');
    const id = canonicalUuid(v);
    if (id === undefined) this.fail(field, `expected a UUID, got ${show(v)}`);
    return id;
  }

  string(field: string, { required = false, pattern, hint }: { required?: boolean; pattern?: RegExp; hint?: string } = {}): string | null {
    const v = this.obj[field];
    if (v === undefined || v === null) {
      if (required) this.fail(field, 'is required');
      return null;
    }
    if (typeof v !== 'string') this.fail(field, `expected a string${required ? '' : ' or null'}, got ${show(v)}`);
    if (pattern && !pattern.test(v)) this.fail(field, `expected ${hint}, got ${show(v)}`);
    return v;
  }

  number(field: string): number | null {
    const v = this.obj[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) this.fail(field, `expected a non-negative number or null, got ${show(v)}`);
    return v;
  }

  integer(field: string, fallback: number): number {
    const v = this.obj[field];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_INT32) {
      this.fail(field, `expected a whole number from 0 to ${MAX_INT32}, got ${show(v)}`);
    }
    return v;
  }

  boolean(field: string): number {
    const v = this.obj[field];
    if (v === undefined) return 0;
    if (typeof v !== 'boolean') this.fail(field, `expected true or false, got ${show(v)}`);
    return v ? 1 : 0;
  }

  date(field: string): string | null {
    const v = this.obj[field];
    if (v === undefined || v === null) return null;
    const parsed = typeof v === 'string' ? parseIsoDate(v) : undefined;
    if (parsed === undefined) this.fail(field, `expected an ISO 8601 date-time in UTC such as 2026-10-01T08:30:00Z, got ${show(v)}`);
    return parsed;
  }

  strings(field: string, required: boolean): string[] {
    const v = this.obj[field];
    if (v === undefined || v === null) {
      if (required) this.fail(field, 'is required');
      return [];
    }
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) this.fail(field, `expected an array of strings, got ${show(v)}`);
    return v as string[];
  }
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function httpUrl(value: string, httpsOnly: boolean): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || (!httpsOnly && url.protocol === 'http:')) && url.hostname !== '';
  } catch {
    return false;
  }
}

export interface ParsedLine {
  line: number;
  /** `created_at` null when the line gave none: an update keeps the stored one, an insert takes the import time. */
  row: StagedListing;
  /** As given, if given: checked against the owner's kind once owners are known (D1). */
  orgId: string | null | undefined;
}

/** Validates one NDJSON line into a row. `orgId` is settled later, once the owner's kind is known. */
export function parseImportLine(text: string, line: number): ParsedLine {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (error) {
    throw new ImportError(line, undefined, `not valid JSON (${(error as Error).message})`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ImportError(line, undefined, 'expected a JSON object');
  for (const field of Object.keys(obj)) {
    if (!FIELDS.has(field)) throw new ImportError(line, field, 'is not a field of a listing');
  }
  const r = new LineReader(line, obj as Json);

  const country = r.string('country', { required: true })!;
  if (!isCountry(country)) r.fail('country', `expected one of sg, my, uk, in, us, ca, au, nz, got ${show(country)}`);
  const usageTypes = r.strings('usage_types', true);
  const usageProblem = usageTypesProblem(usageTypes);
  if (usageProblem) r.fail('usage_types', usageProblem);
  const images = r.strings('images', false);
  images.forEach((url, i) => {
    if (!httpUrl(url, true)) r.fail('images', `entry ${i} is not an absolute https URL: ${show(url)}`);
  });
  const cover = r.integer('cover_image_index', 0);
  if (images.length === 0 ? cover !== 0 : cover >= images.length) {
    r.fail('cover_image_index', images.length === 0 ? `must be 0 when there are no images, got ${cover}` : `must be an index into images (0 to ${images.length - 1}), got ${cover}`);
  }
  const url = r.string('url', { required: true })!;
  if (!httpUrl(url, false)) r.fail('url', `expected an absolute http(s) URL, got ${show(url)}`);
  const orgId = r.obj.org_id === undefined ? undefined : r.obj.org_id === null ? null : r.uuid('org_id');

  return {
    line,
    orgId,
    row: {
      id: r.uuid('id'),
      line,
      owner_account_id: r.uuid('owner_account_id'),
      country,
      org_id: null,
      building_id: r.uuid('building_id'),
      title: r.string('title'),
      size_sqft: r.number('size_sqft'),
      usage_types: JSON.stringify(usageTypes),
      price: r.number('price'),
      currency: r.string('currency', { required: true, pattern: /^[A-Z]{3}$/, hint: 'a three-letter ISO 4217 code such as SGD' })!,
      is_takeover: r.boolean('is_takeover'),
      is_featured: r.boolean('is_featured'),
      status: r.string('status', { required: true, pattern: /^[a-z][a-z_]{0,31}$/, hint: 'a lowercase status such as active, leased, expired or draft' })!,
      expiry_date: r.date('expiry_date'),
      available_from: r.date('available_from'),
      min_lease_tenure: r.string('min_lease_tenure', { pattern: /^[0-9]{1,4} months?$/, hint: 'the form "<number> months"' }),
      view_count: r.integer('view_count', 0),
      inquiry_count: r.integer('inquiry_count', 0),
      building_name: r.string('building_name'),
      street_address: r.string('street_address'),
      images: JSON.stringify(images),
      cover_image_index: cover,
      url,
      created_at: r.date('created_at'),
    },
  };
}

/** Lines staged per batch (bounded memory, whatever the file's size). */
const BATCH = 1000;

/** 31-bit hash of an id: a set of these finds repeated ids in a file of any size in little memory. */
function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 1;
}

export interface ImportOptions {
  /** Called every `progressEvery` lines with the count read so far (for a progress line). */
  onProgress?(lines: number): void;
  progressEvery?: number;
}

/**
 * Upserts listings from NDJSON (OPERATIONS "Import format"), all or nothing, streaming: lines are
 * validated one by one, in order, and staged in batches (storage/listings.ts `importing`), so a
 * file of any size is never held in memory; the first bad line (its number and field) is
 * reported and nothing is written. Then everything is swapped in with one short transaction.
 * Blank lines are skipped; a UTF-8 byte-order mark at the start of the file is ignored.
 */
export async function importListings(store: Store, input: Readable, now: Date, options: ImportOptions = {}): Promise<ImportCounts> {
  const progressEvery = options.progressEvery ?? 10_000;
  return store.listings.importing(async (session) => {
    const kinds = new Map<string, AccountKind | null>();
    const seen = new Set<number>();
    let batch: StagedListing[] = [];
    const batchLines = new Map<string, number>();
    let lineNumber = 0;
    let staged = 0;

    /** The line that gave this id earlier in the file, if any. */
    const earlierLine = async (id: string): Promise<number | undefined> => {
      const hash = idHash(id);
      if (!seen.has(hash)) {
        seen.add(hash);
        return undefined;
      }
      return batchLines.get(id) ?? (await session.stagedLines([id])).get(id);
    };
    const kindOf = async (owner: string): Promise<AccountKind | null> => {
      let kind = kinds.get(owner);
      if (kind === undefined) {
        kind = (await session.accountKinds([owner])).get(owner) ?? null;
        kinds.set(owner, kind);
      }
      return kind;
    };
    const flush = async () => {
      await session.stage(batch);
      staged += batch.length;
      batch = [];
      batchLines.clear();
    };

    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      lineNumber++;
      if (options.onProgress && lineNumber % progressEvery === 0) options.onProgress(lineNumber);
      const text = lineNumber === 1 && raw.startsWith('\uFEFF') ? raw.slice(1) : raw;
      if (text.trim() === '') continue;
      const parsed = parseImportLine(text, lineNumber);
      const { row } = parsed;
      const first = await earlierLine(row.id);
      if (first !== undefined) throw new ImportError(lineNumber, 'id', `${row.id} is already on line ${first}; give each listing once`);
      const kind = await kindOf(row.owner_account_id);
      if (kind === null) throw new ImportError(lineNumber, 'owner_account_id', `no account ${row.owner_account_id}; create it first (account create)`);
      // D1: org_id is the owner's id for an organisation and null for an individual landlord.
      const derived = kind === 'organisation' ? row.owner_account_id : null;
      if (parsed.orgId !== undefined && parsed.orgId !== derived) {
        throw new ImportError(lineNumber, 'org_id', `must be ${derived === null ? 'null (the owner is an individual)' : `the owner's id ${derived}`} or omitted`);
      }
      row.org_id = derived;
      batch.push(row);
      batchLines.set(row.id, lineNumber);
      if (batch.length >= BATCH) await flush();
    }
    await flush();
    if (staged === 0) return { inserted: 0, updated: 0, unchanged: 0 };
    return session.swapIn(now.toISOString());
  });
}
