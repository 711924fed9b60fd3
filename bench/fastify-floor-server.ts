import Fastify from 'fastify';
import { loadCapturedRoutes } from './captured-routes.js';

/**
 * The framework's floor: the same bytes as the baseline (bench/baseline-server.ts), served by a
 * Fastify app with nothing of the service in it (no logger, no hooks, one route answering each
 * captured path from a Map, with the captured header fields). The service runs on Fastify, so what
 * separates the service from this floor is the service's own work per request; what separates the
 * floor from the bare baseline is the framework's (issue 9 item 4: "if a part of Fastify is the
 * cost, say so").
 *
 * Usage: PORT=... node dist/bench/fastify-floor-server.js <routes.json> (see captured-routes.ts).
 */
const routes = new Map([...loadCapturedRoutes('fastify-floor-server.js')].map(([path, route]) => [path, { ...route, headers: Object.fromEntries(route.headers) }]));

const app = Fastify({ logger: false });
app.get('/healthz', (_request, reply) => {
  void reply.type('application/json; charset=utf-8').send('{"status":"ok"}');
});
app.get('/*', (request, reply) => {
  const route = routes.get(request.url);
  if (route === undefined) return reply.code(404).send();
  return reply.code(route.status).headers(route.headers).send(route.body);
});
await app.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1' });
const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
