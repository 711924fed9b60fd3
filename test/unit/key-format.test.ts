import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, it } from 'node:test';
import {
  CHECKSUM_LENGTH,
  RANDOM_LENGTH,
  checksum,
  displayPrefix,
  generateKey,
  hashKey,
  lastFour,
  parseKey,
  randomBase62,
  redactKeys,
} from '../../src/auth/key-format.js';
import { COUNTRY_CODES } from '../../src/core/countries.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY = /^(sg|my|uk|in|us|ca|au|nz)_live_[0-9A-Za-z]{38}$/;
/** Where the secret starts: `sg_live_` is 8 characters for every country. */
const SECRET_START = 'sg_live_'.length;

/** A different base-62 character than `c`, `shift` places along the alphabet. */
function other(c: string, shift = 1): string {
  return ALPHABET[(ALPHABET.indexOf(c) + shift) % ALPHABET.length]!;
}

function swapCase(c: string): string {
  return c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
}

describe('key format (D2)', () => {
  it('generates <cc>_live_<38 base62>: 32 random characters then a 6-character checksum', () => {
    assert.equal(RANDOM_LENGTH, 32);
    assert.equal(CHECKSUM_LENGTH, 6);
    for (const country of COUNTRY_CODES) {
      for (let i = 0; i < 50; i++) {
        const key = generateKey(country);
        assert.match(key, KEY);
        assert.ok(key.startsWith(`${country}_live_`), key);
        assert.equal(key.length, SECRET_START + 38);
        const body = key.slice(0, -CHECKSUM_LENGTH);
        assert.equal(key.slice(-CHECKSUM_LENGTH), checksum(body), 'the last 6 characters are the checksum of the rest');
      }
    }
  });

  it('the secret carries at least 190 bits (D2): 32 characters of a 62-letter alphabet', () => {
    assert.ok(RANDOM_LENGTH * Math.log2(62) >= 190);
  });

  it('never repeats a key over 20,000 generations (and never repeats the random part)', () => {
    const keys = new Set<string>();
    const secrets = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const key = generateKey('sg');
      keys.add(key);
      secrets.add(key.slice(SECRET_START, SECRET_START + RANDOM_LENGTH));
    }
    assert.equal(keys.size, 20_000);
    assert.equal(secrets.size, 20_000);
  });

  it('draws the random characters uniformly from the 62 letters (chi-square, no modulo bias)', () => {
    // 2,000 keys x 32 random characters = 64,000 draws, about 1,032 per letter. With 61 degrees of
    // freedom the statistic has mean 61 and standard deviation 11; 200 is over 12 deviations away, so
    // a fair generator never fails, while the classic `byte % 62` bias (first 8 letters 25% more
    // likely) scores about 420 and fails.
    const counts = new Map<string, number>(Array.from(ALPHABET, (c) => [c, 0]));
    let draws = 0;
    for (let i = 0; i < 2000; i++) {
      for (const c of generateKey('sg').slice(SECRET_START, SECRET_START + RANDOM_LENGTH)) {
        counts.set(c, counts.get(c)! + 1);
        draws++;
      }
    }
    assert.equal(counts.size, 62, 'only base-62 letters appear');
    const expected = draws / 62;
    const chi2 = [...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    assert.ok(chi2 < 200, `chi-square ${chi2.toFixed(1)} too large: the characters are not uniform`);
    for (const [c, n] of counts) assert.ok(n > expected * 0.75 && n < expected * 1.25, `letter ${c} drawn ${n} times, expected about ${expected}`);
  });

  it('randomBase62 returns exactly the requested length of base-62 letters', () => {
    for (const length of [0, 1, 31, 32, 33, 100, 500]) {
      const s = randomBase62(length);
      assert.equal(s.length, length);
      assert.match(s, /^[0-9A-Za-z]*$/);
    }
  });

  it('the checksum is 6 base-62 letters, deterministic, and depends on the whole body', () => {
    const body = 'sg_live_abcdefghijklmnopqrstuvwxyz012345';
    assert.match(checksum(body), /^[0-9A-Za-z]{6}$/);
    assert.equal(checksum(body), checksum(body));
    assert.notEqual(checksum(body), checksum(body.replace('sg', 'my')));
    assert.notEqual(checksum(body), checksum(body.slice(0, -1) + '6'));
  });

  it("the checksum is zlib's CRC-32 of the body in base 62: keys issued by earlier releases still parse", () => {
    const body = 'sg_live_abcdefghijklmnopqrstuvwxyz012345';
    assert.equal(zlibCrc32(body), 2987523210);
    // Pinned: the value the checksum had when it was computed by a hand-written CRC-32.
    assert.equal(checksum(body), '3GBLGE');
    assert.equal(parseKey(`${body}3GBLGE`), 'sg');
    assert.equal(parseKey(`${body}3GBLGF`), undefined);
  });

  it('parseKey accepts generated keys of all 8 countries and returns their country', () => {
    for (const country of COUNTRY_CODES) {
      for (let i = 0; i < 20; i++) assert.equal(parseKey(generateKey(country)), country);
    }
  });

  it('parseKey rejects a wrong or unknown country code, even with a recomputed checksum', () => {
    const key = generateKey('sg');
    const secret = key.slice(SECRET_START);
    for (const cc of ['xx', 'SG', 'Sg', 'gb', 'sgp', 's', '']) {
      assert.equal(parseKey(`${cc}_live_${secret}`), undefined, cc);
      const body = `${cc}_live_${secret.slice(0, RANDOM_LENGTH)}`;
      assert.equal(parseKey(body + checksum(body)), undefined, `${cc} with a valid checksum`);
    }
    // Another real country with sg's checksum: the checksum covers the prefix, so a key cannot be
    // moved to another country by editing its first two letters.
    for (const cc of COUNTRY_CODES.filter((c) => c !== 'sg')) assert.equal(parseKey(`${cc}_live_${secret}`), undefined, cc);
  });

  it("parseKey rejects any environment but 'live'", () => {
    const key = generateKey('uk');
    const random = key.slice(SECRET_START, SECRET_START + RANDOM_LENGTH);
    for (const env of ['test', 'Live', 'LIVE', 'prod', 'liv', 'live_']) {
      const body = `uk_${env}_${random}`;
      assert.equal(parseKey(body + checksum(body)), undefined, `${env} with a valid checksum`);
      assert.equal(parseKey(key.replace('_live_', `_${env}_`)), undefined, env);
    }
    assert.equal(parseKey(key.replace('uk_live_', 'uk-live_')), undefined);
    assert.equal(parseKey(key.replace('uk_live_', 'uk_live-')), undefined);
  });

  it('parseKey rejects one changed character at every position of the secret (random part and checksum)', () => {
    for (let round = 0; round < 20; round++) {
      const key = generateKey(COUNTRY_CODES[round % COUNTRY_CODES.length]!);
      assert.ok(parseKey(key));
      for (let pos = SECRET_START; pos < key.length; pos++) {
        for (const shift of [1, 7, 31, 61]) {
          const typo = key.slice(0, pos) + other(key[pos]!, shift) + key.slice(pos + 1);
          assert.notEqual(typo, key);
          assert.equal(parseKey(typo), undefined, `character ${pos} changed: ${typo}`);
        }
      }
    }
  });

  it('parseKey rejects a lowercase/uppercase swap at every letter of the secret', () => {
    for (let round = 0; round < 20; round++) {
      const key = generateKey('au');
      let swapped = 0;
      for (let pos = SECRET_START; pos < key.length; pos++) {
        const c = key[pos]!;
        if (swapCase(c) === c) continue; // a digit
        swapped++;
        assert.equal(parseKey(key.slice(0, pos) + swapCase(c) + key.slice(pos + 1)), undefined, `case of ${pos} swapped`);
      }
      assert.ok(swapped > 0);
      assert.equal(parseKey(key.toUpperCase()), undefined);
      assert.equal(parseKey(key.toLowerCase() === key ? key.toUpperCase() : key.toLowerCase()), undefined);
    }
  });

  it('parseKey rejects a character outside [0-9A-Za-z] anywhere in the secret, even with a valid checksum', () => {
    const key = generateKey('ca');
    const random = key.slice(SECRET_START, SECRET_START + RANDOM_LENGTH);
    // The neighbours of each range (/ : @ [ ` {), and a few a careless copy brings in.
    const outside = ['/', ':', '@', '[', '`', '{', '_', '-', ' ', '.', '\u00e9', '\u0000', '\u00c0'];
    for (const c of outside) {
      for (const pos of [0, 1, 15, RANDOM_LENGTH - 1]) {
        const body = `ca_live_${random.slice(0, pos)}${c}${random.slice(pos + 1)}`;
        assert.equal(parseKey(body + checksum(body)), undefined, `${JSON.stringify(c)} at ${pos} with a valid checksum`);
      }
      for (let pos = SECRET_START + RANDOM_LENGTH; pos < key.length; pos++) {
        assert.equal(parseKey(key.slice(0, pos) + c + key.slice(pos + 1)), undefined, `${JSON.stringify(c)} in the checksum at ${pos}`);
      }
    }
    // Each range's ends are digits of the alphabet.
    for (const c of ['0', '9', 'A', 'Z', 'a', 'z']) {
      const body = `ca_live_${c}${random.slice(1)}`;
      assert.equal(parseKey(body + checksum(body)), 'ca', c);
    }
  });

  it('parseKey rejects truncated keys, keys with an extra character, and surrounding text', () => {
    const key = generateKey('nz');
    for (let n = 0; n < key.length; n++) assert.equal(parseKey(key.slice(0, n)), undefined, `first ${n} characters`);
    assert.equal(parseKey(key.slice(1)), undefined);
    for (const c of ['0', 'a', 'Z']) {
      assert.equal(parseKey(key + c), undefined, `${c} appended`);
      assert.equal(parseKey(key.slice(0, SECRET_START) + c + key.slice(SECRET_START)), undefined, `${c} inserted`);
    }
    for (const text of [` ${key}`, `${key} `, `${key}\n`, `Bearer ${key}`, `"${key}"`]) assert.equal(parseKey(text), undefined, JSON.stringify(text));
    // A deleted character in the middle (length now 37) and a transposition of two neighbours.
    assert.equal(parseKey(key.slice(0, 20) + key.slice(21)), undefined);
    const i = [...key].findIndex((c, j) => j >= SECRET_START && key[j + 1] !== undefined && key[j + 1] !== c);
    assert.equal(parseKey(key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2)), undefined, 'neighbours transposed');
    assert.equal(parseKey(''), undefined);
  });

  it('hashKey is the lowercase hex SHA-256 of the whole key', () => {
    assert.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const key = generateKey('sg');
    assert.match(hashKey(key), /^[0-9a-f]{64}$/);
    assert.equal(hashKey(key), createHash('sha256').update(key, 'utf8').digest('hex'));
    assert.notEqual(hashKey(key), hashKey(key.slice(0, -1) + other(key.at(-1)!)));
  });

  it('displayPrefix is `<cc>_live_` and the first 4 secret characters; lastFour the last 4; neither reveals the key (D20)', () => {
    for (const country of COUNTRY_CODES) {
      const key = generateKey(country);
      const prefix = displayPrefix(key);
      assert.equal(prefix, `${country}_live_${key.slice(SECRET_START, SECRET_START + 4)}`);
      assert.equal(prefix.length, 12);
      assert.equal(lastFour(key), key.slice(-4));
      assert.equal(lastFour(key).length, 4);
      // What is shown leaves 30 unknown characters of the secret (>= 178 bits).
      assert.ok(key.length - prefix.length - 4 >= 30);
    }
  });

  describe('redactKeys (D20): a key in a logged or echoed text', () => {
    const key = 'sg_live_AbCdEfGhIjKlMnOpQrStUvWxYz012345QwErTy';
    /** Percent-encodes the characters at these positions, as a URL may carry them. */
    const encode = (text: string, positions: readonly number[]) =>
      [...text].map((c, i) => (positions.includes(i) ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : c)).join('');
    /** No run of 8 characters of the secret is left, in the text as written or once decoded. */
    const leaksNothing = (text: string) => {
      const decoded = text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      for (let i = 8; i + 8 <= key.length; i++) {
        const run = key.slice(i, i + 8);
        if (text.includes(run) || decoded.includes(run)) return false;
      }
      return true;
    };

    it('keeps the country and "live" and redacts the secret, anywhere in the text', () => {
      assert.equal(redactKeys(`/v1/listings/${key}`), '/v1/listings/sg_live_[redacted]');
      assert.equal(redactKeys(`x${key}?page=${key}`), 'xsg_live_[redacted]?page=sg_live_[redacted]');
      assert.equal(redactKeys('https://SG_LIVE_abc.example.com'), 'https://SG_LIVE_[redacted].example.com');
      assert.equal(redactKeys('/v1/listings/deliver-now'), '/v1/listings/deliver-now', 'text without a key is unchanged');
    });

    it('redacts a key with any of its characters percent-encoded', () => {
      const cases = [
        encode(key, [2, 7]), // both underscores, as before
        encode(key, [8]), // the secret's first character
        encode(key, [3]), // the l of live
        encode(key, [0, 1, 3, 4, 5, 6]),
        encode(key, [8, 9, 10, 20, 30, 45]),
        encode(key, [...key].map((_, i) => i)), // every character
        encode(key, [...key].map((_, i) => i)).toLowerCase(),
      ];
      for (const encoded of cases) {
        const redacted = redactKeys(`/v1/listings/${encoded}`);
        assert.match(redacted, /\[redacted\]$/, encoded);
        assert.ok(leaksNothing(redacted), `${encoded} -> ${redacted}`);
      }
    });
  });
});
