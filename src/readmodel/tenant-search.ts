import type { GeoPoint } from '../listings/fields.js';

/**
 * What a tenant's index keeps for D26-D28 beside its entries, per listing *slot*: each entry of
 * the index has a slot (IndexEntry.slot), a small whole number given when the entry is made and
 * never reused for another while this structure lives. Per slot, in packed arrays rather than on
 * the entries (a double on an object costs a boxed number, a typed array 8 bytes):
 *
 * - its location (D28) in `coords`: lat, lng; NaN for a listing without one;
 * - its price group (D27: currency and price basis) in `priceGroups`, an index into PRICE_GROUPS;
 * - its words (D26): the slot is listed under each of them. The words of the build are one sorted
 *   dictionary with one packed array of slots (prefix look-up: a binary search, then a run of
 *   words); the words of listings changed since are kept in a small map beside it.
 *
 * Nothing is ever removed or overwritten: a changed listing gets a new slot, and its old slot's
 * data stays for whoever still holds the old entries. What a reader holds is therefore always
 * consistent with the entries it holds (a match is always checked against an entry, never a slot
 * alone). What changed listings leave behind is counted, and the index is built again (a new
 * structure) once it passes a bound (`worn`), so it does not grow for ever.
 */
export class TenantSearch {
  /** lat, lng per slot; NaN, NaN: no location. */
  coords = new Float64Array(64);
  priceGroups = new Uint16Array(32);
  private slots = 0;
  /** Slots whose entries were replaced or dropped. */
  private retired = 0;

  // The words of the build, sorted, written one after another in `dictionary`: word i is
  // dictionary[wordStarts[i]..wordStarts[i+1]). One string and one Int32Array instead of a string
  // object per word: a tenant of 1,000 listings has about 850 distinct words of 3-5 characters,
  // and a string object of its own costs 24 bytes and an 8-byte array slot beside its characters.
  // The slots of word i are the varints of postings[offsets[i]..offsets[i+1]), each the gap from
  // the previous slot (the first from -1). Slots of a word ascend, and common words' gaps are
  // small: about a byte a slot where four-byte slots cost 80 bytes a listing of the scale bench's
  // data (20 words each).
  private dictionary = '';
  private wordStarts = new Int32Array(1);
  private offsets = new Int32Array(1);
  private postings = new Uint8Array(0);
  /** Slots listed under the build's words. */
  private postingCount = 0;
  /** While building: each word's slots. Afterwards: the words of slots added since the build. */
  private pending = new Map<string, number[]>();
  private pendingPostings = 0;
  private built = false;

  /**
   * Gives a listing a slot: its location (the stored JSON text, or null), its price group and its
   * words (the stored `search_words`: distinct words, space-separated).
   */
  add(location: string | null, currency: string, priceBasis: string | null, searchWords: string): number {
    const slot = this.slots++;
    if (slot * 2 + 2 > this.coords.length) this.coords = grown(this.coords, this.coords.length * 2);
    if (slot + 1 > this.priceGroups.length) this.priceGroups = grown(this.priceGroups, this.priceGroups.length * 2);
    const point = location === null ? null : (JSON.parse(location) as GeoPoint);
    this.coords[slot * 2] = point === null ? NaN : point.lat;
    this.coords[slot * 2 + 1] = point === null ? NaN : point.lng;
    this.priceGroups[slot] = priceGroupOf(currency, priceBasis);
    if (searchWords !== '') {
      for (const word of searchWords.split(' ')) {
        const slots = this.pending.get(word);
        if (slots === undefined) this.pending.set(word, [slot]);
        else slots.push(slot);
        this.pendingPostings++;
      }
    }
    return slot;
  }

  /** The slot's entry was replaced or dropped. */
  retire(): void {
    this.retired++;
  }

