import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createListingsHandler, createWebhookHandler, ListingsApiError, type Country, type ListingFacets, type ListingsClient, type ListingsHandler } from '@listings-api/sdk';
import { placesFor } from './places.js';
import { detailPage, listPage, messagePage, noSuchPage, searchErrorPage } from './render.js';
import { facetsSelectionOf, listParamsOf, parseSearch, refusedSearch, searchHref, searchProblem } from './search.js';

export * from './render.js';

export interface SiteOptions {
  /** The SDK client that holds the key (server side only). */
  client: ListingsClient;
  /** Listings per page (default 12). */
  perPage?: number;
  /** How long one copy of an answer is shared by every visitor (default 10 s): see the proxy handler. */
  freshMs?: number;
  /**
   * The site's public origin for canonical URLs and JSON-LD (e.g. `https://www.example.com`).
   * Without it they use the request's Host header, which is fine locally but should be fixed behind
   * a proxy or in production.
   */
  siteUrl?: string;
  /**
   * The secret of a webhook endpoint registered for this site (`whsec_...`): with it, the site
   * takes the API's messages at POST /webhooks/listings and shows changed listings at once instead
   * of after `freshMs`.
   */
  webhookSecret?: string;
  /**
   * The key's country (`countryOfKey(key)`): the "Near" select then offers its places only.
   * Without it, every country's places, grouped.
   */
  country?: Country;
  /** Testing hook: the proxy's clock. */
  now?: () => number;
}

export interface Site {
  server: Server;
  /** The proxy handler: the browser's "load more" calls it under /api, and the pages read through it. */
  handler: ListingsHandler;
  listen(port: number, host?: string): Promise<number>;
  close(): Promise<void>;
}

const PUBLIC = fileURLToPath(new URL('../public/', import.meta.url));
/** The site's modules that the browser loads as they are compiled: the cards' wording and the map's geometry. */
const BROWSER_MODULES: Record<string, string> = {
  '/assets/format.js': fileURLToPath(new URL('./format.js', import.meta.url)),
  '/assets/geo.js': fileURLToPath(new URL('./geo.js', import.meta.url)),
};
/** The SDK's browser build is its ESM dist/, served as it is. */
const SDK_DIST = dirname(fileURLToPath(import.meta.resolve('@listings-api/sdk')));

const CSP = "default-src 'none'; img-src 'self' https: data: http://localhost:* http://*.localhost:* http://127.0.0.1:*; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'x-content-type-options': 'nosniff', 'referrer-policy': 'strict-origin-when-cross-origin', ...extra });
  res.end(body);
}

function html(res: ServerResponse, status: number, body: string): void {
  send(res, status, 'text/html; charset=utf-8', body, { 'content-security-policy': CSP, 'cache-control': 'no-cache' });
}

