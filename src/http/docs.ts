import compress from '@fastify/compress';
import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';

/**
 * `GET /docs`: the interactive API reference (Scalar), rendered in the browser from the OpenAPI
 * document this server serves at /openapi.json. On any host and with no key, like that
 * document. Offline: the plugin serves Scalar's script itself (`/docs/js/scalar.js`), and the
 * page asks for no web fonts, sends no telemetry and offers none of Scalar's hosted services.
 *
 * "Try it" calls the host the page was loaded from: the one server given is `/`, which the
 * browser resolves against the page, so the reference read on `api.my.localhost:3000` tries
 * `api.my.localhost:3000` (same origin: no CORS). A key pasted there stays in that browser tab.
 * It starts with no optional parameter set: the document's parameter examples are shown but not
 * sent (openapi.ts, parametersOf).
 */
export const DOCS_PATH = '/docs';

/**
 * The page's Content-Security-Policy (issue 40 item 9): scripts only from this origin (Scalar's
 * bundle) plus the page's one inline script, the call of `Scalar.createApiReference` with this
 * configuration, allowed by its SHA-256 rather than by 'unsafe-inline' (and never 'unsafe-eval');
 * requests ("try it", /openapi.json) only to this origin; never framed. Styles allow
 * 'unsafe-inline': Scalar adds its stylesheet as a `<style>` element at run time, and a nonce for
 * it would have to be fixed at start-up (the plugin renders the page from a static
 * configuration), which is no better. Styles cannot run script.
 */
export function docsContentSecurityPolicy(inlineScripts: readonly string[]): string {
  const hashes = inlineScripts.map((script) => `'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** The bodies of a page's inline `<script>` elements (those without `src`), as the browser hashes them. */
export function inlineScriptsOf(html: string): string[] {
  return [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)].filter(([, attributes]) => !/\bsrc\s*=/i.test(attributes!)).map(([, , body]) => body!);
}

export async function docsRoutes(app: FastifyInstance): Promise<void> {
  // Before @fastify/compress's hooks (route-level, so they run after this one): the page is
  // still the string the plugin rendered. It is the same at every request (a static
  // configuration), so its policy is worked out once.
  let policyFor: { html: string; policy: string } | undefined;
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    const type = String(reply.getHeader('content-type') ?? '');
    if (typeof payload === 'string' && type.startsWith('text/html')) {
      if (policyFor?.html !== payload) policyFor = { html: payload, policy: docsContentSecurityPolicy(inlineScriptsOf(payload)) };
      reply.header('content-security-policy', policyFor.policy);
    } else {
      // The redirect to /docs/, the script, anything else under /docs: nothing to run or show.
      reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
    }
    return payload;
  });
  // Scalar's script is 4.4 MB: compressed (and cached by the browser) it is about a quarter of
  // that. Registered here, inside this plugin, so that only these routes are compressed; the
  // API's answers are small and their path stays as it is.
  await app.register(compress, { encodings: ['br', 'gzip'], brotliOptions: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } } });
  const reference = lazyReference();
  app.addHook('onClose', async () => (await reference.loaded())?.close());
  for (const url of SCALAR_ROUTES) {
    app.get(url, { logLevel: 'debug' }, async (request, reply) => {
      const answer = await (await reference.app()).inject({ method: 'GET', url: request.url });
      reply.code(answer.statusCode);
      for (const name of ['content-type', 'location']) {
        const value = answer.headers[name];
        if (value !== undefined) reply.header(name, value);
      }
      // The script changes only with the plugin's version: the browser keeps it for a day.
      if (url === SCALAR_SCRIPT) reply.header('cache-control', 'public, max-age=86400');
      return answer.payload;
    });
  }
}

const SCALAR_SCRIPT = `${DOCS_PATH}/js/scalar.js`;
/** The routes Scalar's plugin serves under DOCS_PATH with a `url` configuration: the redirect, the page, its script. */
const SCALAR_ROUTES = [DOCS_PATH, `${DOCS_PATH}/`, SCALAR_SCRIPT];

const SCALAR_OPTIONS: FastifyApiReferenceOptions = {
  routePrefix: DOCS_PATH,
  configuration: {
    url: '/openapi.json',
    pageTitle: 'Listings Developer API reference',
    servers: [{ url: '/', description: 'This host: the one this page was loaded from' }],
    withDefaultFonts: false,
    telemetry: false,
    hideClientButton: true,
    showDeveloperTools: 'never',
    // Scalar's hosted AI chat and MCP generator: services outside this deployment.
    agent: { disabled: true },
    mcp: { disabled: true },
  },
};

/**
 * Scalar's plugin, loaded on the first request for the reference rather than when the app is
 * built: its module carries the browser bundle as one 4.3 MB string, which every process that
 * serves the API (and every test file) would otherwise read, decode and compile at start, about
 * half of the CPU of importing the service, for a page most processes never serve. Its routes
 * live in a Fastify instance of their own that never listens; the app's /docs routes above ask
 * it with Fastify's public `inject` and answer with what it answers (status, type, redirect,
 * body), so the plugin renders the page and serves its script as it would if registered here.
 */
function lazyReference() {
  let loading: Promise<FastifyInstance> | undefined;
  const load = async () => {
    const { default: scalarApiReference } = await import('@scalar/fastify-api-reference');
    const inner = Fastify();
    await inner.register(scalarApiReference, SCALAR_OPTIONS);
    await inner.ready();
    return inner;
  };
  return {
    /** The plugin's app, loaded once; a failed load is tried again by the next request. */
    app: (): Promise<FastifyInstance> =>
      (loading ??= load().catch((error: unknown) => {
        loading = undefined;
        throw error;
      })),
    /** The app if it was loaded, for closing; never loads it. */
    loaded: async (): Promise<FastifyInstance | undefined> => loading?.catch(() => undefined),
  };
}
