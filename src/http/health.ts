import type { FastifyInstance } from 'fastify';
import { errorBody } from '../core/api-error.js';
import type { Readiness } from './readiness.js';

/**
 * Outside /v1 and on any host, for load balancers and orchestrators: /healthz says the process is
 * up (liveness), /readyz that it should be sent requests (readiness, readiness.ts): 503 while it
 * shuts down, while the database cannot serve the API's reads, and while it warms up. The answer
 * says which in general terms only (it is public): the details are in the log, once per outage.
 */
export async function healthRoutes(app: FastifyInstance, opts: { readiness: Readiness }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    const state = await opts.readiness.state();
    if (state.ready) return { status: 'ready' };
    request.errorCode = 'internal_error';
    return reply.code(503).type('application/json; charset=utf-8').send(errorBody('internal_error', `Not ready: ${state.message}.`));
  });
}
