/**
 * What a configuration variable is, declared once (issue 42, item 2): its name, how it is read and
 * checked, its default, the values it takes and what it means. The parsed configuration's type,
 * the start-up error naming the variable and the README's table all come from these declarations
 * (config/index.ts), the way fastify/demo declares each variable once in a schema.
 */

export type Env = Readonly<Record<string, string | undefined>>;

/** A bad configuration value; the message always names the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

export interface Variable<T> {
  readonly name: string;
  /** The default, as the README shows it (Markdown). */
  readonly shownDefault: string;
  /** The values it takes, as the README shows them (Markdown). */
  readonly values: string;
  /** What it means (Markdown). */
  readonly description: string;
  /** Reads and checks it; throws a ConfigError naming it. `env` is whole: some variables depend on others. */
  read(env: Env): T;
}

/** The variable's value, trimmed; undefined when unset, empty or blank. */
export function rawValue(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

const code = (text: string | number) => `\`${text}\``;

/** Groups thousands for reading (65536 -> 65,536) where a figure is shown, never where it is parsed. */
function shownNumber(n: number): string {
  return n.toLocaleString('en-US');
}

interface Described {
  description: string;
}

/** A whole number between `min` and `max`, with a default. */
export function integer(
  name: string,
  spec: Described & { fallback: number; min: number; max: number; unit?: string },
): Variable<number> & { readonly fallback: number } {
  return {
    name,
    fallback: spec.fallback,
    shownDefault: code(spec.fallback),
    values: `${shownNumber(spec.min)} to ${shownNumber(spec.max)}${spec.unit ? ` ${spec.unit}` : ''}`,
    description: spec.description,
    read: (env) => readInteger(env, name, spec.fallback, spec.min, spec.max),
  };
}

export function readInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = rawValue(env, name);
  if (raw === undefined) return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw}`);
  return n;
}

export const TRUE_WORDS = ['1', 'true', 'yes', 'on'] as const;
export const FALSE_WORDS = ['0', 'false', 'no', 'off'] as const;

/** On or off, with a default. */
export function flag(name: string, spec: Described & { fallback: boolean }): Variable<boolean> {
  return {
    name,
    shownDefault: code(spec.fallback ? 'on' : 'off'),
    values: `${code('on')} (${TRUE_WORDS.filter((w) => w !== 'on').map(code).join(', ')}) or ${code('off')} (${FALSE_WORDS.filter((w) => w !== 'off').map(code).join(', ')})`,
    description: spec.description,
    read(env) {
      const raw = rawValue(env, name)?.toLowerCase();
      if (raw === undefined) return spec.fallback;
      if ((TRUE_WORDS as readonly string[]).includes(raw)) return true;
      if ((FALSE_WORDS as readonly string[]).includes(raw)) return false;
      throw new ConfigError(name, `expected one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ')}; got "${raw}"`);
    },
  };
}

/** One of a list of words (any case), with a default. */
export function choice<const W extends string>(name: string, spec: Described & { words: readonly W[]; fallback: W }): Variable<W> {
  return {
    name,
    shownDefault: code(spec.fallback),
    values: spec.words.map(code).join(', '),
    description: spec.description,
    read(env) {
      const raw = (rawValue(env, name) ?? spec.fallback).toLowerCase();
      if (!(spec.words as readonly string[]).includes(raw)) throw new ConfigError(name, `expected one of ${spec.words.join(', ')}, got "${raw}"`);
      return raw as W;
    },
  };
}

/** Any text, with a default. */
export function text(name: string, spec: Described & { fallback: string; values: string }): Variable<string> {
  return { name, shownDefault: code(spec.fallback), values: spec.values, description: spec.description, read: (env) => rawValue(env, name) ?? spec.fallback };
}

/** A variable with a reader of its own. */
export function custom<T>(
  name: string,
  spec: Described & { shownDefault: string; values: string; read: (raw: string | undefined, env: Env) => T },
): Variable<T> {
  return { name, shownDefault: spec.shownDefault, values: spec.values, description: spec.description, read: (env) => spec.read(rawValue(env, name), env) };
}
