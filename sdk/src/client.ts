import { ListingsApiError, type RateLimit } from './errors.js';
import { baseUrlFor, countryOfKey } from './hosts.js';
import { parseRateLimit } from './rate-limit.js';
import {
  LIST_CHANGES_PARAMETERS,
  LIST_LISTING_FACETS_PARAMETERS,
  LIST_LISTINGS_PARAMETERS,
  type ChangePage,
  type Listing,
  type ListingFacets,
  type ListingPage,
  type SortKey,
  type UsageType,
} from './openapi.js';
import { fetchWithLocalhost, type FetchLike } from './transport.js';

export interface ClientOptions {
  /**
   * The key (`sg_live_...`). Keep it on a server. It may be left out only with `baseUrl`, for a
   * server that adds it itself (the SDK's proxy handler, for browser code).
   */
  apiKey?: string | undefined;
  /**
   * The API's base URL, used as given (e.g. `http://api.localhost:3000` for a local server, or the
   * proxy handler's `https://www.example.com/api`). Without it, the host comes from the key's
   * country and `apiDomain` (D3), over https.
   */
  baseUrl?: string | undefined;
  /** The API domain of D3 (`example.com` gives `https://api.example.com` for sg keys); needed without `baseUrl`. */
  apiDomain?: string | undefined;
  /** How many times a call is retried after a 429, a 5xx or no answer (default 3). */
  maxRetries?: number | undefined;
  /** How long one attempt may take, answer body included, before it counts as a timeout (default 30,000 ms). */
  timeoutMs?: number | undefined;
  /** The transport (default: `fetchWithLocalhost`, the global `fetch` that also reaches `*.localhost` on Node). */
  fetch?: FetchLike | undefined;
  /**
   * Bytes of answers kept for revalidation (default 16 MiB; 0 keeps none): the last body and ETag of
   * each URL, least recently used first out.
   */
  cacheBytes?: number | undefined;
  /** Testing hook: how to wait (default: a timer). Must reject when `signal` aborts. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** Testing hook: random numbers in [0, 1) for jitter (default Math.random). */
  random?: (() => number) | undefined;
}

