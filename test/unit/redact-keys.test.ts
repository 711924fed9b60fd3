import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateKey, redactedExcerpt, redactKeys } from '../../src/auth/key-format.js';
import { COUNTRY_CODES } from '../../src/core/countries.js';
import { prng } from '../support/random.js';

/**
 * D20, issue 29 item 7: a key that a reader could decode from a text (percent-encoding once or
 * more, HTML references, backslash escapes, UTF-8 shown as Latin-1, Unicode compatibility forms,
 * look-alike letters, case, invisible characters and sloppy separators) never survives redactKeys.
 * The property test writes thousands of keys in random mixes of those encodings, and reads the
 * redacted text back with a decoder of its own (built on the platform's decoders, not on the
 * implementation's) to check that no run of 8 characters of any secret is left.
 */

const random = prng(29_7);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const chance = (p: number) => random() < p;
const hex = (n: number, width: number) => {
  const h = n.toString(16).padStart(width, '0');
  return chance(0.5) ? h.toUpperCase() : h;
};
const utf8 = (text: string) => [...Buffer.from(text, 'utf8')];

// ---------------------------------------------------------------- how a character may look

const LATIN_TO_CYRILLIC: Record<string, string> = { a: 'а', c: 'с', e: 'е', i: 'і', o: 'о', p: 'р', s: 'ѕ', x: 'х', y: 'у', j: 'ј', v: 'ѵ', l: 'ӏ', h: 'һ', d: 'ԁ', q: 'ԛ', w: 'ԝ' };

type Look = (c: string) => string;
const LOOKS: ReadonlyArray<[string, Look]> = [
  ['plain', (c) => c],
  ['case swapped', (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())],
  ['full-width', (c) => (c.charCodeAt(0) > 0x20 && c.charCodeAt(0) < 0x7f ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c)],
  ['mathematical bold', (c) => {
    const code = c.charCodeAt(0);
    if (code >= 65 && code <= 90) return String.fromCodePoint(0x1d400 + code - 65);
    if (code >= 97 && code <= 122) return String.fromCodePoint(0x1d41a + code - 97);
    if (code >= 48 && code <= 57) return String.fromCodePoint(0x1d7ce + code - 48);
    return c;
  }],
  ['circled', (c) => {
    const code = c.charCodeAt(0);
    if (code >= 97 && code <= 122) return String.fromCodePoint(0x24d0 + code - 97);
    if (code >= 65 && code <= 90) return String.fromCodePoint(0x24b6 + code - 65);
    if (code >= 49 && code <= 57) return String.fromCodePoint(0x2460 + code - 49);
    return code === 48 ? '\u24ea' : c;
  }],
  ['look-alike', (c) => LATIN_TO_CYRILLIC[c] ?? c],
  ['accented', (c) => (/[a-z]/i.test(c) ? `${c}\u0301` : c)],
];

// ---------------------------------------------------------------- how a code point may be escaped

type Escape = (cp: string) => string;
const ESCAPES: ReadonlyArray<[string, Escape, number]> = [
  ['none', (c) => c, 8],
  // The `%` encoded again 0 to 3 times: %5F, %255F, %25255F...
  ['percent', (c) => {
    const again = '25'.repeat(Math.floor(random() * 4));
    return utf8(c).map((b) => `%${again}${hex(b, 2)}`).join('');
  }, 3],
  ['%u', (c) => (c.length === 1 ? `%u${hex(c.charCodeAt(0), 4)}` : c), 1],
  ['html decimal', (c) => `&${'amp;'.repeat(Math.floor(random() * 3))}#${c.codePointAt(0)};`, 1],
  ['html hex', (c) => `&${'amp;'.repeat(Math.floor(random() * 3))}#x${hex(c.codePointAt(0)!, 1)};`, 1],
  ['backslash', (c) => {
    const cp = c.codePointAt(0)!;
    const slashes = '\\'.repeat(1 + Math.floor(random() * 3));
    if (cp < 0x100 && chance(0.4)) return `${slashes}x${hex(cp, 2)}`;
    if (cp <= 0xffff && chance(0.6)) return `${slashes}u${hex(cp, 4)}`;
    return `${slashes}u{${hex(cp, 1)}}`;
  }, 1],
  // UTF-8 shown as Latin-1, as Node gives a header value sent in UTF-8.
  ['mojibake', (c) => Buffer.from(c, 'utf8').toString('latin1'), 1],
];
const ESCAPE_BAG = ESCAPES.flatMap(([name, escape, weight]) => Array.from({ length: weight }, () => [name, escape] as const));

