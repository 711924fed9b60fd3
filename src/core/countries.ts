/** The country codes of spec 4.1. A key, a host and a listing each belong to exactly one. */
export const COUNTRY_CODES = ['sg', 'my', 'uk', 'in', 'us', 'ca', 'au', 'nz'] as const;
export type Country = (typeof COUNTRY_CODES)[number];

const COUNTRY_SET: ReadonlySet<string> = new Set(COUNTRY_CODES);

export function isCountry(value: unknown): value is Country {
  return typeof value === 'string' && COUNTRY_SET.has(value);
}

/** Local currency of each country, used as the demo data's currency. */
export const COUNTRY_CURRENCY: Readonly<Record<Country, string>> = {
  sg: 'SGD', my: 'MYR', uk: 'GBP', in: 'INR', us: 'USD', ca: 'CAD', au: 'AUD', nz: 'NZD',
};

/** D3: `sg` is served at `api.D`, every other country `cc` at `api.cc.D`. */
export function hostForCountry(country: Country, apiDomain: string): string {
  return country === 'sg' ? `api.${apiDomain}` : `api.${country}.${apiDomain}`;
}

/**
 * D3: builds the host -> country table of one deployment (only the countries it serves,
 * OPERATIONS `COUNTRIES`). Hosts are lowercase; lookups lowercase the request's host.
 */
export function countryHostTable(countries: readonly Country[], apiDomain: string): ReadonlyMap<string, Country> {
  return new Map(countries.map((c) => [hostForCountry(c, apiDomain.toLowerCase()), c]));
}
