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
