import type { FastifyInstance } from 'fastify';
import type { Deprecation } from '../config/index.js';
import type { Country } from '../core/countries.js';
import { buildOpenApiDocument } from './openapi.js';

/**
 * GET /openapi.json: the OpenAPI document, outside /v1 and on any host like the health routes, with
 * this deployment's domain and countries in its servers, and the port it was asked on (a local
 * server's `localhost:3000`), so that a client generated from it calls where it came from; and
 * the operations this deployment marked deprecated (API_DEPRECATIONS, D29).
 */
export async function openApiRoute(
  app: FastifyInstance,
  opts: { apiDomain: string; countries: readonly Country[]; deprecations: readonly Deprecation[] },
): Promise<void> {
  const openApiBodies = new Map<string, string>();
  const openApiBody = (port: string): string => {
    let body = openApiBodies.get(port);
    if (body === undefined) {
      body = JSON.stringify(buildOpenApiDocument({ apiDomain: port === '' ? opts.apiDomain : `${opts.apiDomain}:${port}`, countries: opts.countries, deprecations: opts.deprecations }));
      // A handful of ports in practice; a client inventing ports gets its document built, not kept.
      if (openApiBodies.size < 8) openApiBodies.set(port, body);
    }
    return body;
  };
  app.get('/openapi.json', async (request, reply) => {
    const port = /:(\d{1,5})$/.exec(request.host)?.[1] ?? '';
    return reply.type('application/json; charset=utf-8').send(openApiBody(port));
  });
}
