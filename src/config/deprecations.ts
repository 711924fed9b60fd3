import { ConfigError } from './variable.js';

/**
 * API_DEPRECATIONS (D29): the path prefixes an operator has marked deprecated, read once at
 * start-up. A JSON array, one object per prefix:
 *
 *   [{"prefix": "/v1/listings/changes", "since": "2026-12-01", "sunset": "2027-12-01",
 *     "link": "https://developers.example.com/changelog#changes"}]
 *
 * - `prefix`: `/v1`, or a path below it, matched whole segments: `/v1/listings` covers
 *   `/v1/listings`, `/v1/listings/changes` and `/v1/listings/{id}`, not `/v1/listingsX`. Letters,
 *   digits and `-._~` in each segment; no trailing slash, no parameter, each prefix once. That it
 *   covers an endpoint is checked where the endpoints are known (http/deprecations.ts).
 * - `since`: when it was deprecated, an ISO 8601 date (`2026-12-01`, midnight UTC) or date-time
 *   with a zone (`2026-12-01T09:00:00Z`, `+08:00`): `Deprecation: @<unix seconds>` (RFC 9745).
 * - `sunset` (optional): when it may be removed, the same forms: `Sunset: <HTTP-date>` (RFC 8594).
 *   The versioning policy (docs/api.md) promises at least MIN_SUNSET_MONTHS between the two, so
 *   an earlier sunset is refused.
 * - `link`: an absolute https URL of the page that says what to use instead:
 *   `Link: <url>; rel="deprecation"`.
 *
 * Kept free of the HTTP stack like the rest of config/: every CLI command reads the configuration.
 */
export interface Deprecation {
  /** The path prefix, as configured. */
  readonly prefix: string;
  /** Unix seconds of `since`. */
  readonly since: number;
  /** Epoch milliseconds of `sunset`, when one is set. */
  readonly sunset: number | undefined;
  /** `link`, normalised (WHATWG URL `href`). */
  readonly link: string;
}

export const VARIABLE = 'API_DEPRECATIONS';

/** The versioning policy's shortest notice: a deprecated item keeps working at least this long (docs/api.md). */
export const MIN_SUNSET_MONTHS = 12;

const FIELDS = ['prefix', 'since', 'sunset', 'link'] as const;
const EXAMPLE = '[{"prefix": "/v1/listings/changes", "since": "2026-12-01", "sunset": "2027-12-01", "link": "https://developers.example.com/changelog"}]';
const SEGMENT = /^[A-Za-z0-9._~-]+$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

const fail = (problem: string): never => {
  throw new ConfigError(VARIABLE, problem);
};

/** Reads API_DEPRECATIONS (unset: nothing is deprecated); any problem is one ConfigError line naming the entry. */
export function parseDeprecations(raw: string | undefined): Deprecation[] {
  if (raw === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    fail(`is not JSON (${(error as Error).message.replace(/\s+/g, ' ')}); expected e.g. ${EXAMPLE}`);
  }
  if (!Array.isArray(parsed)) return fail(`expected a JSON array of {"prefix", "since", "sunset", "link"} objects, e.g. ${EXAMPLE}`);
  const seen = new Set<string>();
  return parsed.map((entry: unknown, i) => {
    const where = `entry ${i + 1}`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return fail(`${where}: expected an object {"prefix", "since", "sunset", "link"}`);
    const fields = entry as Record<string, unknown>;
    for (const name of Object.keys(fields)) {
      if (!(FIELDS as readonly string[]).includes(name)) fail(`${where}: unknown field "${name}" (expected ${FIELDS.join(', ')})`);
    }
    const prefix = prefixOf(fields.prefix, where);
    const named = `${where} (${prefix})`;
    if (seen.has(prefix)) fail(`${named}: the prefix is given twice`);
    seen.add(prefix);
    const sinceMs = instant(fields.since, `${named}: since`);
    const sunset = fields.sunset === undefined ? undefined : instant(fields.sunset, `${named}: sunset`);
    if (sunset !== undefined) {
      const earliest = new Date(sinceMs);
      earliest.setUTCMonth(earliest.getUTCMonth() + MIN_SUNSET_MONTHS);
      if (sunset < earliest.getTime()) {
        fail(`${named}: sunset ${String(fields.sunset)} is less than ${MIN_SUNSET_MONTHS} months after since ${String(fields.since)}; the versioning policy promises at least that`);
      }
    }
    return { prefix, since: Math.floor(sinceMs / 1000), sunset, link: linkOf(fields.link, named) };
  });
}

function prefixOf(value: unknown, where: string): string {
  if (typeof value !== 'string') return fail(`${where}: "prefix" is required, a path such as "/v1/listings/changes"`);
  if (value !== '/v1' && !value.startsWith('/v1/')) return fail(`${where}: prefix "${value}" must be /v1 or a path below it (e.g. /v1/listings/changes)`);
  const segments = value.split('/').slice(1);
  for (const segment of segments) {
    if (segment === '') fail(`${where}: prefix "${value}" has an empty segment (no trailing or double slash)`);
    if (segment === '.' || segment === '..' || !SEGMENT.test(segment)) {
      fail(`${where}: prefix "${value}" has the segment "${segment}"; use letters, digits and - . _ ~ (no parameters, query or wildcards)`);
    }
  }
  return value;
}

/** An ISO 8601 date or date-time with a zone, checked for a real calendar day and time; epoch ms. */
function instant(value: unknown, what: string): number {
  if (value === undefined) return fail(`${what} is required, an ISO 8601 date (2026-12-01) or date-time (2026-12-01T09:00:00Z)`);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const m = typeof value === 'string' ? ISO_DATE.exec(value) : null;
  const bad = () => fail(`${what} "${text}" is not an ISO 8601 date (2026-12-01) or date-time with a zone (2026-12-01T09:00:00Z)`);
  if (m === null) return bad();
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((n) => Number(m[n] ?? 0)) as [number, number, number, number, number, number];
  const utc = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(utc);
  const realDay = check.getUTCFullYear() === year && check.getUTCMonth() === month - 1 && check.getUTCDate() === day;
  if (!realDay || hour > 23 || minute > 59 || second > 59) return bad();
  const zone = m[8];
  let offsetMinutes = 0;
  if (zone !== undefined && zone !== 'Z') {
    const [h, min] = zone.slice(1).split(':').map(Number) as [number, number];
    if (h > 23 || min > 59) return bad();
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (h * 60 + min);
  }
  return utc - offsetMinutes * 60_000 + Math.floor(Number(m[7] ?? 0) * 1000);
}

function linkOf(value: unknown, where: string): string {
  if (typeof value !== 'string') return fail(`${where}: "link" is required, the https URL of a page saying what to use instead`);
  if (!URL.canParse(value)) return fail(`${where}: link "${value}" is not an absolute URL`);
  const url = new URL(value);
  if (url.protocol !== 'https:') fail(`${where}: link "${value}" must be an https URL`);
  if (url.username !== '' || url.password !== '') fail(`${where}: link must not carry a user name or password`);
  return url.href;
}