/** Per call. */
export interface CallOptions {
  /** Aborts the call, including any wait before a retry; the call then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** A point in WGS 84 decimal degrees (D28). */
export interface GeoPoint {
  lat: number;
  lng: number;
}

/**
 * What selects listings (D23 filters, D26 text, D28 place), in camelCase: the parameters of the
 * list and of its facets (`GET /v1/listings/facets`, D27).
 */
export interface ListingSelection {
  /** Usage types of the taxonomy, e.g. `'Office'` or `['F&B', 'Retail']` (any of them): names of `USAGE_TYPES`. */
  usageType?: UsageType | readonly UsageType[] | undefined;
  minSizeSqft?: number | string | undefined;
  maxSizeSqft?: number | string | undefined;
  minPrice?: number | string | undefined;
  maxPrice?: number | string | undefined;
  featured?: boolean | undefined;
  takeover?: boolean | undefined;
  /** A search box's text (D26): every word must start a word of the title, building, street or usage types; case and accents do not matter. */
  q?: string | undefined;
  /** Listings within `radiusM` of this point (D28); not with `bbox`. */
  near?: GeoPoint | undefined;
  /** The radius of `near` in metres, 1 to 100,000 (the API's default: 5,000). */
  radiusM?: number | undefined;
  /** Listings inside `[minLng, minLat, maxLng, maxLat]` (D28; GeoJSON order; minLng above maxLng crosses the antimeridian); not with `near`. */
  bbox?: readonly [number, number, number, number] | undefined;
}

/** The filters and sort of `GET /v1/listings` (D23, D26, D28). */
export interface ListingFilters extends ListingSelection {
  /** `distance` (nearest first) needs `near`. */
  sort?: SortKey | undefined;
}

export interface ListParams extends ListingFilters {
  /** From 1 (default 1). */
  page?: number | undefined;
  /** 1 to 100 (default 20; more is clamped to 100 by the API). */
  perPage?: number | undefined;
}

export interface ChangesParams {
  /** From an earlier answer's `next_cursor`; absent: from the beginning (every listing). */
  cursor?: string | undefined;
  /** Events per answer, 1 to 1000 (default 100). */
  limit?: number | undefined;
}

/** The options of `sync`: the feed's, and where to keep its cursor between runs. */
export interface SyncParams extends ChangesParams {
  /**
   * Where the cursor (and the ETag of the last answer, to make the next poll a free 304) is kept
   * between runs: a `FileStateStore` for a cron job, or any key-value store with `get` and `set`.
   * With it, `cursor` is read from the store (leave `cursor` out) and the new one written back
   * after each answer applied.
   */
  state?: SyncStateStore | undefined;
  /** The store's key (default `listings-sync:<baseUrl>`); one per API key and mirror. */
  stateKey?: string | undefined;
}

/**
 * A key-value store of strings, sync or async: `get` gives undefined or null for a missing key.
 * Redis clients (`get`/`set`), Keyv, a `Map<string, string>` or a `FileStateStore` fit as they are.
 */
export interface SyncStateStore {
  get(key: string): string | undefined | null | Promise<string | undefined | null>;
  set(key: string, value: string): unknown;
}

/** Where `sync` applies the change feed: a Map-like store of listings by id, sync or async. */
export interface ListingStore {
  put(listing: Listing): unknown;
  delete(id: string): unknown;
}

/** An answer as text, for code that passes it on unparsed (the proxy handler). */
export interface RawAnswer {
  /** The JSON body, exactly as the API sent it. */
  text: string;
  etag: string | undefined;
  /** True when the API answered 304 and `text` is the copy kept from before (a free request, D21). */
  notModified: boolean;
}

/**
 * What the SDK's own code asks of a request beyond CallOptions; not part of the public API (the
 * symbol is not exported from the package).
 */
export interface InternalOptions {
  /** An answer kept elsewhere (a state store) to revalidate with when the client holds none. */
  kept?: { etag: string; text: string } | undefined;
  /** Sees each failed attempt that will be retried (the proxy's onError). */
  onRetry?: ((failure: ListingsApiError) => void) | undefined;
}
export const REQUEST = Symbol('listings-api request');

/** camelCase option -> the API's query parameter. */
const LIST_QUERY = {
  page: 'page',
  perPage: 'per_page',
  usageType: 'usage_type',
  minSizeSqft: 'min_size_sqft',
  maxSizeSqft: 'max_size_sqft',
  minPrice: 'min_price',
  maxPrice: 'max_price',
  featured: 'featured',
  takeover: 'takeover',
  q: 'q',
  near: 'near',
  radiusM: 'radius_m',
  bbox: 'bbox',
  sort: 'sort',
} as const satisfies Record<keyof ListParams, (typeof LIST_LISTINGS_PARAMETERS)[number]>;
// The facets take the list's selection and nothing of its paging or order (D27).
const FACETS_QUERY: Record<keyof ListingSelection, (typeof LIST_LISTING_FACETS_PARAMETERS)[number]> = (() => {
  const { page: _page, perPage: _perPage, sort: _sort, ...selection } = LIST_QUERY;
  return selection;
})();
const CHANGES_QUERY = { cursor: 'cursor', limit: 'limit' } as const satisfies Record<keyof ChangesParams, (typeof LIST_CHANGES_PARAMETERS)[number]>;
// Every parameter of openapi.json has an option: a parameter added to the document (and to
// src/openapi.ts by `npm run generate`) fails this line until it is given one.
const everyListParameter: Record<(typeof LIST_LISTINGS_PARAMETERS)[number], true> =
  Object.fromEntries(Object.values(LIST_QUERY).map((v) => [v, true])) as { [K in (typeof LIST_QUERY)[keyof typeof LIST_QUERY]]: true };
const everyFacetsParameter: Record<(typeof LIST_LISTING_FACETS_PARAMETERS)[number], true> =
  Object.fromEntries(Object.values(FACETS_QUERY).map((v) => [v, true])) as Record<(typeof FACETS_QUERY)[keyof typeof FACETS_QUERY], true>;
void everyFacetsParameter;
const everyChangesParameter: Record<(typeof LIST_CHANGES_PARAMETERS)[number], true> =
  Object.fromEntries(Object.values(CHANGES_QUERY).map((v) => [v, true])) as { [K in (typeof CHANGES_QUERY)[keyof typeof CHANGES_QUERY]]: true };
void everyListParameter;
void everyChangesParameter;

/** A decimal as D23 wants it: digits, optionally a dot and digits; never an exponent. */
function decimal(name: string, value: number | string): string {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) throw new TypeError(`${name} must be a finite number.`);
  let text = String(value);
  if (/e/i.test(text)) text = value.toFixed(20).replace(/\.?0+$/, '');
  return text;
}

