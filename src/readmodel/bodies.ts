import { createHash } from 'node:crypto';
import type { IndexEntry } from './tenant-index.js';

/** An answer's body as the read path keeps and sends it. */
export interface Body {
  /** The UTF-8 bytes of the JSON answer. */
  bytes: Buffer;
  /** Strong, from the bytes alone: the same body has the same ETag on every instance, after restarts (D21). */
  etag: string;
}

export function etagOf(bytes: Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`;
}

export function toBody(text: string): Body {
  const bytes = ownBuffer(text);
  return { bytes, etag: etagOf(bytes) };
}

/**
 * A serialised listing: a fragment of every page that shows it, and the whole body of its
 * detail answer. Its ETag is computed the first time a detail answer needs it: a page built
 * from twenty listings has no use for twenty hashes.
 */
export class ListingBody implements Body {
  private tag: string | undefined;
  /**
   * `changeSeq`: the change of the listing it shows (answered only for an index entry at that
   * change). `readAt`: clock ms when it was read from the database (a page made of it expires a
   * TTL after its oldest).
   */
  constructor(
    readonly bytes: Buffer,
    readonly changeSeq: number,
    readonly readAt: number,
  ) {}
  get etag(): string {
    return (this.tag ??= etagOf(this.bytes));
  }
}

/**
 * A cached serialised listing for an index entry: only at the entry's change. The cache is keyed by
 * the id alone (the string the index holds, whose hash is computed once), not by a key made per
 * read; a newer change of the listing replaces the older one.
 */
export function bodyAt(cached: ListingBody | undefined, entry: IndexEntry): ListingBody | undefined {
  return cached !== undefined && cached.changeSeq === entry.changeSeq ? cached : undefined;
}

/** D8: never 0, so "request page=1, 2, ... until page equals pages" ends for every total. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

const PAGE_START = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');

/** The envelope of spec 2.3, in the order of its schema; items are the cached listings' JSON. */
export function pageBody(items: readonly ListingBody[], page: number, perPage: number, total: number): Body {
  const parts: Buffer[] = [PAGE_START];
  for (const [i, item] of items.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(item.bytes);
  }
  parts.push(Buffer.from(`],"page":${page},"per_page":${perPage},"total":${total},"pages":${pageCount(total, perPage)}}`));
  const bytes = ownConcat(parts);
  return { bytes, etag: etagOf(bytes) };
}

/**
 * Cached bytes in memory of their own. `Buffer.from` and `Buffer.concat` put anything under 4 KB
 * in a slice of a shared 8 KB pool, so one cached listing (about 1 KB) or small page kept its whole
 * slab alive, with whatever else was cut from it: the caches held far more memory than their byte
 * bound counts (the scale bench's RSS after its phases fell by about a third with this).
 */
export function ownBuffer(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

function ownConcat(parts: readonly Buffer[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const bytes = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(bytes, at);
  return bytes;
}
