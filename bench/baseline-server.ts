import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * The ceiling: a bare node:http server answering each benchmarked path with the exact bytes the
 * real service returned for it (same status, same content-type), precomputed at start. It does no
 * work per request beyond one Map look-up, so what the load generator gets from it is the most
 * this machine can do for a response of that size.
 *
 * Usage: PORT=... node dist/bench/baseline-server.js <routes.json>
 * where routes.json is { "<path>": { "status": 200, "contentType": "...", "body": "<base64>" } }.
 */
interface RouteFile {
  [path: string]: { status: number; contentType: string; body: string };
}

const file = process.argv[2];
if (file === undefined) {
  process.stderr.write('usage: baseline-server.js <routes.json>\n');
  process.exit(2);
}
const routes = new Map<string, { status: number; headers: Record<string, string>; body: Buffer }>();
for (const [path, route] of Object.entries(JSON.parse(readFileSync(file, 'utf8')) as RouteFile)) {
  const body = Buffer.from(route.body, 'base64');
  routes.set(path, { status: route.status, headers: { 'content-type': route.contentType, 'content-length': String(body.length) }, body });
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
