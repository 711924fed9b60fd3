import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Where a reader of the change feed (D22) has got to. Opaque to clients and tamper-evident: the
 * position and the tenant it belongs to, signed with the deployment's key (migration 006), so that
 * a cursor edited, forged, or issued to another account or country is refused, and a cursor from
 * one instance works on every other.
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

export class CursorError extends Error {}

const VERSION = 1;
const MAC_LENGTH = 22; // base64url characters: 132 bits of HMAC-SHA256

function mac(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url').slice(0, MAC_LENGTH);
}

export function encodeCursor(secret: string, tenant: { ownerAccountId: string; country: string }, p: FeedPosition): string {
  const payload = Buffer.from(JSON.stringify([VERSION, tenant.ownerAccountId, tenant.country, p.phase === 'snapshot' ? 's' : 'l', p.seq, p.expiry, p.expiryId, p.updatedAt, p.afterId])).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** The position of a cursor this deployment issued for this tenant; CursorError for anything else. */
export function decodeCursor(secret: string, tenant: { ownerAccountId: string; country: string }, cursor: string): FeedPosition {
  const dot = cursor.indexOf('.');
  if (dot <= 0 || cursor.length > 1000) throw new CursorError('malformed');
  const payload = cursor.slice(0, dot);
  const given = Buffer.from(cursor.slice(dot + 1));
  const expected = Buffer.from(mac(secret, payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new CursorError('not signed by this deployment');
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new CursorError('malformed');
  }
  if (!Array.isArray(fields) || fields.length !== 9 || fields[0] !== VERSION) throw new CursorError('malformed');
  const [, owner, country, phase, seq, expiry, expiryId, updatedAt, afterId] = fields as [number, string, string, string, number, string, string, string, string];
  if (owner !== tenant.ownerAccountId || country !== tenant.country) throw new CursorError('issued for another account or country');
  if ((phase !== 's' && phase !== 'l') || !Number.isSafeInteger(seq) || seq < 0) throw new CursorError('malformed');
  for (const text of [expiry, expiryId, updatedAt, afterId]) if (typeof text !== 'string') throw new CursorError('malformed');
  return { phase: phase === 's' ? 'snapshot' : 'log', seq, expiry, expiryId, updatedAt, afterId };
}
