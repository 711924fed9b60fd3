/**
 * D26: how text is compared by `q`. Without case or accents (Unicode NFKD, combining marks
 * removed, lower case), cut into words at anything that is not a letter or a digit. A listing's
 * words come from its title, building name, street address and usage types; a query matches when
 * each of its words starts some word of the listing's.
 */

const MARKS = /\p{M}+/gu;
const SEPARATORS = /[^\p{L}\p{N}]+/u;

/** The words of a text, compared form: `Café, Marina-Bay` -> `cafe`, `marina`, `bay`. */
export function searchWords(text: string): string[] {
  // Lower-casing can itself give a combining mark (`İ` -> `i` + U+0307): marks are removed after it too.
  const folded = text.normalize('NFKD').replace(MARKS, '').toLowerCase().normalize('NFKD').replace(MARKS, '');
  return folded.split(SEPARATORS).filter((word) => word !== '');
}

/** The fields of a listing that `q` searches (D26). */
export interface SearchedFields {
  title: string | null;
  building_name: string | null;
  street_address: string | null;
  /** As stored: the JSON text of the array. */
  usage_types: string;
}

/**
 * A listing's distinct words, space-separated, in first-seen order: stored with the listing
 * (`listings.search_words`, written by the import) so that building a tenant's index splits a
 * prepared text instead of folding four fields of every listing again.
 */
export function listingSearchWords(fields: SearchedFields): string {
  const words = new Set<string>();
  for (const text of [fields.title, fields.building_name, fields.street_address, ...(JSON.parse(fields.usage_types) as string[])]) {
    if (text !== null) for (const word of searchWords(text)) words.add(word);
  }
  return [...words].join(' ');
}