/** The query of `GET /v1/listings` for these options. */
export function listQuery(params: ListParams): Record<string, string> {
  return queryOf(params, LIST_QUERY);
}

/** The query of `GET /v1/listings/facets` (D27) for this selection: paging and sort are not sent. */
export function facetsQuery(params: ListingSelection): Record<string, string> {
  return queryOf(params, FACETS_QUERY);
}

function queryOf(params: ListParams, names: Partial<Record<keyof ListParams, string>>): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [option, name] of Object.entries(names) as Array<[keyof ListParams, string]>) {
    const value = params[option];
    if (value === undefined || value === null) continue;
    if (option === 'usageType') query[name] = typeof value === 'string' ? value : (value as readonly string[]).join(',');
    else if (typeof value === 'boolean') query[name] = String(value);
    else if (option === 'page' || option === 'perPage' || option === 'sort' || option === 'q' || option === 'radiusM') query[name] = String(value);
    else if (option === 'near') query[name] = `${decimal('near.lat', (value as GeoPoint).lat)},${decimal('near.lng', (value as GeoPoint).lng)}`;
    else if (option === 'bbox') query[name] = (value as readonly number[]).map((n, i) => decimal(`bbox[${i}]`, n)).join(',');
    else query[name] = decimal(option, value as number | string);
  }
  return query;
}

const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Backoff of 5xx and network failures: exponential, capped, with full jitter. */
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;
/** The jitter added to a 429's Retry-After, so that clients told the same second do not all return at once. */
const RETRY_AFTER_JITTER_MS = 250;

/** `Retry-After`: whole seconds, or an HTTP date. */
function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The last body and ETag per URL (D21), least recently used out first, bounded in bytes. */
class RevalidationCache {
  private readonly entries = new Map<string, { etag: string; text: string }>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}
  get(url: string): { etag: string; text: string } | undefined {
    const entry = this.entries.get(url);
    if (entry !== undefined) {
      this.entries.delete(url);
      this.entries.set(url, entry);
    }
    return entry;
  }
  set(url: string, etag: string, text: string): void {
    this.delete(url);
    const size = text.length * 2 + url.length * 2;
    if (size > this.maxBytes) return;
    this.entries.set(url, { etag, text });
    this.bytes += size;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.text.length * 2 + oldest.length * 2;
    }
  }
  delete(url: string): void {
    const entry = this.entries.get(url);
    if (entry === undefined) return;
    this.entries.delete(url);
    this.bytes -= entry.text.length * 2 + url.length * 2;
  }
}

/**
 * A client of the Listings Developer API. One per key; share it (its revalidation cache and
 * rate-limit state are per instance).
 */
export class ListingsClient {
  /** The endpoints of listings. */
  readonly listings: Listings;
  /** The base URL every request goes to (no trailing slash). */
  readonly baseUrl: string;
  /** The last rate-limit state the API reported (D15); undefined before the first answer that carried one. */
  rateLimit: RateLimit | undefined;
  /** Whether requests carry a key: false for a client that calls a proxy (`baseUrl` only). */
  readonly hasApiKey: boolean;

