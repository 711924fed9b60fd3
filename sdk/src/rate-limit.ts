import type { RateLimit } from './errors.js';

/**
 * The key's rate-limit state from an answer's headers: `X-RateLimit-Limit`, `-Remaining` and
 * `-Reset` (D15) when the answer has all three, else the IETF fields the API sends with them (D29,
 * draft-ietf-httpapi-ratelimit-headers), which a proxy in between may have kept alone:
 * `RateLimit-Policy: "key";q=60;w=60` (the limit, `q`) and `RateLimit: "key";r=57;t=0` (the
 * remaining requests, `r`, and the seconds until one is admitted again, `t`). From those `reset`
 * is `now` + `t`, in Unix seconds: when the next request is admitted, which may be earlier than
 * when the whole limit is back (what `X-RateLimit-Reset` says). Undefined when neither set is whole
 * and well formed.
 */
export function parseRateLimit(headers: Headers, nowMs: number): RateLimit | undefined {
  const limit = integer(headers.get('x-ratelimit-limit'));
  const remaining = integer(headers.get('x-ratelimit-remaining'));
  const reset = integer(headers.get('x-ratelimit-reset'));
  if (limit !== undefined && remaining !== undefined && reset !== undefined) return { limit, remaining, reset };
  return fromIetfFields(headers.get('ratelimit-policy'), headers.get('ratelimit'), nowMs);
}

const integer = (text: string | null): number | undefined => (text !== null && /^\s*[0-9]{1,15}\s*$/.test(text) ? Number(text) : undefined);

/**
 * The IETF fields as a rate-limit state. Each `RateLimit` item names its policy (a string or a
 * token), found in `RateLimit-Policy` with its quota `q`; where several policies apply, the one with
 * the fewest requests left is the one that holds the client back. `t` absent means 0.
 */
function fromIetfFields(policyField: string | null, stateField: string | null, nowMs: number): RateLimit | undefined {
  if (policyField === null || stateField === null) return undefined;
  const policies = parseList(policyField);
  const states = parseList(stateField);
  if (policies === undefined || states === undefined) return undefined;
  let best: RateLimit | undefined;
  for (const state of states) {
    const policy = policies.find((p) => p.name !== undefined && p.name === state.name);
    const q = count(policy?.params.get('q'));
    const r = count(state.params.get('r'));
    const t = state.params.has('t') ? count(state.params.get('t')) : 0;
    if (q === undefined || r === undefined || t === undefined) continue;
    if (best === undefined || r < best.remaining) best = { limit: q, remaining: r, reset: Math.floor(nowMs / 1000) + t };
  }
  return best;
}

const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined);

interface Member {
  /** The item's value when it is a string or a token (a policy's name); undefined otherwise. */
  name: string | undefined;
  params: Map<string, unknown>;
}

const KEY = /[a-z*][a-z0-9_.*-]*/y;
const NUMBER = /-?[0-9]{1,15}(\.[0-9]{1,3})?/y;
const TOKEN = /[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/y;
const BYTES = /:[A-Za-z0-9+/=]*:/y;
const DISPLAY = /%"(?:[\x20-\x21\x23-\x24\x26-\x7e]|%[0-9a-f]{2})*"/y;

/** A bare item's value, `{ token }` for a token; `FAILED` on a syntax error. */
const FAILED = Symbol('failed');

/**
 * A structured-field List (RFC 9651, 4.2.1), enough to read any well-formed one: items and inner
 * lists, with parameters; bare items are integers, decimals, strings, tokens, byte sequences,
 * booleans, dates and display strings (the last three kept only as "something"). Undefined when the
 * field does not parse, as the RFC says a recipient must then ignore the whole field.
 */
function parseList(text: string): Member[] | undefined {
  return new ListReader(text).list();
}

class ListReader {
  #i = 0;
  constructor(private readonly text: string) {}

  list(): Member[] | undefined {
    const members: Member[] = [];
    this.#skip(' ');
    if (this.#end()) return members;
    for (;;) {
      const m = this.#member();
      if (m === undefined) return undefined;
      members.push(m);
      this.#skip(' \t');
      if (this.#end()) return members;
      if (this.#peek() !== ',') return undefined;
      this.#i++;
      this.#skip(' \t');
      if (this.#end()) return undefined;
    }
  }

  #member(): Member | undefined {
    let name: string | undefined;
    if (this.#peek() === '(') {
      if (!this.#innerList()) return undefined;
    } else {
      const v = this.#bareItem();
      if (v === FAILED) return undefined;
      name = typeof v === 'string' ? v : typeof v === 'object' && v !== null && 'token' in v ? (v as { token: string }).token : undefined;
    }
    const params = this.#params();
    return params === undefined ? undefined : { name, params };
  }

  /** An inner list: read to check it, kept as nothing the SDK needs. */
  #innerList(): boolean {
    this.#i++;
    for (;;) {
      this.#skip(' ');
      if (this.#peek() === ')') {
        this.#i++;
        return true;
      }
      if (this.#bareItem() === FAILED || this.#params() === undefined) return false;
      if (this.#peek() !== ' ' && this.#peek() !== ')') return false;
    }
  }

  #params(): Map<string, unknown> | undefined {
    const found = new Map<string, unknown>();
    while (this.#peek() === ';') {
      this.#i++;
      this.#skip(' ');
      const name = this.#match(KEY);
      if (name === undefined) return undefined;
      let value: unknown = true;
      if (this.#peek() === '=') {
        this.#i++;
        value = this.#bareItem();
        if (value === FAILED) return undefined;
      }
      found.set(name, value);
    }
    return found;
  }

  #bareItem(): unknown {
    const c = this.#peek();
    if (c === '"') return this.#string();
    if (c === '?') {
      const b = this.text[this.#i + 1];
      if (b !== '0' && b !== '1') return FAILED;
      this.#i += 2;
      return b === '1';
    }
    if (c === '@') {
      this.#i++;
      const n = this.#match(NUMBER);
      return n === undefined || n.includes('.') ? FAILED : { date: Number(n) };
    }
    if (c === '%') return this.#match(DISPLAY) === undefined ? FAILED : { display: true };
    if (c === ':') return this.#match(BYTES) === undefined ? FAILED : { bytes: true };
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      const n = this.#match(NUMBER);
      return n === undefined ? FAILED : Number(n);
    }
    const token = this.#match(TOKEN);
    return token === undefined ? FAILED : { token };
  }

  #string(): string | typeof FAILED {
    let out = '';
    for (this.#i++; this.#i < this.text.length; this.#i++) {
      const ch = this.text[this.#i]!;
      if (ch === '\\') {
        const next = this.text[++this.#i];
        if (next !== '"' && next !== '\\') return FAILED;
        out += next;
      } else if (ch === '"') {
        this.#i++;
        return out;
      } else if (ch < ' ' || ch > '~') {
        return FAILED;
      } else {
        out += ch;
      }
    }
    return FAILED;
  }

  #peek(): string | undefined {
    return this.text[this.#i];
  }

  #end(): boolean {
    return this.#i === this.text.length;
  }

  #skip(chars: string): void {
    while (this.#i < this.text.length && chars.includes(this.text[this.#i]!)) this.#i++;
  }

  #match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.#i;
    const m = pattern.exec(this.text);
    if (m === null) return undefined;
    this.#i += m[0].length;
    return m[0];
  }
}
