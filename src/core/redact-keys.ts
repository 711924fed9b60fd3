/**
 * Keys in a text that is logged, echoed in an error message, stored with a failed request or shown
 * on a page (D20): anything that a reader could turn into `<cc>_live_<secret>` (D2) keeps its
 * `<cc>_live_` part as written and loses its secret, replaced by `[redacted]`.
 *
 * "A reader could turn into" is taken generously: a false positive on something key-shaped costs a
 * few characters of a log line, a miss leaks a key. The text is read in every way below, alone and
 * combined, and a key found in any reading has its secret redacted in the original text (each
 * character of a reading knows which characters of the original it was read from):
 *
 * - percent-encoding, once or any number of times (`%5F`, `%255F`, `%25255F`...), bytes read as
 *   UTF-8 (or, when they are not UTF-8, as Latin-1), and JavaScript's `%uHHHH`;
 * - UTF-8 bytes shown as Latin-1 characters (`ï¼¿` for `＿`: how Node gives header values);
 * - HTML character references (`&#95;`, `&#x5f;`, `&lowbar;`, `&amp;#95;`...) and backslash escapes
 *   (`\x5f`, `\u005f`, `\u{5f}`, `\\u005f`...);
 * - Unicode compatibility forms (NFKD: full-width `＿`, `ｓｇ`, mathematical letters, ligatures),
 *   accents dropped, Cyrillic and Greek letters that look like Latin ones, any case;
 * - invisible characters (zero-width space, soft hyphen...: Default_Ignorable_Code_Point) ignored.
 *
 * In a reading (lowercased), a key is two letters, a delimiter, `live`, a delimiter and the secret.
 * How much of a secret it takes depends on how key-like the delimiters are:
 *
 * - both hold an underscore (`_`, `＿`, `%5F`..., with up to 4 characters of anything else but
 *   letters and digits: `_+`, `+_`, ` _ `): any secret of one [a-z0-9] or more, read on through
 *   separators a sloppy decoder or a person drops (`+`, spaces, dashes, underscores), as in
 *   `sg_live_+<secret>` or a secret written in groups;
 * - else, when each holds an underscore or is a run of `-`, `+` or spaces (`sg-live-`,
 *   `sg live `), or the country's letters are cut (`_live_<secret>`): 16 or more [a-z0-9] in a row;
 * - else, with no delimiter on one side or both (`sglive<secret>`): 32 or more in a row.
 *
 * So "deliver", "uk-live-music", "live_music" and `https://live.example` (a delimiter of `://` is
 * none of these) stay as they are. The letters need not start a word (`x` + key is redacted too).
 */

/** Redacted text left as it is by a second pass (the `[redacted]` after a key's prefix is no secret). */
const MARKER = '[redacted]';

/**
 * The cheap look that nearly every text takes (every logged path): a text of ASCII with no `%`, `&`
 * or `\` and no control character but whitespace has exactly one reading, itself in lowercase, and
 * a key in it holds `live`. Anything else (an escape, an invisible character, any character past
 * ASCII) goes to the full reading.
 */
// Control characters are what it looks for (an encoded or smuggled key), hence no-control-regex.
// eslint-disable-next-line no-control-regex
const MAY_HOLD_KEY = /[\u0000-\u0008\u000e-\u001f%&\\\u007f-\uffff]|live/i;

/**
 * Decoding stops here. `%25...` and `&amp;...` are folded in one round each, so a real text needs
 * two or three; one still decoding after this many (escapes of one kind nested in another) is
 * nothing a client sends by mistake, and is withheld whole.
 */
const MAX_ROUNDS = 12;
const UNDECODABLE = '[redacted: undecodable text]';

export function redactKeys(text: string): string {
  return MAY_HOLD_KEY.test(text) ? redactReadings(text) : text;
}

/**
 * The first `max` characters of a text once redacted: redacted before the cut, so that a cut
 * through a key's prefix cannot hide the secret after it from the redaction. Only the first few
 * thousand characters are read, which bounds the work a long URL of escapes can cause; what lies
 * past them is not in the excerpt.
 */
export function redactedExcerpt(text: string, max: number): string {
  const window = Math.max(2048, max * 4);
  return redactKeys(text.length > window ? text.slice(0, window) : text).slice(0, max);
}

