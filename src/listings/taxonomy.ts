/** Spec 2.2: the two-level usage taxonomy (main type, then an optional sub-type). */
export const USAGE_TAXONOMY: Readonly<Record<string, readonly string[]>> = {
  Office: ['Shared Office'],
  'F&B': ['Pub', 'Cafe', 'Restaurant', 'Cloud Kitchen'],
  Industrial: ['Food Factory', 'Warehouse'],
  Retail: ['Kiosk', 'Shop', 'Anchor'],
  Clinic: [],
};

/** Why `usage_types` is not `[main]` or `[main, sub]` of the taxonomy, or undefined when it is. */
export function usageTypesProblem(value: readonly string[]): string | undefined {
  const [main, sub, ...rest] = value;
  if (main === undefined) return 'must hold the main type (one of ' + Object.keys(USAGE_TAXONOMY).join(', ') + ')';
  const subs = USAGE_TAXONOMY[main];
  if (subs === undefined || !Object.hasOwn(USAGE_TAXONOMY, main)) {
    return `"${main}" is not a main usage type (expected one of ${Object.keys(USAGE_TAXONOMY).join(', ')})`;
  }
  if (sub !== undefined && !subs.includes(sub)) {
    return subs.length === 0 ? `"${main}" has no sub-types` : `"${sub}" is not a sub-type of "${main}" (expected one of ${subs.join(', ')})`;
  }
  if (rest.length > 0) return 'holds at most two entries: the main type, then a sub-type';
  return undefined;
}

/** Every taxonomy name, main types and sub-types, each with its own bit (for filters on an index, D23). */
export const USAGE_NAMES: readonly string[] = Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [main, ...subs]);
const USAGE_BIT = new Map(USAGE_NAMES.map((name, i) => [name, 1 << i]));

/** The bits of a listing's usage types (main type and sub-type); unknown names add none. */
export function usageMask(types: readonly string[]): number {
  let mask = 0;
  for (const name of types) mask |= USAGE_BIT.get(name) ?? 0;
  return mask;
}
