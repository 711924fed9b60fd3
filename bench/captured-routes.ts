import { readFileSync } from 'node:fs';

/** A captured response of the real service, as the bench writes it for the replay servers. */
export interface CapturedRoute {
  status: number;
  /**
   * The header fields the replay sends, as name-value pairs in the service's order: all of the
   * service's (its request id, rate-limit headers, ETag, Cache-Control, Content-Type, Content-Length
   * and the rest, with the values of the capture) but those Node's HTTP server adds to every answer
   * itself (see REPLAYED_BY_NODE); only Content-Type and Content-Length with BENCH_CEILING=body.
   */
  headers: Array<[string, string]>;
  body: Buffer;
}

/** What the routes file holds per path (written by run.ts). */
export interface CapturedRouteJson {
  status: number;
  contentType: string;
  /** The service's response header fields, flat: name, value, name, value (Node's `rawHeaders`). */
  rawHeaders: string[];
  /** Base64. */
  body: string;
}

/** Fields Node's HTTP server writes on every answer of any server (the replays too): not replayed, or they would come twice. */
const REPLAYED_BY_NODE: ReadonlySet<string> = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/**
 * The routes file named on the command line of a replay server (baseline-server.ts,
 * fastify-floor-server.ts): { "<path>": CapturedRouteJson }. Exits with a usage line when no file
 * is named. `BENCH_CEILING=body` replays the body with its Content-Type and Content-Length only (the
 * ceiling of the bench before 2026-11-25, for comparisons with older figures).
 */
export function loadCapturedRoutes(serverName: string): Map<string, CapturedRoute> {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write(`usage: ${serverName} <routes.json>\n`);
    process.exit(2);
  }
  const bodyOnly = process.env.BENCH_CEILING === 'body';
  const routes = new Map<string, CapturedRoute>();
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, CapturedRouteJson>;
  for (const [path, route] of Object.entries(parsed)) {
    const body = Buffer.from(route.body, 'base64');
    const headers: Array<[string, string]> = [];
    if (bodyOnly) headers.push(['content-type', route.contentType], ['content-length', String(body.length)]);
    else {
      for (let i = 0; i < route.rawHeaders.length; i += 2) {
        const name = route.rawHeaders[i]!;
        if (!REPLAYED_BY_NODE.has(name.toLowerCase())) headers.push([name, route.rawHeaders[i + 1]!]);
      }
    }
    routes.set(path, { status: route.status, headers, body });
  }
  return routes;
}