// ---------------------------------------------------------------- readings

/** A reading: code points, each with the range of the original text it was read from. */
interface Reading {
  cps: Int32Array;
  from: Int32Array;
  to: Int32Array;
}

function literal(text: string): Reading {
  const cps = new Int32Array(text.length);
  const from = new Int32Array(text.length);
  const to = new Int32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; n++) {
    const cp = text.codePointAt(i)!;
    cps[n] = cp;
    from[n] = i;
    i += cp > 0xffff ? 2 : 1;
    to[n] = i;
  }
  return { cps: cps.subarray(0, n), from: from.subarray(0, n), to: to.subarray(0, n) };
}

function redactReadings(text: string): string {
  let reading = literal(text);
  const spans: Array<[number, number]> = [];
  for (let round = 0; ; round++) {
    findSecrets(reading, text, spans);
    const next = decodeOnce(reading);
    if (next === undefined) break;
    if (round === MAX_ROUNDS) return UNDECODABLE;
    reading = next;
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (let i = 0; i < spans.length; ) {
    const from = spans[i]![0];
    let to = spans[i]![1];
    // Overlapping or touching secrets (found in several readings) become one marker.
    for (i++; i < spans.length && spans[i]![0] <= to; i++) to = Math.max(to, spans[i]![1]);
    out += text.slice(at, from) + MARKER;
    at = to;
  }
  return out + text.slice(at);
}

const isHex = (cp: number | undefined) => cp !== undefined && ((cp >= 48 && cp <= 57) || (cp >= 65 && cp <= 70) || (cp >= 97 && cp <= 102));
const hexValue = (cp: number) => (cp <= 57 ? cp - 48 : (cp | 0x20) - 87);

/** A decoded code point or byte at a position of a reading, and where its escape ends. */
interface Decoded {
  value: number;
  /** A byte of UTF-8 (percent-encoding) rather than a code point. */
  byte: boolean;
  end: number;
}

function hexRun(cps: Int32Array, at: number, n: number): number | undefined {
  let v = 0;
  for (let k = 0; k < n; k++) {
    const cp = cps[at + k];
    if (!isHex(cp)) return undefined;
    v = v * 16 + hexValue(cp!);
  }
  return v;
}

/** `%HH`, `%uHHHH`, each after any number of `25` (the `%` itself encoded again: `%255F`). */
function percentEscape(cps: Int32Array, i: number): Decoded | undefined {
  let j = i + 1;
  const escapeAt = (k: number): Decoded | undefined => {
    if (cps[k] === 0x75 || cps[k] === 0x55) {
      const v = hexRun(cps, k + 1, 4);
      return v === undefined ? undefined : { value: v, byte: false, end: k + 5 };
    }
    const v = hexRun(cps, k, 2);
    return v === undefined ? undefined : { value: v, byte: true, end: k + 2 };
  };
  while (cps[j] === 0x32 && cps[j + 1] === 0x35 && escapeAt(j + 2) !== undefined) j += 2;
  return escapeAt(j);
}

/** The few named references that make a separator or an escape; letters only come as numbers. */
const NAMED_REFERENCES: ReadonlyMap<string, number> = new Map([
  ['lowbar', 0x5f], ['underbar', 0x5f], ['hyphen', 0x2010], ['dash', 0x2010], ['minus', 0x2212], ['nbsp', 0xa0],
  ['plus', 0x2b], ['percnt', 0x25], ['bsol', 0x5c], ['num', 0x23], ['period', 0x2e], ['sol', 0x2f],
]);

/** `&#95;`, `&#x5f;` (the `;` optional), a named reference of NAMED_REFERENCES, each after any number of `amp;` (`&amp;#95;`: escaped twice). */
function htmlReference(cps: Int32Array, i: number): Decoded | undefined {
  let j = i + 1;
  const isAmp = (k: number) => (cps[k]! | 0x20) === 0x61 && (cps[k + 1]! | 0x20) === 0x6d && (cps[k + 2]! | 0x20) === 0x70 && cps[k + 3] === 0x3b;
  while (isAmp(j)) j += 4;
  const reference = referenceAt(cps, j);
  // `&amp;` (any number of times) before nothing else it escapes: the `&` it stands for.
  return reference ?? (j > i + 1 ? { value: 0x26, byte: false, end: j } : undefined);
}

function referenceAt(cps: Int32Array, j: number): Decoded | undefined {
  if (cps[j] === 0x23) {
    const hex = cps[j + 1] === 0x78 || cps[j + 1] === 0x58;
    const start = j + (hex ? 2 : 1);
    let k = start;
    let v = 0;
    while (k - start < 8 && (hex ? isHex(cps[k]) : cps[k] !== undefined && cps[k]! >= 48 && cps[k]! <= 57)) {
      v = v * (hex ? 16 : 10) + (hex ? hexValue(cps[k]!) : cps[k]! - 48);
      k++;
    }
    if (k === start || v === 0 || v > 0x10ffff) return undefined;
    return { value: v, byte: false, end: cps[k] === 0x3b ? k + 1 : k };
  }
  let name = '';
  for (let k = j; k < j + 10 && cps[k] !== undefined; k++) {
    if (cps[k] === 0x3b) {
      const v = NAMED_REFERENCES.get(name.toLowerCase());
      return v === undefined ? undefined : { value: v, byte: false, end: k + 1 };
    }
    name += String.fromCodePoint(cps[k]!);
  }
  return undefined;
}

/** `\xHH`, `\uHHHH` (a surrogate pair of two), `\u{H...}`, each after any number of backslashes (`\\u005f`: escaped twice). */
function backslashEscape(cps: Int32Array, i: number): Decoded | undefined {
  let j = i + 1;
  while (cps[j] === 0x5c) j++;
  if (cps[j] === 0x78) {
    const v = hexRun(cps, j + 1, 2);
    return v === undefined ? undefined : { value: v, byte: false, end: j + 3 };
  }
  if (cps[j] !== 0x75) return undefined;
  if (cps[j + 1] === 0x7b) {
    let k = j + 2;
    let v = 0;
    while (k - j - 2 < 6 && isHex(cps[k])) v = v * 16 + hexValue(cps[k++]!);
    return k > j + 2 && cps[k] === 0x7d && v <= 0x10ffff ? { value: v, byte: false, end: k + 1 } : undefined;
  }
  const v = hexRun(cps, j + 1, 4);
  if (v === undefined) return undefined;
  if (v >= 0xd800 && v <= 0xdbff && cps[j + 5] === 0x5c) {
    const low = backslashEscape(cps, j + 5);
    if (low !== undefined && low.value >= 0xdc00 && low.value <= 0xdfff) {
      return { value: 0x10000 + ((v - 0xd800) << 10) + (low.value - 0xdc00), byte: false, end: low.end };
    }
  }
  return { value: v, byte: false, end: j + 5 };
}

/** A byte at i: a percent-encoded one, or a character U+0080..U+00FF read as the byte it is in Latin-1. */
function byteAt(r: Reading, i: number): Decoded | undefined {
  const cp = r.cps[i];
  if (cp === 0x25) {
    const d = percentEscape(r.cps, i);
    return d?.byte ? d : undefined;
  }
  return cp !== undefined && cp >= 0x80 && cp <= 0xff ? { value: cp, byte: true, end: i + 1 } : undefined;
}

/** A UTF-8 sequence starting at i (its lead byte given), as one code point, or undefined. */
function utf8At(r: Reading, i: number, lead: Decoded): Decoded | undefined {
  const b = lead.value;
  const n = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
  if (n === 0) return undefined;
  let cp = b & (0x3f >> n);
  let end = lead.end;
  for (let k = 0; k < n; k++) {
    const next = byteAt(r, end);
    if (next === undefined) return undefined;
    const c = next.value;
    // The second byte's range rules out overlong forms, surrogates and code points past U+10FFFF.
    const low = k === 0 && b === 0xe0 ? 0xa0 : k === 0 && b === 0xf0 ? 0x90 : 0x80;
    const high = k === 0 && b === 0xed ? 0x9f : k === 0 && b === 0xf4 ? 0x8f : 0xbf;
    if (c < low || c > high) return undefined;
    cp = (cp << 6) | (c & 0x3f);
    end = next.end;
  }
  return { value: cp, byte: false, end };
}

/** One round of decoding of every escape in the reading; undefined when there is none. */
function decodeOnce(r: Reading): Reading | undefined {
  const { cps } = r;
  const length = cps.length;
  let first = 0;
  while (first < length && !mayDecode(cps[first]!)) first++;
  if (first === length) return undefined;
  const out = { cps: new Int32Array(length), from: new Int32Array(length), to: new Int32Array(length) };
  out.cps.set(cps.subarray(0, first));
  out.from.set(r.from.subarray(0, first));
  out.to.set(r.to.subarray(0, first));
  let n = first;
  let changed = false;
  for (let i = first; i < length; n++) {
    const cp = cps[i]!;
    let d: Decoded | undefined;
    if (cp === 0x25) d = percentEscape(cps, i);
    else if (cp === 0x26) d = htmlReference(cps, i);
    else if (cp === 0x5c) d = backslashEscape(cps, i);
    // A Latin-1 character is decoded only as part of a UTF-8 sequence; alone it is itself.
    else if (cp >= 0x80 && cp <= 0xff) d = utf8At(r, i, { value: cp, byte: true, end: i + 1 });
    if (d !== undefined && d.byte && d.value >= 0x80) {
      // A percent-encoded byte past ASCII: a UTF-8 sequence if it starts one, else a Latin-1 character.
      d = utf8At(r, i, d) ?? { value: d.value, byte: false, end: d.end };
    }
    out.from[n] = r.from[i]!;
    if (d === undefined) {
      out.cps[n] = cp;
      out.to[n] = r.to[i]!;
      i++;
    } else {
      changed = true;
      out.cps[n] = d.value;
      out.to[n] = r.to[d.end - 1]!;
      i = d.end;
    }
  }
  return changed ? { cps: out.cps.subarray(0, n), from: out.from.subarray(0, n), to: out.to.subarray(0, n) } : undefined;
}

/** `%`, `&`, `\` and U+0080..U+00FF: where an escape or a UTF-8 byte shown as Latin-1 may start. */
const mayDecode = (cp: number) => cp === 0x25 || cp === 0x26 || cp === 0x5c || (cp >= 0x80 && cp <= 0xff);

// ---------------------------------------------------------------- matching

/** Cyrillic and Greek letters drawn like Latin ones, and a few more (a reader sees the Latin letter, or `_`). */
const LOOKALIKES: ReadonlyMap<number, string> = new Map(
  [
    ['а', 'a'], ['в', 'b'], ['с', 'c'], ['ԁ', 'd'], ['е', 'e'], ['ё', 'e'], ['һ', 'h'], ['і', 'i'], ['ї', 'i'], ['ј', 'j'], ['к', 'k'],
    ['ӏ', 'l'], ['м', 'm'], ['н', 'h'], ['о', 'o'], ['р', 'p'], ['ԛ', 'q'], ['ѕ', 's'], ['т', 't'], ['у', 'y'], ['ѵ', 'v'], ['ԝ', 'w'], ['х', 'x'],
    ['α', 'a'], ['β', 'b'], ['ε', 'e'], ['η', 'n'], ['ι', 'i'], ['κ', 'k'], ['ν', 'v'], ['ο', 'o'], ['ρ', 'p'], ['τ', 't'], ['υ', 'u'], ['χ', 'x'],
    ['ı', 'i'], ['ȷ', 'j'], ['ł', 'l'], ['ƚ', 'l'], ['ǀ', 'l'], ['ɩ', 'i'], ['ʋ', 'v'], ['ˍ', '_'],
  ].map(([from, to]) => [from!.codePointAt(0)!, to!]),
);
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const MARKS = /\p{M}/gu;
const DASHES = /\p{Pd}/gu;
const CONNECTORS = /\p{Pc}/gu;
const SPACES = /[\p{Zs}\t\n\r\f\v]/gu;

/** What a character of a reading is to a reader: lowercase ASCII where it has an ASCII look, '' when invisible. */
function readAs(cp: number): string {
  if (cp < 0x80) {
    if (cp >= 65 && cp <= 90) return String.fromCharCode(cp + 32);
    if (cp >= 0x20 && cp < 0x7f) return String.fromCharCode(cp);
    return cp >= 0x09 && cp <= 0x0d ? ' ' : ''; // whitespace; other control characters show as nothing
  }
  if (cp <= 0x9f) return '';
  const ch = String.fromCodePoint(cp);
  if (IGNORABLE.test(ch)) return '';
  const lookalike = LOOKALIKES.get(cp);
  if (lookalike !== undefined) return lookalike;
  const s = ch.normalize('NFKD').toLowerCase().normalize('NFKD').replace(MARKS, '').replace(DASHES, '-').replace(CONNECTORS, '_').replace(SPACES, ' ');
  let out = '';
  for (const c of s) out += c.charCodeAt(0) < 0x80 ? c : (LOOKALIKES.get(c.codePointAt(0)!) ?? c);
  return out;
}

/** The country's letters, a delimiter, `live`, a delimiter, and a secret read on through separators; `secretOf` says whether it is one. */
const KEY_SHAPE = /([a-z]{0,2})([^a-z0-9]{0,4})live([^a-z0-9]{0,4})([a-z0-9](?:[ +_-]*[a-z0-9])*)/g;
const SEPARATORS = /^[ +-]+$/;
const LEADING_RUN = /^[a-z0-9]*/;

/** How much of a match's secret group is a secret (see the top of the file): its length, or 0 for none. */
function secretOf(country: string, before: string, after: string, secret: string): number {
  if (country.length === 2 && before.includes('_') && after.includes('_')) return secret.length;
  if (!(before === '' || before.includes('_') || SEPARATORS.test(before))) return 0;
  if (!(after === '' || after.includes('_') || SEPARATORS.test(after))) return 0;
  const run = LEADING_RUN.exec(secret)![0].length;
  return run >= (before === '' || after === '' ? 32 : 16) ? run : 0;
}

/** Adds the original ranges of the secrets of the keys in this reading. */
function findSecrets(r: Reading, text: string, spans: Array<[number, number]>): void {
  const seen = readingAsSeen(r);
  if (!seen.text.includes('live')) return;
  const { owner } = seen;
  KEY_SHAPE.lastIndex = 0;
  for (let m = KEY_SHAPE.exec(seen.text); m !== null; m = KEY_SHAPE.exec(seen.text)) {
    const secretStart = m.index + m[0].length - m[4]!.length;
    const length = secretOf(m[1]!, m[2]!, m[3]!, m[4]!);
    if (length === 0) {
      // Not a key here; one may start in what this match took (`uk-live-sg_live_...`).
      KEY_SHAPE.lastIndex = m.index + 1;
      continue;
    }
    const from = r.from[owner[secretStart]!]!;
    const to = r.to[owner[secretStart + length - 1]!]!;
    // `[redacted]` (or a cut `[reda`) of an earlier pass is not a secret: redacting stays idempotent.
    const written = text.slice(from, to);
    if (!(text[from - 1] === '[' && 'redacted'.startsWith(written))) spans.push([from, to]);
    // The secret may hold the prefix of another key (`sg_live_sg_live_...`): look again from it.
    KEY_SHAPE.lastIndex = secretStart;
  }
}

/** The reading as a reader sees it (readAs of each code point), and the code point each character of that comes from. */
function readingAsSeen(r: Reading): { text: string; owner: Int32Array } {
  const { cps } = r;
  let codes = new Uint16Array(cps.length + 16);
  let owner = new Int32Array(codes.length);
  let n = 0;
  for (let u = 0; u < cps.length; u++) {
    const cp = cps[u]!;
    if (cp >= 0x20 && cp < 0x7f) {
      codes[n] = cp >= 65 && cp <= 90 ? cp + 32 : cp;
      owner[n++] = u;
      continue;
    }
    const s = readAs(cp);
    if (n + s.length > codes.length) {
      const grown = new Uint16Array(codes.length * 2 + s.length);
      grown.set(codes);
      codes = grown;
      const grownOwner = new Int32Array(grown.length);
      grownOwner.set(owner);
      owner = grownOwner;
    }
    for (let k = 0; k < s.length; k++) {
      codes[n] = s.charCodeAt(k);
      owner[n++] = u;
    }
  }
  let text = '';
  for (let at = 0; at < n; at += 4096) text += String.fromCharCode.apply(null, codes.subarray(at, Math.min(n, at + 4096)) as unknown as number[]);
  return { text, owner };
}
