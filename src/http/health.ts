import type { FastifyInstance } from 'fastify';

/** Thrown by a readiness check that fails for a reason of its own (e.g. shutting down), said in /readyz's answer. */
export class NotReady extends Error {}

/**
 * Outside /v1 and on any host, for load balancers and orchestrators: /healthz says the process is
 * up (liveness), /readyz that it can serve (readiness: the database answers).
 */
export async function healthRoutes(app: FastifyInstance, opts: { checkReady(): Promise<void> }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await opts.checkReady();
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ reqId: request.id, err: error }, 'not ready');
      const reason = error instanceof NotReady ? error.message : 'the database is unreachable';
      return reply.code(503).send({ error: 'internal_error', message: `Not ready: ${reason}.` });
    }
  });
}
