import { facetsQuery, listQuery, type ChangesParams, type ListingsClient, type ListingSelection, type ListParams } from './client.js';
import { ListingsApiError } from './errors.js';
import {
  LIST_CHANGES_RANGES,
  LIST_CHANGES_RULES,
  LIST_LISTING_FACETS_RANGES,
  LIST_LISTING_FACETS_RULES,
  LIST_LISTINGS_RANGES,
  LIST_LISTINGS_RULES,
  type ChangePage,
  type Listing,
  type ListingFacets,
  type ListingPage,
  type QueryRule,
} from './openapi.js';
import { addressKey } from './budgets.js';
import { checkQuery, parseQuery } from './query.js';
import { SharedCopies, type How, type ProxyStats, type UpstreamFailure } from './shared-copies.js';

export type { ProxyStats, UpstreamFailure } from './shared-copies.js';

export interface ListingsHandlerOptions {
  /** The client that holds the key; only the server ever sees it. */
  client: ListingsClient;
  /**
   * Where the handler answers (default `/api`): `GET {basePath}/v1/listings`, `.../v1/listings/facets`,
   * `.../v1/listings/changes`, `.../v1/listings/{id}`. A request whose path does not start with it is taken as mounted by a
   * framework that removed its prefix (Hono's `app.mount`, Express's `app.use('/prefix', ...)`):
   * its path is then read as the part after basePath.
   */
  basePath?: string | undefined;
  /**
   * How long one copy is served to every visitor without asking the API (default 10,000 ms). After
   * that the next visitor's request revalidates it (a free 304 while nothing changed, D21), and the
   * visitors asking meanwhile wait for that one request.
   */
  freshMs?: number | undefined;
  /** How old a copy may be and still be served when the API fails (429 after the retries, 5xx, no answer); default 10 minutes. */
  staleIfErrorMs?: number | undefined;
  /** How many answers (URLs) are kept; least recently used out first (default 1,000). */
  maxEntries?: number | undefined;
  /** How long one refresh may take, waits before retries included, before visitors get an error or the stale copy (default 10,000 ms). */
  upstreamTimeoutMs?: number | undefined;
  /** `Cache-Control` of the answers to browsers (default `public, max-age=<freshMs in s>`). */
  cacheControl?: string | undefined;
  /**
   * How many look-ups of the API one visitor may cause per minute (default 20): a request that finds
   * no fresh copy (a miss or a revalidation) spends one; an answer from the shared copy, or a wait
   * for a look-up that another request started, spends nothing. Once it is spent the visitor is
   * served an older copy where one is kept (younger than `staleIfErrorMs`), else a 429
   * `rate_limited` with `Retry-After`; it refills evenly over the minute. Every request that reaches
   * the API counts against the key's limit (60 a minute by default), 400s included: keep this well
   * below it, so that one visitor cannot use up the key for everyone. `Infinity` turns it off.
   */
  visitorLookupsPerMinute?: number | undefined;
  /**
   * How many look-ups visitors together may cause in any rolling minute: the site's share of the
   * key (default three quarters of the key's limit as the API reports it in X-RateLimit-Limit, 45 of
   * 60). The last third of it is kept for visitors with fewer than 5 look-ups in the last minute, so
   * that a few busy visitors cannot take it all; and no look-up is sent for a visitor while the API's
   * last answer said the key is down to the rest (its limit minus the share: what other instances
   * of the site or anything else with the key spent counts too), until X-RateLimit-Reset. When it is
   * spent, a visitor gets the kept copy (younger than `staleIfErrorMs`, marked `stale`), else a 503
   * `rate_limited` with Retry-After. The server's own reads (without `visitor`) do not spend it.
   * `Infinity` turns it off.
   */
  siteLookupsPerMinute?: number | undefined;
  /**
   * The prefix length by which IPv6 visitors are grouped into one budget (default 56: a subscriber
   * is commonly given a /56 or a /48, that is 256 or 65,536 /64s). 64 counts each /64 apart, 48 each
   * /48. IPv4 addresses count one by one.
   */
  visitorIPv6Prefix?: number | undefined;
  /**
   * Who a Fetch API request comes from, for `visitorLookupsPerMinute`: the client address your
   * platform vouches for (e.g. Cloudflare's `CF-Connecting-IP`), never a header any client can set.
   * Without it, or when it returns undefined, all Fetch API requests share one budget. The node
   * adapter does not use it: it takes `req.ip` (Express, after its `trust proxy` setting), else the
   * socket's address (see `visitorOf`). `context` is what the framework passed the handler after the
   * request: Hono's `c.env` through `app.mount` (on @hono/node-server, `{ incoming }`, whose
   * `incoming.socket.remoteAddress` is the peer), Next.js's `{ params }`, a Worker's `env`. An IPv6
   * address it returns is grouped by `visitorIPv6Prefix`.
   */
  visitorKey?: ((request: Request, context: unknown) => string | undefined) | undefined;
  /**
   * Sees every upstream failure: each failed look-up (no answer, a timeout, 401, 403, 429, 5xx, an
   * answer that is not the API's JSON) with what the visitors got instead (`stale` or `error`), and
   * each failed attempt the client retries (`retrying`). Not the API's 400 and 404, which are
   * answers to the visitor. Default: one `console.error` line per failed look-up; `() => {}`
   * silences it. It never sees the key. What it throws is ignored.
   */
  onError?: ((failure: UpstreamFailure) => void) | undefined;
  /** Testing hook: the clock (default Date.now). */
  now?: (() => number) | undefined;
}

