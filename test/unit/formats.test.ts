import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalUuid, isUuid } from '../../src/core/formats.js';

/** UUIDs in their text form (core/formats.ts): every listing id and key id the API, CLI and dashboard take. */
describe('UUID text form', () => {
  const id = '0b3c7f52-8a2e-4f3e-9a0e-3c1f0d0e8b1a';

  it('accepts 8-4-4-4-12 hexadecimal digits and gives the lowercase form', () => {
    assert.equal(canonicalUuid(id), id);
    assert.equal(canonicalUuid(id.toUpperCase()), id);
    assert.equal(canonicalUuid('0B3c7F52-8a2E-4f3e-9A0e-3c1f0D0e8b1A'), id);
    assert.equal(canonicalUuid('00000000-0000-0000-0000-000000000000'), '00000000-0000-0000-0000-000000000000');
    assert.equal(canonicalUuid('ffffffff-ffff-ffff-ffff-ffffffffffff'), 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    assert.equal(canonicalUuid('FFFFFFFF-AAAA-BBBB-CCCC-DDDDDDDDDDDD'), 'ffffffff-aaaa-bbbb-cccc-dddddddddddd');
    assert.ok(isUuid(id) && isUuid(id.toUpperCase()));
  });

  it('rejects a character outside the hexadecimal digits at every position, the neighbours of each range included', () => {
    // / and : surround 0-9, @ and G surround A-F, ` and g surround a-f.
    for (const c of ['/', ':', '@', 'G', '`', 'g', 'z', ' ', '-', '_', '\u00e9', '\u0000', '\uff10']) {
      for (let pos = 0; pos < id.length; pos++) {
        if (id[pos] === '-' && c === '-') continue;
        const changed = id.slice(0, pos) + c + id.slice(pos + 1);
        assert.equal(canonicalUuid(changed), undefined, `${JSON.stringify(c)} at ${pos}`);
        assert.equal(isUuid(changed), false);
      }
    }
  });

  it('rejects a wrong length, misplaced hyphens and anything that is not a string', () => {
    for (const value of ['', id.slice(1), `${id}0`, `0${id}`, ` ${id}`, `${id}\n`, id.replaceAll('-', ''), `{${id}}`,
      '0b3c7f528-a2e-4f3e-9a0e-3c1f0d0e8b1a', '0b3c7f52-8a2e4-f3e-9a0e-3c1f0d0e8b1a', '0b3c7f52-8a2e-4f3e9-a0e-3c1f0d0e8b1a',
      '0b3c7f52-8a2e-4f3e-9a0e3-c1f0d0e8b1a', `urn:uuid:${id}`]) {
      assert.equal(canonicalUuid(value), undefined, JSON.stringify(value));
    }
    for (const value of [undefined, null, 1, {}, [id], new String(id)]) {
      assert.equal(canonicalUuid(value), undefined);
      assert.equal(isUuid(value), false);
    }
  });
});