/** Static files of public/ and the SDK's dist/, by exact name only. */
function asset(res: ServerResponse, path: string): boolean {
  let file: string | undefined;
  let m: RegExpExecArray | null;
  if ((m = /^\/assets\/(site\.(?:css|js))$/.exec(path))) file = join(PUBLIC, m[1]!);
  else if ((m = /^\/assets\/sdk\/([a-z-]+\.js)$/.exec(path))) file = join(SDK_DIST, m[1]!);
  // The wording of cards (format.ts) and the map's geometry (geo.ts), as compiled, shared by the
  // server's pages and "Load more".
  else if (Object.hasOwn(BROWSER_MODULES, path)) file = BROWSER_MODULES[path];
  if (file === undefined) return false;
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch {
    return false;
  }
  send(res, 200, file.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8', body, { 'cache-control': 'public, max-age=300' });
  return true;
}

function redirect(res: ServerResponse, location: string): void {
  send(res, 303, 'text/plain; charset=utf-8', `See ${location}`, { location, 'cache-control': 'no-cache' });
}

/**
 * A request target as a URL: origin-form (`/path?query`) or absolute-form (`http://host/path`);
 * undefined for one the URL parser refuses (`http://[`), which is the visitor's mistake (a 400).
 */
function requestUrl(target: string): URL | undefined {
  try {
    return new URL(target.startsWith('/') ? `http://site.invalid${target}` : target);
  } catch {
    return undefined;
  }
}

/** A path segment decoded; one that is not valid percent-encoding is no listing's id (a 404, not a crash). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

/**
 * The example site: `/` (the listings; search with `?q=`, filter by `?usage=`, near a place with
 * `?near=<place>&radius=<km>`, pages by `?page=`), `/listings/<id>` (one
 * listing with JSON-LD), `/api/...` (the SDK's proxy handler, for the browser's "load more"), and
 * its assets. node:http only.
 */
export function createSite(options: SiteOptions): Site {
  const perPage = options.perPage ?? 12;
  const places = placesFor(options.country);
  const handler = createListingsHandler({ client: options.client, basePath: '/api', freshMs: options.freshMs ?? 10_000, ...(options.now ? { now: options.now } : {}) });
  // A message names the listings that changed: their copies (and the list pages) are read again on the next view.
  const webhook = options.webhookSecret === undefined
    ? undefined
    : createWebhookHandler({
      secret: options.webhookSecret,
      onChange: ({ upserted, removed }) => handler.forget([...upserted, ...removed]),
      onResync: () => handler.forget('all'),
      onError: (error) => console.error(`example website: webhook refused: ${error instanceof Error ? error.message : String(error)}`),
    });

  async function page(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain; charset=utf-8', 'Method not allowed', { allow: 'GET, HEAD' });
    const url = requestUrl(req.url ?? '/');
    if (url === undefined) return html(res, 400, messagePage('Bad request', 'This address is not one the site can read.'));
    if (asset(res, url.pathname)) return;
    if (url.pathname === '/') {
      const { search, page: pageNo, tidy } = parseSearch(url.searchParams, places.flatMap((c) => c.places));
      // What a plain GET form leaves in the address (`q=&near=&radius=5`): to the address the
      // site's own links use, before any look-up.
      if (!tidy) return redirect(res, searchHref(search, pageNo));
      // A search the API would refuse (only punctuation, too long): said on the page, no look-up spent.
      const problem = searchProblem(search);
      if (problem !== undefined) return html(res, 400, searchErrorPage({ search, places, message: problem }));
      // Read for this visitor: a page that is not in the shared copy spends their budget of
      // look-ups, as their "load more" through /api does (issue 29: /?page=1, 2, 3, ... would
      // otherwise let one visitor use up the key's limit). The facets (the chips' counts) are
      // read beside the page, without the usage type: one copy for every chip of a search.
      const visitor = { visitor: handler.visitorOf(req) };
      const [list, counts] = await Promise.allSettled([
        handler.listings.list(listParamsOf(search, pageNo, perPage), visitor),
        handler.listings.facets(facetsSelectionOf(search), visitor),
      ]);
      if (list.status === 'rejected') {
        const refused = list.reason instanceof ListingsApiError ? refusedSearch(list.reason, search) : undefined;
        if (refused !== undefined) return html(res, 400, searchErrorPage({ search, places, message: refused }));
        throw list.reason;
      }
      const answer = list.value;
      // Past the last page the API answers with no items: a 404 that says so and links to the last
      // page (a redirect would cost this visitor another look-up, and hide that the link is stale).
      if (answer.page > answer.pages) return html(res, 404, noSuchPage({ requested: answer.page, pages: answer.pages, search }));
      // Without the facets (the visitor's budget, a busy API), the chips are shown without counts.
      const facets: ListingFacets | undefined = counts.status === 'fulfilled' ? counts.value : undefined;
      return html(res, 200, listPage({ page: answer, search, places, facets, perPage }));
    }
    const detail = /^\/listings\/([^/]+)$/.exec(url.pathname);
    if (detail !== null) {
      const listing = await handler.listings.get(decodeSegment(detail[1]!), { visitor: handler.visitorOf(req) });
      const origin = options.siteUrl?.replace(/\/+$/, '') ?? `http://${req.headers.host ?? 'localhost'}`;
      return html(res, 200, detailPage(listing, `${origin}/listings/${encodeURIComponent(listing.id)}`));
    }
    html(res, 404, messagePage('Page not found', 'There is no page at this address.'));
  }

  const server = createServer((req, res) => {
    // The receiver answers every request itself (a body over 1 MiB is a 413, one cut short is
    // reported) and returns nothing that could reject.
    if (webhook !== undefined && req.url === '/webhooks/listings') return webhook.node(req, res);
    handler.node(req, res, () => {
      page(req, res).catch((error: unknown) => {
        if (error instanceof ListingsApiError && error.status === 404) return html(res, 404, messagePage('Listing not found', 'This listing is no longer available.'));
        if (error instanceof ListingsApiError && error.status === 429 && error.retryAfter !== undefined) {
          res.setHeader('retry-after', String(error.retryAfter));
          // This visitor's budget of look-ups (or, after the client's retries, the key's limit).
          return html(res, 429, messagePage('Too many requests', `The listings could not be loaded just now. Please try again in ${error.retryAfter} seconds.`));
        }
        if (error instanceof ListingsApiError && error.status === 503 && error.retryAfter !== undefined) {
          res.setHeader('retry-after', String(error.retryAfter));
          // The site's share of the key is spent for now (the proxy's siteLookupsPerMinute), and this page has no copy.
          return html(res, 503, messagePage('Busy', `The listings are busy right now. Please try again in ${error.retryAfter} seconds.`));
        }
        console.error(`example website: ${error instanceof Error ? error.message : String(error)}`);
        html(res, 502, messagePage('Listings unavailable', 'The listings could not be loaded just now. Please try again in a moment.'));
      });
    });
  });

  return {
    server,
    handler,
    listen: (port, host = '127.0.0.1') =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as { port: number }).port));
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
