import { readFileSync } from 'node:fs';

/** A captured response of the real service, as the bench writes it for the replay servers. */
export interface CapturedRoute {
  status: number;
  contentType: string;
  body: Buffer;
}

/**
 * The routes file named on the command line of a replay server (baseline-server.ts,
 * fastify-floor-server.ts): { "<path>": { "status": 200, "contentType": "...", "body": "<base64>" } }.
 * Exits with a usage line when no file is named.
 */
export function loadCapturedRoutes(serverName: string): Map<string, CapturedRoute> {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write(`usage: ${serverName} <routes.json>\n`);
    process.exit(2);
  }
  const routes = new Map<string, CapturedRoute>();
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, { status: number; contentType: string; body: string }>;
  for (const [path, route] of Object.entries(parsed)) {
    routes.set(path, { status: route.status, contentType: route.contentType, body: Buffer.from(route.body, 'base64') });
  }
  return routes;
}
