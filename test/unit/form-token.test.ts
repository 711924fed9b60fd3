import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { FORM_CLAIM_RETAIN_MS, FORM_TTL_MS, newFormToken, readFormToken } from '../../src/dashboard/forms.js';

describe('single-use form tokens (dashboard/forms.ts)', () => {
  const session = randomBytes(32).toString('base64url');
  const t0 = Date.parse('2026-11-22T10:00:00.000Z');

  it('a token reads back as its nonce for the session that got it, until it expires', () => {
    const token = newFormToken(session, t0);
    const read = readFormToken(session, token, t0);
    assert.ok(read);
    assert.match(read.nonce, /^[A-Za-z0-9_-]{22}$/);
    assert.deepEqual(readFormToken(session, token, t0 + FORM_TTL_MS), read, 'good up to the TTL');
    assert.equal(readFormToken(session, token, t0 + FORM_TTL_MS + 1), undefined, 'expired');
    assert.equal(readFormToken(session, token, t0 - 60_001), undefined, 'issued in the future (beyond clock tolerance)');
    assert.ok(readFormToken(session, token, t0 - 60_000), 'a clock a minute behind is tolerated');
  });

  it('every token is new, and claims outlive the forms they stand for', () => {
    const nonces = new Set(Array.from({ length: 100 }, () => readFormToken(session, newFormToken(session, t0), t0)!.nonce));
    assert.equal(nonces.size, 100);
    assert.ok(FORM_CLAIM_RETAIN_MS > FORM_TTL_MS);
  });

  it("another session's token, an edited one, and anything that is not a token are refused", () => {
    const token = newFormToken(session, t0);
    const [issued, nonce, mac] = token.split('.') as [string, string, string];
    const other = newFormToken(randomBytes(32).toString('base64url'), t0);
    const later = (t0 + 1000).toString(36);
    const otherNonce = randomBytes(16).toString('base64url');
    for (const bad of [
      other, `${later}.${nonce}.${mac}`, `${issued}.${otherNonce}.${mac}`, `${issued}.${nonce}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      '', 'x', `${token}.`, ` ${token}`, token.toUpperCase(), undefined, null, 42, [token],
    ]) {
      assert.equal(readFormToken(session, bad, t0), undefined, String(bad));
    }
  });
});
