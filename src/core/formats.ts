/**
 * Text formats shared by the API, the import, the CLI and the dashboard, declared once.
 */

/** A UUID in its text form: 8-4-4-4-12 hexadecimal digits, either case. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

/** The stored (lowercase) form of a UUID, or undefined when `value` is not one. */
export function canonicalUuid(value: unknown): string | undefined {
  return isUuid(value) ? value.toLowerCase() : undefined;
}

/** The largest signed 32-bit integer: the bound of every integer the API and the import accept (D7). */
export const MAX_INT32 = 2 ** 31 - 1;
