import { createServer } from 'node:http';
import { loadCapturedRoutes } from './captured-routes.js';

/**
 * The ceiling: a bare node:http server answering each benchmarked path with the bytes the real
 * service returned for it (same status, same header fields and values, same body), precomputed at
 * start. It does no work per request beyond one Map look-up, so what the load generator gets from
 * it is the most this machine can do for that response.
 *
 * Usage: PORT=... node dist/bench/baseline-server.js <routes.json> (see captured-routes.ts).
 */
const routes = new Map<string, { status: number; headers: string[]; body: Buffer }>();
for (const [path, route] of loadCapturedRoutes('baseline-server.js')) {
  // writeHead takes the fields flat, in order: name, value, name, value.
  routes.set(path, { status: route.status, headers: route.headers.flat(), body: route.body });
}
const health = Buffer.from('{"status":"ok"}');

const server = createServer((req, res) => {
  const route = routes.get(req.url ?? '');
  if (route !== undefined) {
    res.writeHead(route.status, route.headers);
    res.end(route.body);
  } else if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(health.length) });
    res.end(health);
  } else {
    res.writeHead(404, { 'content-length': '0' });
    res.end();
  }
});
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