  readonly #apiKey: string | undefined;
  readonly #maxRetries: number;
  readonly #timeoutMs: number;
  readonly #fetch: FetchLike;
  readonly #cache: RevalidationCache;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;

  constructor(options: ClientOptions) {
    if (options.apiKey === undefined && options.baseUrl === undefined) {
      throw new TypeError('ListingsClient needs an apiKey (or, for a proxy that adds the key itself, a baseUrl).');
    }
    if (options.apiKey !== undefined) {
      const country = countryOfKey(options.apiKey);
      if (options.baseUrl === undefined) {
        if (options.apiDomain === undefined) {
          throw new TypeError('ListingsClient needs apiDomain (the API domain of your deployment, e.g. "example.com") or baseUrl (e.g. "http://api.localhost:3000").');
        }
        this.baseUrl = baseUrlFor(country, options.apiDomain);
      }
    }
    if (options.baseUrl !== undefined) {
      const base = new URL(options.baseUrl); // throws on a relative or malformed URL
      this.baseUrl = `${base.origin}${base.pathname}`.replace(/\/+$/, '');
    }
    this.baseUrl ??= '';
    this.#apiKey = options.apiKey;
    this.hasApiKey = options.apiKey !== undefined;
    this.#maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 3));
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? fetchWithLocalhost;
    this.#cache = new RevalidationCache(options.cacheBytes ?? 16 * 1024 * 1024);
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.listings = new Listings(this);
  }

  /** GET `path` (under the base URL) and parse its JSON: the low-level call every endpoint uses. */
  async request<T>(path: string, query: Record<string, string> = {}, options: CallOptions = {}): Promise<T> {
    const answer = await this.requestRaw(path, query, options);
    return JSON.parse(answer.text) as T;
  }

  /**
   * GET `path` with retries and revalidation, and return the body as text. A 304 answers with the
   * copy kept from the last 200 of the same URL.
   */
  requestRaw(path: string, query: Record<string, string> = {}, options: CallOptions = {}): Promise<RawAnswer> {
    return this[REQUEST](path, query, options, {});
  }

  /** requestRaw, with what the SDK's own code needs (InternalOptions). */
  async [REQUEST](path: string, query: Record<string, string>, options: CallOptions, internal: InternalOptions): Promise<RawAnswer> {
    const search = new URLSearchParams(query).toString().replace(/\+/g, '%20');
    const url = `${this.baseUrl}${path}${search === '' ? '' : `?${search}`}`;
    const { signal } = options;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const kept = this.#cache.get(url) ?? internal.kept;
      const headers: Record<string, string> = { accept: 'application/json' };
      if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
      if (kept !== undefined) headers['if-none-match'] = kept.etag;

      let failure: ListingsApiError;
      let wait: number;
      try {
        const { response, text } = await this.#attempt(url, headers, signal);
        // X-RateLimit-* (D15), or the IETF RateLimit fields (D29) where only those came through.
        const rateLimit = parseRateLimit(response.headers, Date.now());
        if (rateLimit !== undefined) this.rateLimit = rateLimit;
        const etag = response.headers.get('etag') ?? undefined;
        if (response.status === 304 && kept !== undefined) return { text: kept.text, etag: etag ?? kept.etag, notModified: true };
        if (response.status >= 200 && response.status < 300) {
          if (!isJson(text)) throw invalidResponse(response, 'The answer is not JSON.');
          if (etag !== undefined) this.#cache.set(url, etag, text);
          else this.#cache.delete(url);
          return { text, etag, notModified: false };
        }
        failure = errorOf(response, text, rateLimit);
        if (response.status === 429) {
          wait = failure.retryAfter !== undefined ? failure.retryAfter * 1000 + this.#random() * RETRY_AFTER_JITTER_MS : this.#backoff(attempt);
        } else if (response.status >= 500) {
          wait = this.#backoff(attempt);
        } else {
          throw failure; // 4xx: fix the request or the key; never retried.
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof ListingsApiError && !error.retryable) throw error;
        failure = error instanceof ListingsApiError ? error : transportError(error);
        wait = failure.status === 429 && failure.retryAfter !== undefined
          ? failure.retryAfter * 1000 + this.#random() * RETRY_AFTER_JITTER_MS
          : this.#backoff(attempt);
      }
      if (attempt >= this.#maxRetries) throw failure;
      internal.onRetry?.(failure);
      await this.#sleep(Math.round(wait), signal);
    }
  }

