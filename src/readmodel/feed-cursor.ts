import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Where a reader of the change feed (D22) has got to. Opaque, tamper-evident and secret: the
 * position is encrypted and authenticated with keys derived from the deployment's secret
 * (migration 006), bound to the tenant it was issued for, so that
 *  - a cursor edited, forged, or issued to another account or country is refused (D22);
 *  - a cursor reveals nothing beyond the tenant's own position (issue 29 item 8): the change
 *    sequence inside it is global, and readable it would tell one tenant how many changes the
 *    others make;
 *  - a cursor from one instance works on every other, and the same position always gives the same
 *    cursor, so that an answer with no new events is byte for byte the previous one (D21, D22).
 *
 * The construction is a synthetic IV (SIV, RFC 5297's idea with standard parts): the tag is an
 * HMAC-SHA256 of the tenant and the padded position, and it is the IV of AES-256-CTR over the
 * position. Deterministic encryption leaks only equality of positions, which the tenant knows.
 * The position is padded to a fixed length so that the cursor's length says nothing either.
 *
 * - `snapshot`: the first replay, sending the tenant's visible listings in the order their state
 *   took effect, from `updatedAt`/`afterId`; `seq` and `expiry` are where the log takes over.
 * - `log`: every change after sequence `seq`, and every expiry after (`expiry`, `expiryId`).
 */
export interface FeedPosition {
  phase: 'snapshot' | 'log';
  seq: number;
  expiry: string;
  expiryId: string;
  updatedAt: string;
  afterId: string;
}

interface CursorTenant {
  ownerAccountId: string;
  country: string;
}

export class CursorError extends Error {}

/** Bytes of the encrypted position: a position's JSON is at most about 160 (two UUIDs, two ISO dates, a sequence). */
const POSITION_BYTES = 192;
const TAG_BYTES = 16;
/** More than any cursor this module writes; longer input is refused before any work. */
const MAX_CURSOR_LENGTH = 1000;

interface CursorKeys {
  secret: string;
  encryption: Buffer;
  authentication: Buffer;
}
let keys: CursorKeys | undefined;

/** Separate keys for encryption and authentication, derived once per deployment secret. */
function keysFor(secret: string): CursorKeys {
  if (keys?.secret !== secret) {
    const derive = (purpose: string) => createHmac('sha256', secret).update(`listings-api feed cursor v2 ${purpose}`).digest();
    keys = { secret, encryption: derive('encryption'), authentication: derive('authentication') };
  }
  return keys;
}

function tagOf(authentication: Buffer, tenant: CursorTenant, position: Buffer): Buffer {
  return createHmac('sha256', authentication).update(`${tenant.ownerAccountId}\n${tenant.country}\n`).update(position).digest().subarray(0, TAG_BYTES);
}

function aesCtr(encryption: Buffer, iv: Buffer, input: Buffer, decrypt: boolean): Buffer {
  const cipher = decrypt ? createDecipheriv('aes-256-ctr', encryption, iv) : createCipheriv('aes-256-ctr', encryption, iv);
  return Buffer.concat([cipher.update(input), cipher.final()]);
}

export function encodeCursor(secret: string, tenant: CursorTenant, p: FeedPosition): string {
  const { encryption, authentication } = keysFor(secret);
  const json = Buffer.from(JSON.stringify([p.phase === 'snapshot' ? 's' : 'l', p.seq, p.expiry, p.expiryId, p.updatedAt, p.afterId]));
  // Padded with spaces (JSON allows them after the value) to a fixed length.
  const position = Buffer.alloc(Math.max(POSITION_BYTES, Math.ceil(json.length / 64) * 64), 0x20);
  json.copy(position);
  const tag = tagOf(authentication, tenant, position);
  return Buffer.concat([tag, aesCtr(encryption, tag, position, false)]).toString('base64url');
}

/** The position of a cursor this deployment issued for this tenant; CursorError for anything else. */
export function decodeCursor(secret: string, tenant: CursorTenant, cursor: string): FeedPosition {
  if (cursor.length > MAX_CURSOR_LENGTH) throw new CursorError('malformed');
  if (cursor.includes('.')) return decodeSignedCursor(secret, tenant, cursor);
  const bytes = Buffer.from(cursor, 'base64url');
  // Node's decoder skips characters outside the alphabet: only the exact encoding is accepted.
  if (bytes.toString('base64url') !== cursor || bytes.length < TAG_BYTES + POSITION_BYTES || (bytes.length - TAG_BYTES) % 64 !== 0) {
    throw new CursorError('malformed');
  }
  const { encryption, authentication } = keysFor(secret);
  const tag = bytes.subarray(0, TAG_BYTES);
  const position = aesCtr(encryption, tag, bytes.subarray(TAG_BYTES), true);
  if (!timingSafeEqual(tag, tagOf(authentication, tenant, position))) throw new CursorError('not issued by this deployment for this tenant');
  let fields: unknown;
  try {
    fields = JSON.parse(position.toString('utf8'));
  } catch {
    throw new CursorError('malformed');
  }
  if (!Array.isArray(fields) || fields.length !== 6) throw new CursorError('malformed');
  const [phase, ...rest] = fields as [unknown, ...unknown[]];
  return positionOf(phase, rest);
}

function positionOf(phase: unknown, [seq, expiry, expiryId, updatedAt, afterId]: unknown[]): FeedPosition {
  if ((phase !== 's' && phase !== 'l') || !Number.isSafeInteger(seq) || (seq as number) < 0) throw new CursorError('malformed');
  for (const text of [expiry, expiryId, updatedAt, afterId]) if (typeof text !== 'string') throw new CursorError('malformed');
  return { phase: phase === 's' ? 'snapshot' : 'log', seq: seq as number, expiry: expiry as string, expiryId: expiryId as string, updatedAt: updatedAt as string, afterId: afterId as string };
}

// ---- The first cursor format: signed, not encrypted ---------------------------------------------

/**
 * Cursors issued before encryption (`<base64url JSON>.<HMAC>`) are still read, so that a site
 * polling across the upgrade (or a rolling deploy) keeps its place; new answers carry new cursors.
 * What they reveal, their holder already has.
 */
const SIGNED_VERSION = 1;
const SIGNED_MAC_LENGTH = 22; // base64url characters: 132 bits of HMAC-SHA256

function decodeSignedCursor(secret: string, tenant: CursorTenant, cursor: string): FeedPosition {
  const dot = cursor.indexOf('.');
  if (dot <= 0) throw new CursorError('malformed');
  const payload = cursor.slice(0, dot);
  const given = Buffer.from(cursor.slice(dot + 1));
  const expected = Buffer.from(createHmac('sha256', secret).update(payload).digest('base64url').slice(0, SIGNED_MAC_LENGTH));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new CursorError('not signed by this deployment');
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new CursorError('malformed');
  }
  if (!Array.isArray(fields) || fields.length !== 9 || fields[0] !== SIGNED_VERSION) throw new CursorError('malformed');
  const [, owner, country, phase, ...rest] = fields as unknown[];
  if (owner !== tenant.ownerAccountId || country !== tenant.country) throw new CursorError('issued for another account or country');
  return positionOf(phase, rest);
}
