import { COUNTRIES, HOST_URLS, type Country } from './openapi.js';

/** The countries of the API and their key prefixes (D2, D3), generated from its OpenAPI document. */
export { COUNTRIES, type Country };

/** The country a key belongs to: the two letters before `_live_` (D2). */
export function countryOfKey(apiKey: string): Country {
  const match = /^([a-z]{2})_live_[A-Za-z0-9]+$/.exec(apiKey);
  const country = match?.[1] as Country | undefined;
  if (country === undefined || !COUNTRIES.includes(country)) {
    // Never echo the key (D20): name only its shape.
    throw new TypeError(`apiKey is not a Listings API key: expected "<cc>_live_<secret>" with <cc> one of ${COUNTRIES.join(', ')}.`);
  }
  return country;
}

/** True for `localhost` and any `*.localhost` name (RFC 6761: always loopback). */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * D3: `sg` is served at `api.<domain>`, every other country at `api.<cc>.<domain>`; https, except for
 * a local domain (`localhost`, `*.localhost`, with or without a port), which is http as a local server
 * is. `apiDomain` may carry a port: `localhost:3000`.
 */
export function baseUrlFor(country: Country, apiDomain: string): string {
  const domain = apiDomain.trim().replace(/^\.+|\/+$/g, '');
  if (domain === '' || /[/?#@\s]/.test(domain)) throw new TypeError(`apiDomain must be a host name with an optional port, such as "example.com" or "localhost:3000"; got ${JSON.stringify(apiDomain)}.`);
  const scheme = isLocalhostName(domain.replace(/:\d+$/, '')) ? 'http' : 'https';
  const template: string = country in HOST_URLS ? HOST_URLS[country as keyof typeof HOST_URLS] : HOST_URLS.other;
  return template.replace('{scheme}', scheme).replace('{country}', country).replace('{domain}', domain);
}