  /** Full jitter: a random wait between 0 and min(cap, base * 2^attempt). */
  #backoff(attempt: number): number {
    return this.#random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  }

  /** One request, answer body included, within timeoutMs; aborted by the caller's signal. */
  async #attempt(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<{ response: Response; text: string }> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new ListingsApiError({ status: 0, code: 'timeout', message: `No answer from the Listings API within ${this.#timeoutMs} ms.` }));
    }, this.#timeoutMs);
    try {
      const response = await this.#fetch(url, { method: 'GET', headers, signal: controller.signal });
      const text = response.status === 304 ? '' : await response.text();
      return { response, text };
    } catch (error) {
      if (timedOut) throw controller.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function invalidResponse(response: Response, why: string): ListingsApiError {
  return new ListingsApiError({
    status: response.status,
    code: 'invalid_response',
    message: `Unexpected answer from the Listings API (HTTP ${response.status}): ${why}`,
    requestId: response.headers.get('x-request-id') ?? undefined,
  });
}

/** An error answer as a ListingsApiError: the API's `{ error, message }`, its request id and Retry-After. */
function errorOf(response: Response, text: string, rateLimit: RateLimit | undefined): ListingsApiError {
  let body: { error?: unknown; message?: unknown } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  const code = typeof body?.error === 'string' ? body.error : response.status >= 500 ? 'internal_error' : 'invalid_response';
  const message = typeof body?.message === 'string' ? body.message : `HTTP ${response.status} without the API's error body.`;
  return new ListingsApiError({
    status: response.status,
    code,
    message,
    requestId: response.headers.get('x-request-id') ?? undefined,
    retryAfter: parseRetryAfter(response.headers.get('retry-after'), Date.now()),
    rateLimit,
  });
}

function transportError(error: unknown): ListingsApiError {
  const detail = error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ''}` : String(error);
  return new ListingsApiError({ status: 0, code: 'network_error', message: `No answer from the Listings API (${detail}).`, cause: error });
}

/** `client.listings`: the three endpoints, and the helpers built on them. */
export class Listings {
  constructor(private readonly client: ListingsClient) {}

  /** One page of the list (`GET /v1/listings`), filtered and sorted as asked (D23). */
  list(params: ListParams = {}, options: CallOptions = {}): Promise<ListingPage> {
    return this.client.request<ListingPage>('/v1/listings', listQuery(params), options);
  }

  /**
   * Every listing, page after page (`perPage` default 100) until `page` equals `pages` (spec 4.2
   * rule 1). Each page is one request, so a large set takes `ceil(total / perPage)` of the key's
   * requests; revalidation makes a repeated walk free where a page did not change.
   */
  async *iterate(params: Omit<ListParams, 'page'> = {}, options: CallOptions = {}): AsyncGenerator<Listing, void, undefined> {
    for (let page = 1; ; page++) {
      const answer = await this.list({ ...params, perPage: params.perPage ?? 100, page }, options);
      yield* answer.items;
      if (answer.page >= answer.pages || answer.items.length === 0) return;
    }
  }

  /** Counts of the listings a selection gives (`GET /v1/listings/facets`, D27): filter chips and price and size ranges. */
  facets(params: ListingSelection = {}, options: CallOptions = {}): Promise<ListingFacets> {
    return this.client.request<ListingFacets>('/v1/listings/facets', facetsQuery(params), options);
  }

  /** One listing by id (`GET /v1/listings/{id}`); a ListingsApiError with code `not_found` when it is not visible. */
  get(id: string, options: CallOptions = {}): Promise<Listing> {
    return this.client.request<Listing>(`/v1/listings/${encodeURIComponent(id)}`, {}, options);
  }

  /** One answer of the change feed (`GET /v1/listings/changes`, D22). */
  changes(params: ChangesParams = {}, options: CallOptions = {}): Promise<ChangePage> {
    const query: Record<string, string> = {};
    if (params.cursor !== undefined) query.cursor = params.cursor;
    if (params.limit !== undefined) query.limit = String(params.limit);
    return this.client.request<ChangePage>('/v1/listings/changes', query, options);
  }

  /**
   * Brings a copy up to date (D22): replays the feed from `cursor` (absent: from the beginning, which
   * puts every listing) into `store` (a ListingStore, or a Map by id), `put` for each upsert and
   * `delete` for each removal, following `next_cursor` while `has_more` is true, and returns the
   * cursor to keep. It ends on an answer that brought nothing new (its `next_cursor` is the cursor
   * asked with), polling once more after one that did: that answer's ETag is what makes the next
   * call a free 304 when nothing changed. With `state`, the cursor and that answer live in the
   * store, so that this holds across process runs.
   */
  async sync(store: ListingStore | Map<string, Listing>, params: SyncParams = {}, options: CallOptions = {}): Promise<string> {
    const put = store instanceof Map ? (listing: Listing) => store.set(listing.id, listing) : (listing: Listing) => store.put(listing);
    const { state } = params;
    if (state !== undefined && params.cursor !== undefined) throw new TypeError('sync takes its cursor from `state`: give `cursor` or `state`, not both.');
    const stateKey = params.stateKey ?? `listings-sync:${this.client.baseUrl}`;
    const saved = state === undefined ? undefined : readSyncState(await state.get(stateKey));
    let cursor = saved?.cursor ?? params.cursor;
    const limit = params.limit ?? 1000;
    // One more poll after an answer that moved the cursor, never more: a feed that keeps changing
    // must not keep sync from returning.
    let settlePolls = 1;
    for (;;) {
      const query: Record<string, string> = cursor === undefined ? { limit: String(limit) } : { cursor, limit: String(limit) };
      const kept = saved?.answer !== undefined && saved.answer.cursor === cursor ? saved.answer : undefined;
      const raw = await this.client[REQUEST]('/v1/listings/changes', query, options, { kept });
      const answer = JSON.parse(raw.text) as ChangePage;
      for (const event of answer.items) {
        if (event.type === 'listing.upserted') await put(event.listing);
        else if (event.type === 'listing.removed') await store.delete(event.id);
      }
      const caughtUp = !answer.has_more && answer.next_cursor === cursor;
      // A 304 of the answer the store holds changes nothing there: no write.
      if (state !== undefined && !(raw.notModified && kept !== undefined)) {
        // The answer is kept only when it is the one the next run asks for (nothing new: a small body).
        const record: SyncRecord = { cursor: answer.next_cursor };
        if (caughtUp && raw.etag !== undefined) record.answer = { cursor: answer.next_cursor, etag: raw.etag, text: raw.text };
        await state.set(stateKey, JSON.stringify(record));
      }
      cursor = answer.next_cursor;
      if (answer.has_more) continue;
      if (caughtUp || settlePolls-- === 0) return cursor;
    }
  }
}

/** What `sync` keeps in a state store. */
interface SyncRecord {
  cursor: string;
  /** The last answer, when it is the answer to `cursor` (caught up): revalidated by the next run. */
  answer?: { cursor: string; etag: string; text: string };
}

function readSyncState(value: string | undefined | null): SyncRecord | undefined {
  if (value === undefined || value === null) return undefined;
  let record: Partial<SyncRecord>;
  try {
    record = JSON.parse(value) as Partial<SyncRecord>;
  } catch {
    record = {};
  }
  if (typeof record.cursor !== 'string') throw new TypeError('The sync state store holds something that is not a sync state: give sync another stateKey, or remove it.');
  return record as SyncRecord;
}
