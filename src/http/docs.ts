import compress from '@fastify/compress';
import scalarApiReference from '@scalar/fastify-api-reference';
import zlib from 'node:zlib';
import type { FastifyInstance } from 'fastify';

/**
 * `GET /docs`: the interactive API reference (Scalar), rendered in the browser from the OpenAPI
 * document this server serves at /openapi.json. On any host and with no key, like that
 * document. Offline: the plugin serves Scalar's script itself (`/docs/js/scalar.js`), and the
 * page asks for no web fonts, sends no telemetry and offers none of Scalar's hosted services.
 *
 * "Try it" calls the host the page was loaded from: the one server given is `/`, which the
 * browser resolves against the page, so the reference read on `api.my.localhost:3000` tries
 * `api.my.localhost:3000` (same origin: no CORS). A key pasted there stays in that browser tab.
 */
export const DOCS_PATH = '/docs';

export async function docsRoutes(app: FastifyInstance): Promise<void> {
  // Scalar's script is 4.4 MB: compressed (and cached by the browser) it is about a quarter of
  // that. Registered here, inside this plugin, so that only these routes are compressed; the
  // API's answers are small and their path stays as it is.
  await app.register(compress, { encodings: ['br', 'gzip'], brotliOptions: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } } });
  app.addHook('onSend', async (request, reply) => {
    if (request.url.endsWith('/js/scalar.js')) reply.header('cache-control', 'public, max-age=86400');
  });
  await app.register(scalarApiReference, {
    routePrefix: DOCS_PATH,
    logLevel: 'debug',
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
  });
}
