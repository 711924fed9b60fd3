import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { CursorError, decodeCursor, encodeCursor, type FeedPosition } from '../../src/readmodel/feed-cursor.js';
import { prng } from '../support/random.js';

/** Change-feed cursors (D22; issue 29 item 8): tamper-evident, bound to a tenant, and revealing nothing. */
const secret = 'a deployment secret';
const tenant = { ownerAccountId: '0de30000-0000-4000-8000-000000000001', country: 'sg' };
const position: FeedPosition = {
  phase: 'log',
  seq: 126,
  expiry: '2026-11-27T16:02:11.284Z',
  expiryId: '03a2f52b-52f4-4350-8522-f9052e6c1384',
  updatedAt: '',
  afterId: '',
};

/** The first cursor format, as earlier releases wrote it (a frozen copy: base64url JSON, a dot, a truncated HMAC). */
function signedCursor(p: FeedPosition, owner = tenant.ownerAccountId): string {
  const payload = Buffer.from(JSON.stringify([1, owner, tenant.country, p.phase === 'snapshot' ? 's' : 'l', p.seq, p.expiry, p.expiryId, p.updatedAt, p.afterId])).toString('base64url');
  return `${payload}.${createHmac('sha256', secret).update(payload).digest('base64url').slice(0, 22)}`;
}

describe('feed cursors (D22, issue 29 item 8)', () => {
  it('round-trip: a position comes back as it went in, snapshot and log, at the extremes of each field', () => {
    const positions: FeedPosition[] = [
      position,
      { phase: 'snapshot', seq: 0, expiry: '', expiryId: '', updatedAt: '', afterId: '' },
      { phase: 'snapshot', seq: Number.MAX_SAFE_INTEGER, expiry: '2026-11-27T16:02:11.284Z', expiryId: position.expiryId, updatedAt: '2026-11-27T16:02:11.284Z', afterId: position.expiryId },
    ];
    for (const p of positions) assert.deepEqual(decodeCursor(secret, tenant, encodeCursor(secret, tenant, p)), p);
  });

  it('the same length whatever the position, and nothing of it readable', () => {
    const random = prng(29);
    const lengths = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const seq = Math.floor(random() * 10 ** Math.floor(random() * 16));
      const cursor = encodeCursor(secret, tenant, { ...position, seq, phase: random() < 0.5 ? 'log' : 'snapshot' });
      lengths.add(cursor.length);
      const text = Buffer.from(cursor, 'base64url').toString('latin1');
      assert.ok(!text.includes(String(seq)) || seq < 1000, 'the sequence is not in the cursor');
      assert.ok(!text.includes(tenant.ownerAccountId) && !/"[ls]",|\d{4}-\d\d-\d\dT/.test(text), 'no position fields');
    }
    assert.deepEqual([...lengths], [encodeCursor(secret, tenant, position).length]);
  });

  it('deterministic: the same position gives the same cursor (an answer with nothing new is byte for byte the previous one, D21)', () => {
    assert.equal(encodeCursor(secret, tenant, position), encodeCursor(secret, tenant, { ...position }));
    assert.notEqual(encodeCursor(secret, tenant, position), encodeCursor(secret, tenant, { ...position, seq: position.seq + 1 }));
  });

  it('any change to a cursor is refused: every byte flipped, cut, extended, other characters', () => {
    const cursor = encodeCursor(secret, tenant, position);
    const bytes = Buffer.from(cursor, 'base64url');
    for (let at = 0; at < bytes.length; at++) {
      const copy = Buffer.from(bytes);
      copy[at] = copy[at]! ^ 0x80;
      assert.throws(() => decodeCursor(secret, tenant, copy.toString('base64url')), CursorError, `byte ${at}`);
    }
    for (const bad of [cursor.slice(0, -1), cursor.slice(0, -4), `${cursor}AAAA`, `${cursor}=`, `${cursor.slice(0, 10)}*${cursor.slice(11)}`, `!${cursor}`, '', 'x'.repeat(2000)]) {
      assert.throws(() => decodeCursor(secret, tenant, bad), CursorError, bad.slice(0, 20));
    }
  });

  it('bound to its tenant and its deployment: another account, another country or another secret is refused', () => {
    const cursor = encodeCursor(secret, tenant, position);
    assert.throws(() => decodeCursor(secret, { ...tenant, country: 'my' }, cursor), CursorError);
    assert.throws(() => decodeCursor(secret, { ...tenant, ownerAccountId: '0de30000-0000-4000-8000-000000000002' }, cursor), CursorError);
    assert.throws(() => decodeCursor('another secret', tenant, cursor), CursorError);
  });

  it('cursors of the first, signed format are still read, so that a site keeps its place across the upgrade', () => {
    assert.deepEqual(decodeCursor(secret, tenant, signedCursor(position)), position);
    assert.throws(() => decodeCursor(secret, tenant, signedCursor(position, '0de30000-0000-4000-8000-000000000002')), CursorError);
    const [payload, mac] = signedCursor(position).split('.');
    assert.throws(() => decodeCursor(secret, tenant, `${payload}.${'A'.repeat(mac!.length)}`), CursorError);
  });
});
