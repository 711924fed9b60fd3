import type { Country } from '@listings-api/sdk';

/**
 * The places a visitor can search near: a fixed, small list of city centres per country, so the
 * site needs no geocoder (nothing leaves the site but the API's own requests). A site of its own
 * would list its market's districts here.
 */
export interface Place {
  /** In the page's address: `/?near=raffles-place`. */
  id: string;
  name: string;
  lat: number;
  lng: number;
}

export const PLACES: Readonly<Record<Country, readonly Place[]>> = {
  sg: [
    { id: 'raffles-place', name: 'Raffles Place', lat: 1.284, lng: 103.8514 },
    { id: 'orchard', name: 'Orchard', lat: 1.304, lng: 103.832 },
    { id: 'jurong', name: 'Jurong', lat: 1.333, lng: 103.742 },
  ],
  my: [{ id: 'kuala-lumpur', name: 'Kuala Lumpur', lat: 3.139, lng: 101.6869 }],
  uk: [{ id: 'london', name: 'London', lat: 51.5074, lng: -0.1278 }],
  au: [{ id: 'sydney', name: 'Sydney', lat: -33.8688, lng: 151.2093 }],
  us: [{ id: 'seattle', name: 'Seattle', lat: 47.6062, lng: -122.3321 }],
  in: [{ id: 'mumbai', name: 'Mumbai', lat: 19.076, lng: 72.8777 }],
  ca: [{ id: 'toronto', name: 'Toronto', lat: 43.6532, lng: -79.3832 }],
  nz: [{ id: 'auckland', name: 'Auckland', lat: -36.8485, lng: 174.7633 }],
};

/** The search's radius choices, in kilometres; 5 (the API's default) when the address has none. */
export const RADIUS_CHOICES_KM = [1, 2, 5, 10] as const;
export const DEFAULT_RADIUS_KM = 5;

/** The places of a key's country; of every country (the select groups them) when it is not known. */
export function placesFor(country: Country | undefined): ReadonlyArray<{ country: Country; places: readonly Place[] }> {
  if (country !== undefined) return [{ country, places: PLACES[country] }];
  return (Object.keys(PLACES) as Country[]).map((c) => ({ country: c, places: PLACES[c] }));
}