/** Per server-side read. */
export interface ServerReadOptions {
  /**
   * The visitor this read is for (`handler.visitorOf(req)`): its look-ups spend that visitor's
   * budget, as the browser's requests through the proxy do. Without it the read is the server's own
   * and spends none.
   */
  visitor?: string | undefined;
}

/** Minimal shapes of node:http's (and Express's) request and response, so browser builds need no Node types. */
export interface NodeRequestLike {
  method?: string | undefined;
  url?: string | undefined;
  /** Express keeps the full path here when the handler is mounted under a path. */
  originalUrl?: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  /** Express: the client's address, after its `trust proxy` setting. */
  ip?: string | undefined;
  socket?: { remoteAddress?: string | undefined } | undefined;
}
export interface NodeResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: Uint8Array | string): unknown;
}

/**
 * A Fetch API handler, `(request: Request) => Promise<Response>` (Next.js route handlers, Hono, Deno,
 * Bun, Cloudflare Workers), with a node:http / Express adapter and the same shared copy for server code.
 */
export interface ListingsHandler {
  /** `context`: whatever the framework passes after the request, handed to `visitorKey`. */
  (request: Request, context?: unknown): Promise<Response>;
  /** For node:http and Express: `createServer(handler.node)` or `app.use(handler.node)`. Outside basePath it calls `next` (404 without one). */
  node(req: NodeRequestLike, res: NodeResponseLike, next?: (error?: unknown) => void): void;
  /**
   * Server-side reads through the same shared copy (for server-rendered pages); errors as
   * ListingsApiError, parameters checked as a visitor's are. Pass `{ visitor }` for a read made for
   * a visitor, so that it spends that visitor's budget of look-ups (a 429 `rate_limited` when spent).
   */
  listings: {
    list(params?: ListParams, options?: ServerReadOptions): Promise<ListingPage>;
    facets(params?: ListingSelection, options?: ServerReadOptions): Promise<ListingFacets>;
    get(id: string, options?: ServerReadOptions): Promise<Listing>;
    changes(params?: ChangesParams, options?: ServerReadOptions): Promise<ChangePage>;
  };
  /** The budget key of a node:http / Express request: `req.ip`, else the socket's address; an IPv6 address by its network (`visitorIPv6Prefix`). */
  visitorOf(req: NodeRequestLike): string;
  /**
   * Makes the copies that may show these listings due again (a webhook said they changed): each
   * one's detail, and every list page and feed answer. The next read asks the API, with the old
   * copy's ETag (a free 304 when it did not change after all). `'all'`: every copy. Returns how many.
   */
  forget(ids: readonly string[] | 'all'): number;
  readonly stats: ProxyStats;
  readonly basePath: string;
}

