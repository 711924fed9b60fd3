import { readFileSync } from 'node:fs';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import Fastify, { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { redactedExcerpt } from '../auth/key-format.js';
import type { Config } from '../config/index.js';
import { systemClock, systemSleep, type Clock, type Sleep } from '../core/clock.js';
import { compileProxyTrust, normaliseForwardedFor } from '../core/proxy-trust.js';
import { nextRequestId } from '../http/front.js';
import type { Country } from '../core/countries.js';
import { apiBaseUrl, dashboardUrl } from '../config/urls.js';
import { StoreBusyError, type Store } from '../storage/index.js';
import { trackConnections } from '../http/drain.js';
import type { DashboardMetrics } from './metrics.js';
import { dashboardRoutes } from './routes.js';
import { createSessions } from './sessions.js';
import { createSignInThrottle } from './throttle.js';
import { errorPage } from './layout.js';
import type { SendOptions } from '../webhooks/send.js';
import { Type } from '#typebox';
import { requireDeclaredSchema, type Typed } from './schemas.js';
import AjvCompiler from '@fastify/ajv-compiler';

/**
 * The validator compilers of every dashboard app in this process, as Fastify's schemaController
 * option lets apps share them: one Ajv instance, whose meta-schema is compiled once and which keeps
 * the validators of the routes' (module-level) schemas. Without it each app compiles them all
 * again: about 18 ms of each service's start, which a test suite of a service per test pays
 * a thousand times.
 */
const SHARED_VALIDATORS = AjvCompiler();

/**
 * The developer dashboard (Settings > Developer; spec 1 and 5): where an account's members sign in
 * to create, label and revoke API keys and register browser origins. A Fastify app of its own,
 * served on the API's port for its own host name (DASHBOARD_HOST, see http/front.ts) or on a port
 * of its own (DASHBOARD_PORT), over the service's store: every key and origin change goes through the store's
 * repositories, which move its change version, so the API's caches drop what they held and a
 * revoked key is refused on the very next request (D4).
 */
export interface DashboardOptions {
  store: Store;
  config: Config;
  clock?: Clock;
  /** The sign-in throttle's delays (throttle.ts); tests pass their clock's. */
  sleep?: Sleep;
  logger: Logger;
  /** The API's actual port (PORT=0 picks one at listen time), for the curl line of a new key. */
  apiPort?: () => number | undefined;
  /** With METRICS_PORT: its answers and sign-ins are counted (src/dashboard/metrics.ts). */
  metrics?: DashboardMetrics;
  /** This process's last use of a key not written yet (usage/index.ts), so that pages show it exactly. */
  lastUsedOf?: (keyId: string) => number | undefined;
  /** Tests: how webhook host names are resolved by "Send test event" (webhooks/send.ts). */
  webhookResolve?: SendOptions['resolve'];
}

/** The page's stylesheet and script, in src/dashboard/static (from dist/src/dashboard: ../../../src/...). */
const STATIC_DIR = new URL('../../../src/dashboard/static/', import.meta.url);

function readStatic(): Record<string, { type: string; body: Buffer }> {
  return {
    'dashboard.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('dashboard.css', STATIC_DIR)) },
    'copy.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('copy.js', STATIC_DIR)) },
  };
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not `no-referrer`: with it, browsers send `Origin: null` on form posts, which the CSRF check refuses.
  'referrer-policy': 'same-origin',
  // Pages show account data and, once, a new key: never kept by a browser or proxy cache.
  'cache-control': 'no-store',
};

/**
 * One log line per request: request id, method, path without the query string, status, latency,
 * the member's id and the client address (request.ip under TRUST_PROXY, as the sign-in throttle
 * counts it). Never a header, cookie or body (passwords, keys: D20).
 */
class DashboardLog extends LogController {
  override incomingRequest(): void {}
  override routeNotFound(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const member = (request as { member?: { user: { id: string } } | null }).member;
    const line = {
      method: request.method,
      // A key pasted into a URL by mistake is cut to its `<cc>_live_` part (D20).
      path: redactedExcerpt(request.url.split('?', 1)[0]!, 300),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      user_id: member?.user.id ?? null,
      client_address: request.ip ?? null,
    };
    if (error) reply.log.error({ ...line, err: error }, 'dashboard request');
    else reply.log.info(line, 'dashboard request');
  }
}

/**
 * Every error is answered with a page of the dashboard: a busy database (503, the write was rolled
 * back), a request it cannot read (4xx), anything else (500, with the request id to give the operator).
 */
function sendErrorPage(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.type('text/html; charset=utf-8');
  if (error instanceof StoreBusyError) {
    // Another writer (an import being applied) held the database longer than this write waits:
    // say so plainly; the write was rolled back whole.
    request.log.warn({ err: error }, 'dashboard write waited too long for the database');
    reply.header('retry-after', '5');
    return reply.code(503).send(errorPage(503, 'The database is busy', 'Another change (an import of listings, probably) is being saved right now. Nothing was changed; try again in a few seconds.'));
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const message = status === 413 ? 'That form was too large.' : status === 415 ? 'Send the form from the dashboard page.' : 'That request could not be read.';
    return reply.code(status).send(errorPage(status, 'Request not accepted', `${message} Nothing was changed.`));
  }
  request.log.error({ err: error }, 'dashboard request failed');
  return reply.code(500).send(errorPage(500, 'Something went wrong', `Nothing may have been saved; please try again. If it keeps happening, give your operator this request id: ${request.id}.`));
}

/** A file of static/ by name (the stylesheet, the copy buttons' script). */
const STATIC_FILE = { params: Type.Object({ file: Type.String() }) };

export async function createDashboard(options: DashboardOptions) {
  const { store, config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger.child({ component: 'dashboard' });
  const STATIC = readStatic();

  const trust = compileProxyTrust(config.trustProxy);
  const app = Fastify({
    loggerInstance: logger,
    logController: new DashboardLog(),
    // The API app's rule (core/proxy-trust.ts): request.ip is what the sign-in throttle counts.
    trustProxy: trust,
    bodyLimit: 16 * 1024,
    genReqId: nextRequestId,
    return503OnClosing: false,
    schemaController: { compilersFactory: { buildValidator: SHARED_VALIDATORS } },
  });
  // On a port of its own it is drained at shutdown like the API's (src/http/drain.ts).
  trackConnections(app.server);
  // Forms only: no JSON or other body parsers.
  app.removeAllContentTypeParsers();
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody, { bodyLimit: 16 * 1024 });

  app.addHook('onRequest', async (request, reply) => {
    // On a port of its own, nothing did this before (on the API's port, http/front.ts did): before request.ip is read.
    if (trust !== false) normaliseForwardedFor(request.raw);
    reply.headers(SECURITY_HEADERS);
    reply.header('x-request-id', request.id);
    if (request.protocol === 'https') reply.header('strict-transport-security', 'max-age=31536000');
  });

  const metrics = options.metrics;
  if (metrics !== undefined) {
    // Every answer, errors and 404s included (Fastify runs onResponse for them too).
    app.addHook('onResponse', async (request, reply) => {
      metrics.requestCompleted(request.method, request.routeOptions.url ?? null, reply.statusCode);
    });
  }

  app.setErrorHandler(sendErrorPage);
  app.addHook('onRoute', requireDeclaredSchema);

  app.get<Typed<typeof STATIC_FILE>>('/static/:file', { schema: STATIC_FILE }, async (request, reply) => {
    const name = request.params.file;
    const file = Object.hasOwn(STATIC, name) ? STATIC[name] : undefined;
    if (file === undefined) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
    return reply.header('cache-control', 'public, max-age=300').type(file.type).send(file.body);
  });
  app.get('/healthz', async (_request, reply) => reply.type('application/json; charset=utf-8').send({ status: 'ok' }));

  await app.register(dashboardRoutes, {
    store,
    config,
    clock,
    sessions: createSessions(store, clock),
    throttle: createSignInThrottle(store, clock, options.sleep ?? systemSleep),
    onSignIn: metrics === undefined ? undefined : (result) => metrics.signIn(result),
    apiBaseUrl: (country: Country) => apiBaseUrl(country, config, options.apiPort?.()),
    lastUsedOf: options.lastUsedOf,
    webhookResolve: options.webhookResolve,
  });
  await app.ready();

  let port: number | undefined;
  return {
    app,
    /** The handler of its requests, for the API's listener when it shares the API's port. */
    handler: () => app.routing,
    /** On a port of its own (DASHBOARD_PORT): starts listening on HOST:DASHBOARD_PORT; resolves to the dashboard's URL. */
    async listen(): Promise<string> {
      if (typeof config.dashboardPort !== 'number') throw new Error('the dashboard shares the API\'s port; it does not listen on its own');
      await app.listen({ port: config.dashboardPort, host: config.host });
      const address = app.server.address();
      port = typeof address === 'object' && address !== null ? address.port : undefined;
      return this.url();
    },
    /** The port it listens on (after listen), or the API's when it shares it. */
    port(): number | undefined {
      return port ?? (config.dashboardPort === 'shared' ? options.apiPort?.() : undefined);
    },
    /** The URL people open, e.g. http://dashboard.localhost:3000 or, on a port of its own, http://localhost:3001. */
    url(): string {
      return dashboardUrl(config, { api: options.apiPort?.(), dashboard: port }) ?? '';
    },
    /** Graceful: in-flight requests finish. */
    async close(): Promise<void> {
      await app.close();
    },
  };
}

export type Dashboard = Awaited<ReturnType<typeof createDashboard>>;
