import { USAGE_TYPES, type ListingSelection, type ListParams, type UsageType } from '@listings-api/sdk';
import { DEFAULT_RADIUS_KM, RADIUS_CHOICES_KM, type Place } from './places.js';

/**
 * What `/` shows, as its address says: `q` (the search box's text), `usage` (a usage type of the
 * taxonomy), `near` (a place's id) with `radius` (kilometres), and `page`. A value the site does not
 * know (a usage type outside the taxonomy, a place it does not list, a radius it does not offer) is
 * taken as absent, as `usage` always was; the API refuses what the site passes on and cannot check
 * (a `q` with no word in it), and the page says so.
 */
export interface Search {
  /** Trimmed, never empty. */
  q?: string | undefined;
  usage?: UsageType | undefined;
  near?: Place | undefined;
  /** With `near`: one of RADIUS_CHOICES_KM. */
  radiusKm?: number | undefined;
}

export const isUsageType = (value: string): value is UsageType => (USAGE_TYPES as readonly string[]).includes(value);

export interface ParsedSearch {
  search: Search;
  page: number;
  /**
   * False when the address holds what a plain GET form leaves in it (`q=`, `near=`, `usage=`, a
   * `radius` without a place): the site then redirects to the tidy address (`searchHref`), so that
   * every address of a search is the one its links use.
   */
  tidy: boolean;
}

export function parseSearch(params: URLSearchParams, places: readonly Place[]): ParsedSearch {
  const q = params.get('q')?.trim() || undefined;
  const usageParam = params.get('usage') ?? '';
  const usage = isUsageType(usageParam) ? usageParam : undefined;
  const near = places.find((p) => p.id === params.get('near'));
  const radius = Number(params.get('radius'));
  const radiusKm = near === undefined ? undefined : (RADIUS_CHOICES_KM as readonly number[]).includes(radius) ? radius : DEFAULT_RADIUS_KM;
  const page = /^[1-9][0-9]{0,5}$/.test(params.get('page') ?? '') ? Number(params.get('page')) : 1;
  const empty = ['q', 'usage', 'near', 'page'].some((name) => params.has(name) && params.get(name)!.trim() === '');
  const tidy = !empty && !(params.has('radius') && near === undefined);
  return { search: { q, usage, near, radiusKm }, page, tidy };
}

/** The longest `q` the API takes (D26), in characters (code points) once trimmed. */
export const MAX_SEARCH_LENGTH = 200;

/**
 * What is wrong with a search's text, as a visitor is told it, or undefined: the API's rules for
 * `q` (D26: at most 200 characters, at least one letter or digit once accents are set aside),
 * checked here so that such a search costs no look-up (the API counts a 400 against the key). A
 * refusal by the API all the same (its rules changed) is shown the same way (`refusedSearch`).
 */
export function searchProblem(search: Search): string | undefined {
  if (search.q === undefined) return undefined;
  if ([...search.q].length > MAX_SEARCH_LENGTH) return `That search is too long: use at most ${MAX_SEARCH_LENGTH} characters.`;
  if (!/[\p{L}\p{N}]/u.test(search.q.normalize('NFKD').replace(/\p{M}+/gu, ''))) return NO_WORD;
  return undefined;
}

const NO_WORD = 'Nothing to search for: type a word, a name or a street, with at least one letter or digit.';

/**
 * The message for an error of the API that refused a search's text (a 400 whose message names
 * `q`), or undefined for any other error.
 */
export function refusedSearch(error: { status?: number; message: string }, search: Search): string | undefined {
  if (error.status !== 400 || !/"q"/.test(error.message)) return undefined;
  return searchProblem(search) ?? (/no word/.test(error.message) ? NO_WORD : 'That search could not be run: try other words.');
}

/** The address of page `p` of a search (parameters in one order: q, usage, near, radius, page). */
export function searchHref(search: Search, p = 1): string {
  const params = new URLSearchParams();
  if (search.q) params.set('q', search.q);
  if (search.usage) params.set('usage', search.usage);
  if (search.near) {
    params.set('near', search.near.id);
    params.set('radius', String(search.radiusKm ?? DEFAULT_RADIUS_KM));
  }
  if (p > 1) params.set('page', String(p));
  const query = params.toString();
  return query === '' ? '/' : `/?${query}`;
}

/** The API's selection for a search (D23, D26, D28). */
export function selectionOf(search: Search): ListingSelection {
  return {
    ...(search.q !== undefined && { q: search.q }),
    ...(search.usage !== undefined && { usageType: search.usage }),
    ...(search.near !== undefined && { near: { lat: search.near.lat, lng: search.near.lng }, radiusM: (search.radiusKm ?? DEFAULT_RADIUS_KM) * 1000 }),
  };
}

/** A page of a search: near a place, nearest first. */
export function listParamsOf(search: Search, page: number, perPage: number): ListParams {
  return { ...selectionOf(search), page, perPage, ...(search.near !== undefined && { sort: 'distance' as const }) };
}

/**
 * The facets' selection: the search without its usage type. The chips' counts are the same either
 * way (D27 counts usage types as if there were no usage_type filter), and so one copy of the
 * facets serves every chip of a search: choosing a chip costs the visitor one look-up, not two.
 */
export function facetsSelectionOf(search: Search): ListingSelection {
  return selectionOf({ ...search, usage: undefined });
}