/** One visitor's request, as the handler looks at it. */
interface Visit {
  method: string;
  /** The path after basePath (or after the prefix the framework removed), still percent-encoded. */
  rest: string;
  /** The raw query, without `?`, still percent-encoded. */
  query: string;
  ifNoneMatch: string | null;
  /** Whose budget a look-up spends. */
  visitor: string;
}
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * The server-side proxy: the site's own browser code calls it (same origin, no key), it calls the API
 * with the key the server holds, and every visitor shares one revalidated copy of each answer.
 *
 * - Only the list (with its filters and sort), the change feed and the detail are served, under
 *   `basePath`, with GET and HEAD. Only the API's known query parameters are passed on, in a fixed
 *   order (so `?x=random` cannot make a new copy), and nothing of the visitor's request: no headers,
 *   no cookies, no address.
 * - The query is read as the API reads it (a `+` is a plus sign) and checked by the rules that
 *   openapi.json gives each parameter (src/openapi.ts): what the API would refuse is a 400 here,
 *   without asking, since the API counts its 400s against the key's limit.
 * - Each visitor may cause `visitorLookupsPerMinute` look-ups a minute (default 20, well below the
 *   key's 60): 65 distinct URLs from one address cannot spend the key's minute for everyone. All
 *   visitors together may cause `siteLookupsPerMinute` (default three quarters of the key's limit),
 *   so that a few addresses cannot either.
 * - A copy younger than `freshMs` is served as it is; an older one is revalidated with its ETag by
 *   one request (a free 304 while unchanged) for all the visitors asking meanwhile. With 10 s,
 *   1,000 page views a minute of one page cost one counted request and at most six free 304s.
 * - 400 and 404 answers are kept like copies (a bot asking for one missing id again and again costs one
 *   request per `freshMs`); an id that is not a UUID is a 404 without asking.
 * - When the API fails, the last copy younger than `staleIfErrorMs` is served instead.
 */
export function createListingsHandler(options: ListingsHandlerOptions): ListingsHandler {
  const { client } = options;
  // Without a key the API refuses every look-up, and every visitor would get a 502: say so now, at
  // start-up, rather than in each browser. (A client made with `baseUrl` alone has none, which is
  // what an unset environment variable gives.)
  if (!client?.hasApiKey) {
    throw new TypeError(
      'createListingsHandler: the ListingsClient has no apiKey, so the API would refuse every request and every browser call would get a 502. ' +
        'Give it the key (e.g. apiKey: process.env.LISTINGS_API_KEY) and check that the variable is set where this server runs.',
    );
  }
  const freshMs = options.freshMs ?? 10_000;
  const lookupsPerMinute = options.visitorLookupsPerMinute ?? 20;
  if (!(lookupsPerMinute >= 1)) throw new TypeError('visitorLookupsPerMinute must be 1 or more (Infinity turns the budget off).');
  const { siteLookupsPerMinute } = options;
  if (siteLookupsPerMinute !== undefined && !(siteLookupsPerMinute >= 1)) throw new TypeError('siteLookupsPerMinute must be 1 or more (Infinity turns the site\'s share off).');
  const prefix = options.visitorIPv6Prefix ?? 56;
  if (!(Number.isInteger(prefix) && prefix >= 1 && prefix <= 128)) throw new TypeError('visitorIPv6Prefix must be a whole number of bits from 1 to 128 (e.g. 48, 56 or 64).');
  const visitorOf = (req: NodeRequestLike): string => {
    const address = req.ip ?? req.socket?.remoteAddress;
    return address === undefined || address === '' ? '' : addressKey(address, prefix);
  };
  const copies = new SharedCopies(client, {
    freshMs,
    staleIfErrorMs: options.staleIfErrorMs ?? 600_000,
    maxEntries: options.maxEntries ?? 1000,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 10_000,
    lookupsPerMinute,
    siteLookupsPerMinute,
    onError: options.onError ?? logFailure,
    now: options.now ?? Date.now,
  });
  const basePath = `/${(options.basePath ?? '/api').replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  const answer = answerer(copies, options.cacheControl ?? `public, max-age=${Math.floor(freshMs / 1000)}`);
  const { visitorKey } = options;

  const handler = async function handleListings(request: Request, context?: unknown): Promise<Response> {
    const url = new URL(request.url);
    const result = await answer({
      method: request.method,
      // The framework called this handler for this request, so a path outside basePath is one whose
      // prefix the framework removed (Hono's app.mount): read all of it.
      rest: underBase(basePath, url.pathname) ?? url.pathname,
      query: url.search.slice(1),
      ifNoneMatch: request.headers.get('if-none-match'),
      visitor: addressKey(visitorKey?.(request, context) ?? '', prefix),
    });
    return new Response(result.body, { status: result.status, headers: result.headers });
  } as ListingsHandler;

  Object.defineProperties(handler, {
    stats: { value: copies.stats, enumerable: true },
    basePath: { value: basePath, enumerable: true },
    listings: { enumerable: true, value: serverReads(copies) },
    visitorOf: { enumerable: true, value: visitorOf },
    forget: { enumerable: true, value: (ids: readonly string[] | 'all'): number => copies.forget(ids) },
    node: { enumerable: true, value: nodeAdapter(basePath, answer, visitorOf) },
  });
  return handler;
}

/** The path after basePath, or undefined when it is not under it. */
function underBase(basePath: string, pathname: string): string | undefined {
  if (pathname === basePath) return '';
  return pathname.startsWith(`${basePath}/`) ? pathname.slice(basePath.length) : undefined;
}

/**
 * The route of a path under basePath, and the API query built from the visitor's raw query: the
 * known parameters only, read as the API reads them (a `+` is a plus sign), and checked by the
 * rules the document gives them, so that what the API would refuse (a 400 that counts against
 * the key's limit) is refused here without asking.
 */
function route(rest: string, rawQuery: string): { path: string; query: Record<string, string> } | ListingsApiError | undefined {
  if (rest === '/v1/listings') {
    const query = checkQuery(parseQuery(rawQuery), LIST_LISTINGS_RULES, LIST_LISTINGS_RANGES);
    return query instanceof ListingsApiError ? query : { path: '/v1/listings', query };
  }
  if (rest === '/v1/listings/facets') {
    const query = checkQuery(parseQuery(rawQuery), LIST_LISTING_FACETS_RULES, LIST_LISTING_FACETS_RANGES);
    return query instanceof ListingsApiError ? query : { path: '/v1/listings/facets', query };
  }
  if (rest === '/v1/listings/changes') {
    const query = checkQuery(parseQuery(rawQuery), LIST_CHANGES_RULES, LIST_CHANGES_RANGES);
    return query instanceof ListingsApiError ? query : { path: '/v1/listings/changes', query };
  }
  const detail = /^\/v1\/listings\/([^/]+)$/.exec(rest);
  if (detail !== null) {
    let id: string;
    try {
      id = decodeURIComponent(detail[1]!);
    } catch {
      id = '';
    }
    if (!UUID.test(id)) return notFoundListing();
    return { path: `/v1/listings/${id.toLowerCase()}`, query: {} };
  }
  return undefined;
}

function notFoundListing(): ListingsApiError {
  return new ListingsApiError({ status: 404, code: 'not_found', message: 'No active listing with this id is visible to this key.' });
}

/**
 * The answer to one visitor's request: method, path and raw query as they came, plus the browser's
 * If-None-Match. Shared by the Fetch API handler and the node adapter, so that the adapter never
 * builds a `Request` (whose constructor throws on methods such as TRACE).
 */
function answerer(copies: SharedCopies, cacheControl: string): (visit: Visit) => Promise<Answer> {
  return async function answer(visit: Visit): Promise<Answer> {
    const { method } = visit;
    const found = route(visit.rest, visit.query);
    if (found === undefined) return errorAnswer(new ListingsApiError({ status: 404, code: 'not_found', message: 'Not found.' }), method);
    if (method !== 'GET' && method !== 'HEAD') {
      const refused = errorAnswer(new ListingsApiError({ status: 405, code: 'method_not_allowed', message: `Method ${printable(method)} is not allowed here; use GET or HEAD.` }), method);
      refused.headers.allow = 'GET, HEAD';
      return refused;
    }
    if (found instanceof ListingsApiError) {
      copies.count('error');
      return errorAnswer(found, method);
    }
    const { entry, how } = await copies.read(found.path, found.query, visit.visitor);
    copies.count(how);
    if (entry.failure !== undefined || entry.good === undefined) return errorAnswer(entry.failure!, method, how);
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': cacheControl,
      'x-content-type-options': 'nosniff',
      'x-listings-cache': how,
    };
    if (entry.good.etag !== undefined) {
      headers.etag = entry.good.etag;
      if (etagMatches(visit.ifNoneMatch, entry.good.etag)) return { status: 304, headers, body: null };
    }
    return { status: 200, headers, body: method === 'HEAD' ? null : entry.good.text };
  };
}

/** `handler.listings`: the server's own reads, through the same copies as the browsers'. */
function serverReads(copies: SharedCopies): ListingsHandler['listings'] {
  async function serverRead<T>(path: string, query: Record<string, string> | ListingsApiError, options: ServerReadOptions): Promise<T> {
    if (query instanceof ListingsApiError) {
      copies.count('error');
      throw query;
    }
    const { entry, how } = await copies.read(path, query, options.visitor);
    copies.count(how);
    if (entry.failure !== undefined || entry.good === undefined) throw entry.failure;
    return JSON.parse(entry.good.text) as T;
  }
  return {
    list: (params: ListParams = {}, options: ServerReadOptions = {}) => serverRead<ListingPage>('/v1/listings', checked(listQuery(params), LIST_LISTINGS_RULES, LIST_LISTINGS_RANGES), options),
    facets: (params: ListingSelection = {}, options: ServerReadOptions = {}) =>
      serverRead<ListingFacets>('/v1/listings/facets', checked(facetsQuery(params), LIST_LISTING_FACETS_RULES, LIST_LISTING_FACETS_RANGES), options),
    get: (id: string, options: ServerReadOptions = {}) => {
      if (!UUID.test(id)) return Promise.reject(notFoundListing());
      return serverRead<Listing>(`/v1/listings/${id.toLowerCase()}`, {}, options);
    },
    changes: (params: ChangesParams = {}, options: ServerReadOptions = {}) => {
      const query: Record<string, string> = {};
      if (params.cursor !== undefined) query.cursor = params.cursor;
      if (params.limit !== undefined) query.limit = String(params.limit);
      return serverRead<ChangePage>('/v1/listings/changes', checked(query, LIST_CHANGES_RULES, LIST_CHANGES_RANGES), options);
    },
  };
}

/** `handler.node`: the adapter for node:http and Express. */
function nodeAdapter(basePath: string, answer: (visit: Visit) => Promise<Answer>, visitorOf: (req: NodeRequestLike) => string): ListingsHandler['node'] {
  return function node(req: NodeRequestLike, res: NodeResponseLike, next?: (error?: unknown) => void): void {
    // Nothing a visitor sends may throw out of here: a throw in a request listener ends the
    // process. Every input is answered (or passed to `next`); the catch is the last resort.
    try {
      const target = parseTarget(req.originalUrl ?? req.url ?? '/');
      let rest = target === undefined ? undefined : underBase(basePath, target.pathname);
      // Mounted under a prefix that the framework removed from req.url (Express's
      // app.use('/prefix', handler.node)): the path after that prefix.
      if (target !== undefined && rest === undefined && req.originalUrl !== undefined && req.url !== undefined && req.url !== req.originalUrl) {
        rest = parseTarget(req.url)?.pathname;
      }
      if (target === undefined || rest === undefined) {
        if (next !== undefined) return next();
        if (target === undefined) return send(res, errorAnswer(new ListingsApiError({ status: 400, code: 'bad_request', message: 'The request target is not a valid URL.' }), req.method ?? 'GET'));
        return send(res, errorAnswer(new ListingsApiError({ status: 404, code: 'not_found', message: 'Not found.' }), req.method ?? 'GET'));
      }
      // Only what the handler looks at is carried over: the path, the method and If-None-Match
      // (for a 304 to this browser; it is never sent upstream).
      const inm = req.headers['if-none-match'];
      answer({
        method: req.method ?? 'GET',
        rest,
        query: target.query,
        ifNoneMatch: typeof inm === 'string' ? inm : Array.isArray(inm) ? inm.join(', ') : null,
        visitor: visitorOf(req),
      })
        .then((result) => send(res, result))
        .catch((error: unknown) => fail(res, error, next));
    } catch (error) {
      fail(res, error, next);
    }
  };
}

/**
 * A server-side read's query, checked by the same rules as a visitor's (the typed parameters can
 * still hold a page 0 or a price "abc"), in the parameters' fixed order, so that equal requests
 * share one copy with the browsers' reads.
 */
function checked(
  query: Record<string, string>,
  rules: Readonly<Record<string, QueryRule>>,
  ranges: ReadonlyArray<readonly [string, string]>,
): Record<string, string> | ListingsApiError {
  return checkQuery(new Map(Object.entries(query).map(([name, value]) => [name, [value]])), rules, ranges);
}

function etagMatches(header: string | null, etag: string): boolean {
  if (header === null) return false;
  const bare = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);
  return header.split(',').some((raw) => raw.trim() === '*' || bare(raw.trim()) === bare(etag));
}

/**
 * What the browser gets when the API could not give an answer: the API's own status and code for
 * 400 and 404 (the visitor asked for something wrong or gone); otherwise a gateway error that says
 * the site, not the visitor, has a problem, without any detail of the key.
 */
function errorAnswer(error: ListingsApiError, method: string, how: How = 'error'): Answer {
  let status: number;
  let code: string;
  let message: string;
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-listings-cache': how };
  if (error.status === 400 || error.status === 404 || error.status === 405) {
    ({ status, code, message } = error);
  } else if (how === 'limited' || how === 'busy') {
    // The visitor's own budget (a 429 to this visitor alone), or the site's share of the key (503).
    ({ status, code, message } = error);
    headers['retry-after'] = String(error.retryAfter);
  } else if (error.status === 429) {
    status = 503;
    code = 'rate_limited';
    message = 'The listings are busy right now; try again shortly.';
    if (error.retryAfter !== undefined) headers['retry-after'] = String(error.retryAfter);
  } else if (error.code === 'timeout') {
    status = 504;
    code = 'timeout';
    message = 'The listings service did not answer in time.';
  } else if (error.status === 401 || error.status === 403) {
    status = 502;
    code = 'bad_gateway';
    message = `The listings service refused this site's key (${error.code}); the site's operator must fix its configuration.`;
  } else {
    status = 502;
    code = 'bad_gateway';
    message = 'The listings service is unavailable; try again shortly.';
  }
  const body = JSON.stringify({ error: code, message, ...(error.requestId === undefined ? {} : { request_id: error.requestId }) });
  return { status, headers, body: method === 'HEAD' ? null : body };
}

/**
 * The path and raw query of a node:http request target: origin-form (`/path?query`, what browsers
 * send) or absolute-form (`http://host/path?query`, which servers must accept, RFC 9112 3.2.2).
 * Undefined for anything else (`*`, `http://[`): the WHATWG URL parser throws on those, and here
 * that must become an answer, not an exception.
 */
function parseTarget(target: string): { pathname: string; query: string } | undefined {
  const origin = target.startsWith('/');
  let url: URL;
  try {
    // Prefixed, so that `//host/path` stays a path instead of becoming a host.
    url = new URL(origin ? `http://proxy.invalid${target}` : target);
  } catch {
    return undefined;
  }
  if (!origin && url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return { pathname: url.pathname, query: url.search.slice(1) };
}

function send(res: NodeResponseLike, answer: Answer): void {
  res.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.end(answer.body ?? undefined);
}

/** The node adapter's last resort: Express's error handling when there is one, else a JSON 500. */
function fail(res: NodeResponseLike, error: unknown, next: ((error?: unknown) => void) | undefined): void {
  if (next !== undefined) return next(error);
  try {
    send(res, { status: 500, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }, body: JSON.stringify({ error: 'internal_error', message: 'The listings proxy failed.' }) });
  } catch {
    // The answer had already started: nothing more can be said on this response.
  }
}

/** A method name as it may be repeated in a message: HTTP tokens only, at most 20 characters. */
function printable(method: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/.test(method) ? method : 'this method';
}

/**
 * The default `onError`: one line per failed look-up (not per retried attempt), with what the
 * visitors got, so that a revoked key or a failing API shows in the server's log.
 */
function logFailure({ error, path, outcome }: UpstreamFailure): void {
  if (outcome === 'retrying') return;
  const status = error.status === 0 ? 'no answer' : `HTTP ${error.status}`;
  const request = error.requestId === undefined ? '' : ` (request id ${error.requestId})`;
  const served = outcome === 'stale' ? 'served an older copy' : 'served an error';
  console.error(`@listings-api/sdk proxy: GET ${path} failed: ${status} ${error.code}: ${error.message.replace(/\.$/, '')}${request}; ${served}.`);
}
