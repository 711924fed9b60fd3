import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { isCountry, type Country } from '../core/countries.js';

/**
 * D2 key format: `<cc>_live_<secret>`, where the secret is 32 characters drawn uniformly from
 * [A-Za-z0-9] by a CSPRNG (32 x log2(62) = 190.5 bits) followed by a 6-character checksum: the
 * CRC-32 of everything before it, in base 62. The checksum lets the API reject a mistyped or
 * truncated key without a database look-up (GitHub's token format does the same).
 */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const RANDOM_LENGTH = 32;
export const CHECKSUM_LENGTH = 6;
const PREFIX_LENGTH = 'sg_live_'.length;
const KEY_LENGTH = PREFIX_LENGTH + RANDOM_LENGTH + CHECKSUM_LENGTH;
/** Characters of the key kept for display: `sg_live_` and the first four of the secret (D2, D20). */
const DISPLAY_PREFIX_LENGTH = PREFIX_LENGTH + 4;

/** Uniform base-62 characters from a CSPRNG; rejection sampling avoids the modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 x 62: bytes at or above it would make the first 8 characters more likely.
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function checksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A new key for a country: shown once, then only its hash is kept. */
export function generateKey(country: Country): string {
  const body = `${country}_live_${randomBase62(RANDOM_LENGTH)}`;
  return body + checksum(body);
}

/**
 * The country of a well-formed key with a valid checksum, or undefined for anything else. Pure:
 * no look-up, so malformed keys (typos, truncation, wrong prefix) cost nothing (D5 401 stage).
 * Every request's key passes here: checked character by character and the checksum compared
 * digit by digit, without a regular expression. The checksum is zlib's CRC-32 (IEEE) of the rest.
 */
export function parseKey(token: string): Country | undefined {
  if (token.length !== KEY_LENGTH || !token.startsWith('_live_', 2)) return undefined;
  const country = token.slice(0, 2);
  if (!isCountry(country)) return undefined;
  for (let i = PREFIX_LENGTH; i < KEY_LENGTH - CHECKSUM_LENGTH; i++) {
    if (!isBase62(token.charCodeAt(i))) return undefined;
  }
  // The checksum's base-62 digits, least significant last (as `checksum` writes them).
  let n = crc32(token.slice(0, KEY_LENGTH - CHECKSUM_LENGTH));
  for (let i = KEY_LENGTH - 1; i >= KEY_LENGTH - CHECKSUM_LENGTH; i--) {
    if (token.charCodeAt(i) !== ALPHABET.charCodeAt(n % 62)) return undefined;
    n = Math.floor(n / 62);
  }
  return country;
}

/** [0-9A-Za-z] */
function isBase62(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

/** The only form in which a key is stored (D2): SHA-256, hex. Right for keys of 190 bits. */
export function hashKey(key: string): string {
  // One-shot: half the cost of createHash().update().digest() on every request's key check.
  return hash('sha256', key, 'hex');
}

/** Keys in a text that is logged, echoed, stored or shown are redacted there (D20): see redact-keys.ts. */
export { redactKeys, redactedExcerpt } from '../core/redact-keys.js';

/** How a key is shown anywhere after its one-time reveal (D2, D20): display prefix, an ellipsis, the last four. */
export function keyDisplay(key: { prefix: string; last4: string }): string {
  return `${key.prefix}…${key.last4}`;
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

export function lastFour(key: string): string {
  return key.slice(-4);
}
