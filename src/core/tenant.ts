import type { Country } from './countries.js';

/** A tenant's key in maps and caches: owning account id and country. */
export type TenantKey = string;
export const tenantKey = (ownerAccountId: string, country: string): TenantKey => `${ownerAccountId}\n${country}`;

/** What one API key sees (D1): the listings of one owning account in one country. */
export interface Tenant {
  readonly ownerAccountId: string;
  readonly country: Country;
  /**
   * `tenantKey` of the two, made once with the tenant. The read path looks a tenant up by it in
   * several maps per request; a key made per request is a new string each time, which each
   * look-up has to flatten and hash again.
   */
  readonly key: TenantKey;
}

export function tenantOf(ownerAccountId: string, country: Country): Tenant {
  return { ownerAccountId, country, key: tenantKey(ownerAccountId, country) };
}