const INVISIBLES = ['\u200b', '\u00ad', '\u200d', '\ufeff', '\u2060'];

/** One character of a key written in a random look, each of its code points escaped at random, maybe with invisible characters around it. */
function write(c: string, looks: readonly Look[], used: Set<string>): string {
  const look = pick(looks);
  let out = '';
  for (const cp of look(c)) {
    const [name, escape] = pick(ESCAPE_BAG);
    used.add(name);
    out += escape(cp);
  }
  if (chance(0.06)) out += write(pick(INVISIBLES), [(x) => x], used);
  return out;
}

const UNDERSCORES = ['_', '＿', '﹏', '‿', '_+', '+_', ' _ ', '__', '_-', '-_', '._'];
const SEPARATORS = ['-', '+', ' ', '--', '\u2010', ' + ', '\u3000'];
const IN_SECRET = ['+', ' ', '-', '_', '  '];
const BEFORE = ['', '/v1/listings/', 'https://', 'x', 'Bearer ', '/v1/listings?page=', 'origin: '];
const AFTER = ['', '/rest', '.example.com', '?page=2', '"', ' and more text'];

/** Whole-text layers a transport or a log may add on top. */
const LAYERS: ReadonlyArray<[string, (text: string) => string]> = [
  ['percent again', (t) => t.replaceAll('%', '%25')],
  ['encodeURIComponent', (t) => encodeURIComponent(t)],
  ['html escaped', (t) => t.replaceAll('&', '&amp;')],
  ['backslashes escaped', (t) => t.replaceAll('\\', '\\\\')],
  ['UTF-8 as Latin-1', (t) => Buffer.from(t, 'utf8').toString('latin1')],
];

interface Case {
  text: string;
  secret: string;
  how: string;
}

function keyInText(): Case {
  const key = generateKey(pick(COUNTRY_CODES));
  const secret = key.slice('sg_live_'.length);
  const looks = [...new Set([pick(LOOKS), pick(LOOKS), pick(LOOKS)].map(([, look]) => look))];
  const used = new Set<string>();
  // Delimiters: both with an underscore (any secret, read through separators), else dashes,
  // pluses or spaces (16 characters in a row), or none on a side (32 in a row): redact-keys.ts.
  const kind = pick(['underscore', 'underscore', 'underscore', 'separator', 'none'] as const);
  const delimiter = (): string => (kind === 'underscore' ? pick(UNDERSCORES) : kind === 'separator' ? pick(SEPARATORS) : pick(['', '_', '-']));
  const [d1, d2] = kind === 'none' && chance(0.5) ? ['', ''] : [delimiter(), delimiter()];
  const writeAll = (text: string) => [...text].map((c) => write(c, looks, used)).join('');
  // Now and then the country's letters are cut (one or both): then it takes 16 in a row.
  const country = kind === 'underscore' && chance(0.1) ? key.slice(Math.floor(random() * 2) + 1, 2) : key.slice(0, 2);
  let body = writeAll(country) + writeAll(d1) + writeAll('live') + writeAll(d2);
  for (const c of secret) {
    body += write(c, looks, used);
    if (kind === 'underscore' && country.length === 2 && chance(0.08)) body += writeAll(pick(IN_SECRET));
  }
  let text = pick(BEFORE) + body + pick(AFTER);
  const layers: string[] = [];
  for (let n = Math.floor(random() * 3); n > 0; n--) {
    const [name, layer] = pick(LAYERS);
    text = layer(text);
    layers.push(name);
  }
  return { text, secret, how: `country ${JSON.stringify(country)}, ${kind} delimiters ${JSON.stringify([d1, d2])}, escapes ${[...used].join(', ')}, layers ${layers.join(', ') || 'none'}` };
}

