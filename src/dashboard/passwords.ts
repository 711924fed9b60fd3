import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { randomBase62 } from '../auth/key-format.js';

/**
 * Member passwords: scrypt (node:crypto) with a random 16-byte salt per password. Stored as
 * `scrypt$N$r$p$salt$hash` (base64url), so the cost can be raised later and old hashes still verify.
 * N = 2^15, r = 8 (32 MiB, ~50-100 ms): memory-hard enough to make a stolen table slow to attack
 * and cheap enough for a sign-in. Comparison is constant-time.
 */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 256;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: n, r, p, maxmem: 256 * n * r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const hash = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

const STORED = /^scrypt\$([0-9]{1,7})\$([0-9]{1,3})\$([0-9]{1,3})\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{16,})$/;

/** True when `password` is the one `stored` was made from. A malformed stored value never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = STORED.exec(stored);
  if (!match) return false;
  const [n, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (n < 2 || (n & (n - 1)) !== 0 || n > 2 ** 20 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const expected = Buffer.from(match[5]!, 'base64url');
  const actual = await derive(password, Buffer.from(match[4]!, 'base64url'), n, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

let dummy: Promise<string> | undefined;

/**
 * For an unknown email: spends the same scrypt work as a real check and fails, so that response
 * times do not tell which emails have an account.
 */
export async function verifyAgainstNothing(password: string): Promise<false> {
  dummy ??= hashPassword(randomBase62(24));
  await verifyPassword(password, await dummy);
  return false;
}

/** A new random password (20 base-62 characters, ~119 bits), for `user create` and the demo member. */
export function generatePassword(): string {
  return randomBase62(20);
}

/** Why a chosen password is not acceptable, or undefined when it is. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `the password is shorter than ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password is longer than ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

/** Email addresses are compared trimmed and lowercase. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL = /^[^\s@<>()[\],;:"]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

export function isEmail(email: string): boolean {
  return email.length <= 254 && EMAIL.test(email);
}