  /** The build is complete: its words become the packed dictionary (later slots' words stay in the map). */
  finishBuild(): void {
    const words = [...this.pending.keys()].sort();
    const wordStarts = new Int32Array(words.length + 1);
    const offsets = new Int32Array(words.length + 1);
    // A slot below 2^28 is at most four bytes of varint.
    let postings = new Uint8Array(this.pendingPostings * 4);
    let at = 0;
    let chars = 0;
    words.forEach((word, i) => {
      wordStarts[i] = chars;
      chars += word.length;
      offsets[i] = at;
      let previous = -1;
      for (const slot of this.pending.get(word)!) {
        for (let gap = slot - previous; ; gap >>>= 7) {
          if (gap < 0x80) {
            postings[at++] = gap;
            break;
          }
          postings[at++] = (gap & 0x7f) | 0x80;
        }
        previous = slot;
      }
    });
    offsets[words.length] = at;
    wordStarts[words.length] = chars;
    postings = postings.slice(0, at);
    this.dictionary = words.join('');
    this.wordStarts = wordStarts;
    this.offsets = offsets;
    this.postings = postings;
    this.postingCount = this.pendingPostings;
    this.pending = new Map();
    this.pendingPostings = 0;
    this.built = true;
    this.coords = this.coords.slice(0, Math.max(2, this.slots * 2 + 64));
    this.priceGroups = this.priceGroups.slice(0, Math.max(1, this.slots + 32));
  }

  /**
   * Whether what changes left behind is worth a new build: more slots retired than live, or more
   * words of changed listings beside the dictionary than an eighth of it.
   */
  get worn(): boolean {
    return this.built && (this.retired > Math.max(1024, this.slots - this.retired) || this.pendingPostings > Math.max(4096, this.postingCount / 8));
  }

  /**
   * D26: marks, per slot, how many of `queryWords` start one of its words (each counted once), so
   * that a slot matches the whole query when its mark equals the number of query words. Costs the
   * slots listed under the matching words, not the tenant.
   */
  markWords(queryWords: readonly string[]): Uint8Array {
    const marks = new Uint8Array(this.slots);
    queryWords.forEach((prefix, i) => {
      const mark = (slot: number) => {
        if (marks[slot] === i) marks[slot] = i + 1;
      };
      const { dictionary, wordStarts, postings } = this;
      const count = wordStarts.length - 1;
      for (
        let w = firstAtLeast(dictionary, wordStarts, prefix);
        w < count && wordStarts[w + 1]! - wordStarts[w]! >= prefix.length && dictionary.startsWith(prefix, wordStarts[w]);
        w++
      ) {
        let slot = -1;
        for (let p = this.offsets[w]!, end = this.offsets[w + 1]!; p < end;) {
          let gap = 0;
          for (let shift = 0; ; shift += 7) {
            const byte = postings[p++]!;
            gap |= (byte & 0x7f) << shift;
            if (byte < 0x80) break;
          }
          slot += gap;
          mark(slot);
        }
      }
      for (const [word, slots] of this.pending) if (word.startsWith(prefix)) slots.forEach(mark);
    });
    return marks;
  }
}

/** The first word of the packed, sorted dictionary not before `prefix` (in `<`'s order: UTF-16 code units). */
function firstAtLeast(dictionary: string, wordStarts: Int32Array, prefix: string): number {
  let low = 0;
  let high = wordStarts.length - 1;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareWord(dictionary, wordStarts[mid]!, wordStarts[mid + 1]!, prefix) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** dictionary[start..end) compared with `text` as `<` compares strings, without making the word a string. */
function compareWord(dictionary: string, start: number, end: number, text: string): number {
  const shorter = Math.min(end - start, text.length);
  for (let k = 0; k < shorter; k++) {
    const difference = dictionary.charCodeAt(start + k) - text.charCodeAt(k);
    if (difference !== 0) return difference;
  }
  return end - start - text.length;
}

function grown<T extends Float64Array | Uint16Array>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array);
  if (next instanceof Float64Array) next.fill(NaN, array.length);
  return next;
}

/**
 * D27's price groups, one table for the process: (currency, price basis) pairs as they are first
 * seen. At most 26^3 currencies times three bases, so an index fits 16 bits.
 */
export const PRICE_GROUPS: Array<{ currency: string; priceBasis: string | null }> = [];
const PRICE_GROUP_INDEX = new Map<string, number>();

function priceGroupOf(currency: string, priceBasis: string | null): number {
  const key = `${currency} ${priceBasis ?? ''}`;
  let group = PRICE_GROUP_INDEX.get(key);
  if (group === undefined) {
    group = PRICE_GROUPS.length;
    PRICE_GROUPS.push({ currency, priceBasis });
    PRICE_GROUP_INDEX.set(key, group);
  }
  return group;
}
