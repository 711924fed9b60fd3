/**
 * The ids an import has read so far, to find an id given twice in one file (OPERATIONS "Import
 * format") in memory that does not grow with the file: a Bloom filter of 2^26 bits (8 MiB) and two
 * hashes. It never says "new" for an id it has seen; it may say "maybe seen" for a new one, which
 * the import settles by looking the id up among the lines it has staged. At 1,000,000 ids about
 * one in a thousand is such a false "maybe" (at 10,000,000, seven in a hundred). A Set of 31-bit
 * hashes did the same with no false "maybe" but took some 75 MB of the heap at 1,000,000 lines.
 */
export class SeenIds {
  private static readonly BITS = 26;
  private readonly words = new Uint32Array(2 ** (SeenIds.BITS - 5));

  /** Marks the id as seen; true when it may have been seen before, false when it certainly was not. */
  add(id: string): boolean {
    // FNV-1a, twice with different bases and primes: two hashes that do not move together.
    let a = 0x811c9dc5;
    let b = 0x050c5d1f;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000197);
    }
    return this.set(a >>> (32 - SeenIds.BITS)) & this.set(b >>> (32 - SeenIds.BITS)) ? true : false;
  }

  /** Sets bit `bit`; 1 when it was set already. */
  private set(bit: number): number {
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    const bits = this.words[word]!;
    this.words[word] = bits | mask;
    return (bits & mask) === 0 ? 0 : 1;
  }
}
