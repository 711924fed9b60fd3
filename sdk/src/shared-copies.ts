import { REQUEST, type ListingsClient } from './client.js';
import { SiteBudget, VisitorBudget } from './budgets.js';
import { ListingsApiError } from './errors.js';

/** An upstream failure, as `onError` sees it. */
export interface UpstreamFailure {
  /** `status` (0 without an answer), `code` (`unauthorized`, `rate_limited`, `timeout`, `network_error`, ...), `message`, `requestId`, `retryAfter`. */
  error: ListingsApiError;
  /** The API request, path and query (`/v1/listings?page=2`); never the key or the host. */
  path: string;
  /** What came of it: the client tries again; the visitors got an older copy; they got an error. */
  outcome: 'retrying' | 'stale' | 'error';
}

/** What the handler did: answers by how they were served, and the look-ups it sent to the API. */
export interface ProxyStats {
  /** Requests the handler answered (browser calls and server-side reads). */
  requests: number;
  /**
   * Look-ups sent to the API: one per copy due, however many visitors wait for it (each may be
   * more than one HTTP request when the client retries).
   */
  refreshes: number;
  /** Answered from the shared copy without asking the API. */
  hits: number;
  /** Answered after asking the API, with a new body (a 200, counted by the API's limit). */
  misses: number;
  /** Answered after asking the API, unchanged (a 304, free, D21). */
  revalidated: number;
  /** Answered with an older copy because the API failed, or because the visitor's budget or the site's share of look-ups was spent. */
  stale: number;
  /** Answered with an error. */
  errors: number;
  /** Refused (429) because the visitor's budget of look-ups was spent and no copy was kept. */
  limited: number;
  /** Refused (503) because the site's share of the key was spent and no copy was kept. */
  busy: number;
}

/** What the shared copies are told by the handler's options (proxy.ts gives the defaults). */
export interface CopySettings {
  freshMs: number;
  staleIfErrorMs: number;
  maxEntries: number;
  upstreamTimeoutMs: number;
  lookupsPerMinute: number;
  /** The site's share of the key per minute; undefined: three quarters of the key's limit. */
  siteLookupsPerMinute: number | undefined;
  onError: (failure: UpstreamFailure) => void;
  now: () => number;
}

interface Good {
  text: string;
  etag: string | undefined;
  fetchedAt: number;
}
export interface Entry {
  good: Good | undefined;
  /** The answer to give while the entry is fresh, when the last look-up failed with no copy to show. */
  failure: ListingsApiError | undefined;
  checkedAt: number;
}
export type How = 'hit' | 'miss' | 'revalidated' | 'stale' | 'error' | 'limited' | 'busy';
export interface Read {
  entry: Entry;
  how: How;
}

/**
 * The proxy's copies of the API's answers, one per URL, shared by every visitor: a copy younger
 * than `freshMs` is served as it is; an older one is revalidated with its ETag by one request for
 * all the visitors asking meanwhile; a failed look-up serves the last copy younger than
 * `staleIfErrorMs`; each visitor's look-ups spend a budget (`VisitorBudget`) and the site's share of
 * the key (`SiteBudget`). At most `maxEntries`
 * copies are kept, the least recently read dropped first.
 */
export class SharedCopies {
  readonly stats: ProxyStats = { requests: 0, refreshes: 0, hits: 0, misses: 0, revalidated: 0, stale: 0, errors: 0, limited: 0, busy: 0 };
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<Read>>();
  readonly #visitors: VisitorBudget;
  readonly #site: SiteBudget;

  constructor(private readonly client: ListingsClient, private readonly settings: CopySettings) {
    this.#visitors = new VisitorBudget(settings.lookupsPerMinute, settings.now);
    this.#site = new SiteBudget(settings.siteLookupsPerMinute, () => client.rateLimit, settings.now);
  }