// ---------------------------------------------------------------- a reader's decoder (the test's own)

const CYRILLIC_TO_LATIN = new Map(Object.entries(LATIN_TO_CYRILLIC).map(([latin, cyrillic]) => [cyrillic, latin]));

/** The UTF-8 sequences in a run of Latin-1 characters (each the byte it is) decoded; other characters left. */
function utf8InLatin1(run: string): string {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let out = '';
  for (let i = 0; i < run.length; ) {
    const lead = run.charCodeAt(i);
    const n = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    let decoded: string | undefined;
    if (n > 1 && i + n <= run.length) {
      try {
        decoded = decoder.decode(Buffer.from(run.slice(i, i + n), 'latin1'));
      } catch {
        decoded = undefined;
      }
    }
    out += decoded ?? run[i]!;
    i += decoded === undefined ? 1 : n;
  }
  return out;
}

/** Everything a reader could decode, then only the letters and digits, in lowercase. */
function readerView(text: string): string {
  let t = text;
  for (let round = 0; round < 20; round++) {
    const before = t;
    t = t
      .replace(/&amp;/gi, '&')
      .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
      .replace(/&#([0-9]+);/g, (_, d: string) => String.fromCodePoint(parseInt(d, 10)))
      .replace(/\\+u\{([0-9a-f]+)\}/gi, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
      .replace(/\\+u([0-9a-f]{4})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\+x([0-9a-f]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/%u([0-9a-f]{4})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
        const bytes = Buffer.from(run.replaceAll('%', ''), 'hex');
        try {
          return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
        } catch {
          return bytes.toString('latin1');
        }
      })
      .replace(/[\u0080-\u00ff]+/g, utf8InLatin1);
    if (t === before) break;
  }
  return [...t.normalize('NFKD').toLowerCase().normalize('NFKD')]
    .map((c) => CYRILLIC_TO_LATIN.get(c) ?? c)
    .join('')
    .replace(/[^a-z0-9]/g, '');
}

/** A run of 8 characters of the secret that the text still shows, as written or decoded. */
function survivingRun(text: string, secret: string): string | undefined {
  const views = [readerView(text), text.toLowerCase().replace(/[^a-z0-9]/g, '')];
  const lower = secret.toLowerCase();
  for (let i = 0; i + 8 <= lower.length; i++) {
    const run = lower.slice(i, i + 8);
    if (views.some((view) => view.includes(run))) return run;
  }
  return undefined;
}

describe('redactKeys (D20, issue 29 item 7): a key in any encoding a reader could undo', () => {
  const key = generateKey('sg');
  const secret = key.slice('sg_live_'.length);

  it("redacts the issue's forms: double percent-encoding, a `+` after the prefix, full-width underscores", () => {
    const forms = [
      `/v1/listings/sg%255Flive%255F${secret}`,
      `/v1/listings/sg_live_+${secret}`,
      `/v1/listings/sg＿live＿${secret}`,
      `/v1/listings/${encodeURIComponent('sg＿live＿')}${secret}`,
      // As Node hands a UTF-8 header value over: each byte a Latin-1 character.
      Buffer.from(`https://sg＿live＿${secret}.example`, 'utf8').toString('latin1'),
    ];
    for (const form of forms) {
      const redacted = redactKeys(form);
      assert.equal(survivingRun(redacted, secret), undefined, `${form} -> ${redacted}`);
      assert.ok(redacted.includes('[redacted]'), redacted);
    }
    assert.equal(redactKeys(`/v1/listings/sg%255Flive%255F${secret}`), '/v1/listings/sg%255Flive%255F[redacted]', 'the prefix is kept as written');
  });

  it('never leaves a run of 8 characters of the secret, over 4,000 keys in random mixes of encodings', () => {
    for (let i = 0; i < 4000; i++) {
      const { text, secret: s, how } = keyInText();
      // The case is a real leak to start with: the test's reader finds the whole secret.
      assert.ok(readerView(text).includes(s.toLowerCase()), `the reader decodes the key (${how}): ${JSON.stringify(text)}`);
      const redacted = redactKeys(text);
      const run = survivingRun(redacted, s);
      assert.equal(run, undefined, `"${run}" of the secret survives (${how}):\n  ${JSON.stringify(text)}\n  -> ${JSON.stringify(redacted)}`);
      assert.ok(!redacted.includes('undecodable'), `decoded within the rounds (${how})`);
      assert.equal(redactKeys(redacted), redacted, `a second pass changes nothing (${how}): ${JSON.stringify(redacted)}`);
    }
  });

  it('leaves texts without a key as they are, even with escapes, non-ASCII or the word "live" in them', () => {
    const texts = [
      '/v1/listings',
      '/v1/listings/3f2a1c4e-1111-4222-8333-944445555666',
      '/v1/listings/changes',
      '/v1/listings/deliver-now',
      '/v1/listings/the-olive-tree%20apartments',
      '/v1/listings/uk-live-music-venue-for-lease',
      '/v1/listings/live',
      '/v1/listings/live_music_venue',
      'https://live.example.com',
      'https://uk-live-music.example',
      'https://shop.example.com',
      '/v1/listings/caf%C3%A9-r%C3%A9sidence',
      'Query parameter "page" must be 1 or more.',
      'No route GET /v1/listings/sg_live_[redacted]/x. The API serves GET /v1/listings and GET /v1/listings/{id}.',
      'No route GET /v1/listings/sg_live_[reda…',
      '127.0.0.1',
      '::ffff:10.0.0.1',
      'Ｔｏｋｙｏ オフィス',
    ];
    for (const text of texts) assert.equal(redactKeys(text), text, text);
  });

  it('also redacts a secret written without underscores, when it is long enough to be one', () => {
    assert.equal(redactKeys(`sg-live-${secret}`), 'sg-live-[redacted]');
    assert.equal(redactKeys(`sg live ${secret}`), 'sg live [redacted]');
    assert.equal(redactKeys(`sglive${secret}`), 'sglive[redacted]');
    assert.equal(redactKeys(`sg\u200blive\u200b${secret}`), 'sg\u200blive\u200b[redacted]');
    assert.equal(redactKeys('uk-live-stream'), 'uk-live-stream', 'too short for a secret without underscores');
    // A key right after what the last one took: its two letters end the other's secret.
    const other = generateKey('my').slice('my_live_'.length);
    assert.equal(redactKeys(`sg-live-${secret}_live_${other}`), 'sg-live-[redacted]_live_[redacted]');
    assert.equal(redactKeys(`sg-live-${secret}/xy_live_${other}`), 'sg-live-[redacted]/xy_live_[redacted]');
    // The country's letters cut off: the secret is still one.
    assert.equal(redactKeys(`/v1/listings/g_live_${secret}`), '/v1/listings/g_live_[redacted]');
    assert.equal(redactKeys(`/v1/listings/_live_${secret}`), '/v1/listings/_live_[redacted]');
    assert.equal(redactKeys('/v1/listings/live_music'), '/v1/listings/live_music');
  });

  it('a text that is still decoding after many rounds is withheld whole', () => {
    // `%25` and `&amp;` are folded in one round each; escapes of one kind inside another are not.
    const nested = (layers: number) => {
      let underscore = '%5F';
      for (let i = 0; i < layers; i++) underscore = i % 2 === 0 ? underscore.replaceAll('%', '&#37;') : underscore.replaceAll('&', '%26');
      return `/v1/listings/sg${underscore}live${underscore}${secret}`;
    };
    const six = nested(6);
    assert.equal(redactKeys(six), `${six.slice(0, -secret.length)}[redacted]`, 'six layers are read');
    assert.equal(redactKeys(nested(20)), '[redacted: undecodable text]');
  });

  it('redactedExcerpt redacts before it cuts, and keeps only the first characters', () => {
    const text = `/v1/listings/${'a'.repeat(266)}/sg%255Flive%255F${secret}`;
    const excerpt = redactedExcerpt(text, 300);
    assert.equal(excerpt.length, 300);
    assert.equal(survivingRun(excerpt, secret), undefined, excerpt);
    assert.ok(excerpt.endsWith('sg%255Flive%255F[red'), excerpt);
    assert.equal(redactedExcerpt('/v1/listings', 300), '/v1/listings');
  });
});
