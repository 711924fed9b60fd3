import type { FastifyRequest } from 'fastify';
import { canonicalUuid } from '../../core/formats.js';
import type { ApiKeyRecord } from '../../storage/index.js';

/** A key of the member's account named by a query parameter: undefined when absent, null when it is not theirs (404). */
export async function keyFromQuery(request: FastifyRequest, keys: ApiKeyRecord[]): Promise<ApiKeyRecord | undefined | null> {
  const raw = (request.query as { key?: unknown }).key;
  if (raw === undefined || raw === '') return undefined;
  const id = canonicalUuid(raw);
  return keys.find((k) => k.id === id) ?? null;
}

