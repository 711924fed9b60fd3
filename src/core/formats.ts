import { isIP } from 'node:net';

/**
 * Text formats shared by the API, the import, the CLI and the dashboard, declared once.
 */

/**
 * A UUID in its text form: 8-4-4-4-12 hexadecimal digits, either case. Checked character by
 * character: every detail request's id passes here, and this is a fraction of the cost of a
 * case-insensitive regular expression followed by toLowerCase().
 */
const UUID_LENGTH = 36;

/** 0 when `value` is not a UUID, 1 when it is one in lowercase, 2 when it has uppercase digits. */
function uuidForm(value: string): 0 | 1 | 2 {
  if (value.length !== UUID_LENGTH) return 0;
  let form: 1 | 2 = 1;
  for (let i = 0; i < UUID_LENGTH; i++) {
    const c = value.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45 /* - */) return 0;
    } else if (c >= 65 && c <= 70 /* A-F */) {
      form = 2;
    } else if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) /* 0-9 a-f */) {
      return 0;
    }
  }
  return form;
}

/** A UUID as the API writes it: lowercase hex, hyphenated (the OpenAPI documents promise this pattern). */
export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidForm(value) !== 0;
}

/** The stored (lowercase) form of a UUID, or undefined when `value` is not one. */
export function canonicalUuid(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const form = uuidForm(value);
  return form === 0 ? undefined : form === 1 ? value : value.toLowerCase();
}

/** The largest signed 32-bit integer: the bound of every integer the API and the import accept (D7). */
export const MAX_INT32 = 2 ** 31 - 1;

/**
 * A loopback host by its name or literal address (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`,
 * bracketed or not): where plain `http` is allowed, because browsers treat these as secure and
 * local servers have no TLS (webhook URLs, D24; the images of a listing, D13).
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
