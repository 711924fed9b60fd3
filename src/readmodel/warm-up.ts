import { performance } from 'node:perf_hooks';
import type { Country } from '../core/countries.js';
import { tenantOf, type Tenant } from '../core/tenant.js';
import type { Store } from '../storage/index.js';

/**
 * The warm-up of a starting process (issue 30 item 4): the indexes of the tenants read recently
 * are built before the process reports ready, so that a rolling restart does not show their users
 * a first page that waits for a whole index to be built (a tenant of 1,000,000 listings: seconds).
 *
 * "Read recently": tenants (D1: a key's account and country) with an unrevoked key used in the
 * last hour, by the keys' last-used times (every instance writes them every 10 s and at shutdown,
 * whatever USAGE_COUNTING says), most recently used first; only this deployment's countries. The
 * keys are read a page at a time (a primary-key range each), so the warm-up's reads never hold
 * SQLite's synchronous driver long, however many keys there are. (The usage counts would rank
 * tenants by requests, but the last hour of them is summed in one statement that reads a row per
 * key, five-minute bucket and outcome, each away from the others in the table: it held the loop
 * far longer than any page of keys does, and more so with every key.)
 *
 * Bounded: it stops starting tenants once `maxListings` are indexed (the tenant that crosses the
 * bound is finished: a partial index would be no use) and stops waiting at `timeoutMs` (a build in
 * progress then finishes in the background, as a first request would have had it). It never holds
 * the event loop long: the keys a page at a time, then the indexes built as a first read builds
 * them, in chunks with a turn of the event loop between (tenant-index.ts).
 */
export const RECENT_MS = 3_600_000;
/** At most this many tenants are read for a warm-up (the bounds above usually stop it sooner). */
export const MAX_WARM_TENANTS = 10_000;

export interface WarmUpResult {
  /** Tenants read recently (of this deployment's countries). */
  tenants: number;
  /** Of those, the ones whose index was built (or brought up to date). */
  warmed: number;
  /** Listings in those indexes. */
  listings: number;
  ms: number;
  /** Why it ended: all done, a bound reached, shutdown, or an error (then `error` says which). */
  stopped: 'done' | 'listings' | 'time' | 'shutdown' | 'error';
  error?: unknown;
}

export interface WarmUpOptions {
  /** The tenants read recently, most recently first. */
  recentTenants(): Promise<readonly Tenant[]>;
  /** Builds a tenant's index; resolves with its listings (ListingReads.warm). */
  warm(tenant: Tenant): Promise<number>;
  maxListings: number;
  timeoutMs: number;
  /** Told once the tenants are known, before any is built. */
  onTenants?(count: number): void;
  /** Aborted at shutdown: the warm-up stops waiting at once. */
  signal?: AbortSignal;
}

export async function warmUp(options: WarmUpOptions): Promise<WarmUpResult> {
  const started = performance.now();
  let tenants = 0;
  let warmed = 0;
  let listings = 0;
  const end = (stopped: WarmUpResult['stopped'], error?: unknown): WarmUpResult => ({
    tenants,
    warmed,
    listings,
    ms: Math.round(performance.now() - started),
    stopped,
    ...(error === undefined ? {} : { error }),
  });

  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const bound = new Promise<'time' | 'shutdown'>((resolve) => {
    timer = setTimeout(() => resolve('time'), options.timeoutMs);
    onAbort = () => resolve('shutdown');
    if (options.signal?.aborted) resolve('shutdown');
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
  /** The work, or the bound that came first. What is left running is never awaited: its failure is dropped. */
  const within = <T>(work: Promise<T>): Promise<T | 'time' | 'shutdown'> => {
    work.catch(() => undefined);
    return Promise.race([work, bound]);
  };

  try {
    const recent = await within(options.recentTenants());
    if (recent === 'time' || recent === 'shutdown') return end(recent);
    tenants = recent.length;
    options.onTenants?.(tenants);
    for (const tenant of recent) {
      if (listings >= options.maxListings) return end('listings');
      const built = await within(options.warm(tenant));
      if (built === 'time' || built === 'shutdown') return end(built);
      warmed++;
      listings += built;
    }
    return end('done');
  } catch (error) {
    return end('error', error);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) options.signal?.removeEventListener('abort', onAbort);
  }
}

/** Keys read per page by recentlyReadTenants. */
export const KEY_PAGE = 200;

/** The tenants read recently (see above), most recently first. `now`: clock ms. */
export async function recentlyReadTenants(store: Store, now: number, countries: readonly Country[]): Promise<Tenant[]> {
  const since = new Date(now - RECENT_MS).toISOString();
  const served = new Set<string>(countries);
  const lastRead = new Map<string, { tenant: Tenant; at: string }>();
  for (let after = ''; ; ) {
    const keys = await store.keys.pageById(after, KEY_PAGE);
    for (const key of keys) {
      if (key.revoked_at !== null || key.last_used_at === null || key.last_used_at < since || !served.has(key.country)) continue;
      const tenant = tenantOf(key.account_id, key.country as Country);
      const seen = lastRead.get(tenant.key);
      if (seen === undefined || seen.at < key.last_used_at) lastRead.set(tenant.key, { tenant, at: key.last_used_at });
    }
    if (keys.length < KEY_PAGE) break;
    after = keys.at(-1)!.id;
  }
  return [...lastRead.values()]
    .sort((a, b) => (a.at > b.at ? -1 : a.at < b.at ? 1 : a.tenant.key < b.tenant.key ? -1 : 1))
    .slice(0, MAX_WARM_TENANTS)
    .map((entry) => entry.tenant);
}