  /**
   * The answer to a read: the fresh copy, the look-up under way, or a new look-up, which spends one
   * of the visitor's budget and of the site's share (neither for the server's own reads, `visitor`
   * undefined).
   */
  read(path: string, query: Record<string, string>, visitor: string | undefined): Promise<Read> {
    const { freshMs } = this.settings;
    const key = `${path}?${new URLSearchParams(query)}`;
    const entry = this.#entries.get(key);
    const at = this.settings.now();
    if (entry !== undefined && at - entry.checkedAt < freshMs) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      return Promise.resolve({ entry, how: entry.failure === undefined ? 'hit' : 'error' });
    }
    let flight = this.#pending.get(key);
    if (flight === undefined) {
      const refused = visitor === undefined ? undefined : this.#spend(visitor, entry, at);
      if (refused !== undefined) return Promise.resolve(refused);
      flight = this.#refresh(key, path, query, entry).finally(() => this.#pending.delete(key));
      this.#pending.set(key, flight);
    }
    return flight;
  }

  /**
   * Spends a look-up of the visitor's budget and of the site's share; when either is spent, what
   * the visitor gets instead: the kept copy (younger than `staleIfErrorMs`), else a 429 (the
   * visitor's own budget) or a 503 (the site's share), with Retry-After.
   */
  #spend(visitor: string, entry: Entry | undefined, at: number): Read | undefined {
    const { staleIfErrorMs, lookupsPerMinute } = this.settings;
    let wait = this.#visitors.take(visitor);
    let how: How = 'limited';
    if (wait === 0) {
      wait = this.#site.take(visitor);
      if (wait === 0) return undefined;
      this.#visitors.refund(visitor);
      how = 'busy';
    }
    const good = entry?.good;
    if (good !== undefined && at - good.fetchedAt < staleIfErrorMs) return { entry: { good, failure: undefined, checkedAt: entry!.checkedAt }, how: 'stale' };
    const retryAfter = Math.max(1, Math.ceil(wait / 1000));
    const failure = how === 'limited'
      ? new ListingsApiError({
        status: 429,
        code: 'rate_limited',
        message: `Too many requests for listings not viewed lately (at most ${lookupsPerMinute} a minute per visitor); try again in ${retryAfter} s.`,
        retryAfter,
      })
      : new ListingsApiError({ status: 503, code: 'rate_limited', message: `The listings are busy right now; try again in ${retryAfter} s.`, retryAfter });
    return { entry: { good: undefined, failure, checkedAt: at }, how };
  }

  /** Counts one answer by how it was served (`stats`). */
  count(how: How): void {
    const { stats } = this;
    stats.requests++;
    if (how === 'hit') stats.hits++;
    else if (how === 'miss') stats.misses++;
    else if (how === 'revalidated') stats.revalidated++;
    else if (how === 'stale') stats.stale++;
    else if (how === 'limited') stats.limited++;
    else if (how === 'busy') stats.busy++;
    else stats.errors++;
  }

  /** Makes the copies that may show these listings due again (`ListingsHandler.forget`); returns how many. */
  forget(ids: readonly string[] | 'all'): number {
    const details = ids === 'all' ? undefined : new Set(ids.map((id) => `/v1/listings/${id.toLowerCase()}?`));
    let n = 0;
    for (const [key, entry] of this.#entries) {
      // A detail is `/v1/listings/<id>?`; list pages, facets and feed answers are everything else.
      const isDetail = key.startsWith('/v1/listings/') && !key.startsWith('/v1/listings/changes?') && !key.startsWith('/v1/listings/facets?');
      if (details !== undefined && isDetail && !details.has(key)) continue;
      entry.checkedAt = -Infinity;
      n++;
    }
    return n;
  }

  async #refresh(key: string, path: string, query: Record<string, string>, previous: Entry | undefined): Promise<Read> {
    const { upstreamTimeoutMs, staleIfErrorMs, now } = this.settings;
    this.stats.refreshes++;
    try {
      const onRetry = (failure: ListingsApiError) => this.#report(failure, key, 'retrying');
      const answer = await this.client[REQUEST](path, query, { signal: AbortSignal.timeout(upstreamTimeoutMs) }, { onRetry });
      const at = now();
      return this.#remember(key, { good: { text: answer.text, etag: answer.etag, fetchedAt: at }, failure: undefined, checkedAt: at }, answer.notModified ? 'revalidated' : 'miss');
    } catch (error) {
      const failure = asApiError(error);
      const at = now();
      // A malformed request or a missing listing is the answer; so is a refused key (401) or origin
      // (403): a revoked key must stop the site's listings, never hide behind an older copy.
      if (failure.status === 400 || failure.status === 404 || failure.status === 401 || failure.status === 403) {
        if (failure.status === 401 || failure.status === 403) this.#report(failure, key, 'error');
        return this.#remember(key, { good: undefined, failure, checkedAt: at }, 'error');
      }
      const good = previous?.good;
      if (good !== undefined && at - good.fetchedAt < staleIfErrorMs) {
        // Serve the last copy, and ask again only once it is due again.
        this.#report(failure, key, 'stale');
        return this.#remember(key, { good, failure: undefined, checkedAt: at }, 'stale');
      }
      // No copy to show: the error itself is kept while fresh, so that a failing API is not asked once per visitor.
      this.#report(failure, key, 'error');
      return this.#remember(key, { good, failure, checkedAt: at }, 'error');
    }
  }

  #remember(key: string, entry: Entry, how: How): Read {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    while (this.#entries.size > this.settings.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    return { entry, how };
  }

  #report(error: ListingsApiError, key: string, outcome: UpstreamFailure['outcome']): void {
    try {
      this.settings.onError({ error, path: key.replace(/\?$/, ''), outcome });
    } catch {
      // A logger that throws must not change what visitors get.
    }
  }
}

function asApiError(error: unknown): ListingsApiError {
  if (error instanceof ListingsApiError) return error;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new ListingsApiError({ status: 0, code: 'timeout', message: 'The Listings API did not answer in time.', cause: error });
  }
  return new ListingsApiError({ status: 0, code: 'network_error', message: 'The Listings API could not be reached.', cause: error });
}
