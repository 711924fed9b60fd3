import type { KeyLookup } from '../auth/authenticate.js';
import type { Clock } from '../core/clock.js';
import type { Country } from '../core/countries.js';
import type { ApiKeyRecord, Store } from '../storage/index.js';
import type { ReadCaches } from './caches.js';

export interface AuthReads extends KeyLookup {
  /** D17; synchronous when cached. */
  isOriginAllowed(accountId: string, country: Country, origin: string): boolean | Promise<boolean>;
}

/**
 * Keys and origin checks, cached under the auth version: a revocation or an origin removal moves
 * it, so the next request anywhere reads again and is refused (D4).
 */
export function createAuthReads(store: Store, clock: Clock, { keys, origins }: Pick<ReadCaches, 'keys' | 'origins'>): AuthReads {
  /** When each key record the cache holds was read from the database (taken before the read). */
  const keyReadAt = new WeakMap<ApiKeyRecord, number>();

  return {
    findKeyByHash(keyHash) {
      const found = keys.getOrLoad(`${store.changes.authVersion()}\n${keyHash}`, async () => {
        const readAt = clock();
        const record = await store.keys.findByHash(keyHash);
        if (record !== undefined) keyReadAt.set(record, readAt);
        return { value: record ?? null, readAt };
      });
      return found instanceof Promise ? found.then((r) => r ?? undefined) : (found ?? undefined);
    },

    keyValidUntil(record) {
      // While fresh, not while served: a key recalled by its connection is not looked up, so this
      // lets a look-up once it is stale read it again in the background, and the connections
      // using it never wait for the database when it expires.
      return keys.freshUntil(keyReadAt.get(record) ?? -Infinity);
    },

    isOriginAllowed(accountId, country, origin) {
      return origins.getOrLoad(`${store.changes.authVersion()}\n${accountId}\n${country}\n${origin}`, async () => ({
        value: await store.origins.isAllowed(accountId, country, origin),
      }));
    },
  };
}
