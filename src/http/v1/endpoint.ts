import type { Static, TObject } from '#typebox';
import type { ListingReads, Body, Tenant } from '../../readmodel/index.js';

/** An example of a request or an answer, as OpenAPI names them. */
export type Examples = Record<string, { summary: string; value: unknown }>;

/**
 * One /v1 endpoint, declared once: its URL, parameters and answers, and how it reads. routes.ts
 * registers it (the querystring schema is the route's validator, D7), its URL is in the 405 table
 * (D5), and openapi.ts publishes it: nothing about an endpoint is written anywhere else.
 */
export interface Endpoint<Q extends TObject = TObject, P extends TObject = TObject> {
  /** Fastify style (`:id`). */
  url: string;
  operationId: string;
  summary: string;
  /** Paragraphs of the operation's description: the rules in words, never decision numbers. */
  description: string[];
  /** Its query parameters, in the order they are checked and documented (query.ts's shapes). */
  querystring?: Q;
  /** Its path parameters: documented; the read decides what an unmatched value means (D11). */
  params?: P;
  ok: {
    description: string;
    /** The `$id` of the answer's schema (listing.ts). */
    schema: string;
    examples: Examples;
    /** How an answer's values feed the next call (OpenAPI link objects). */
    links?: Record<string, Record<string, unknown>>;
  };
  /** What makes a request malformed, besides a bad Host header. */
  badRequest?: { description: string; examples: Examples };
  /** When the read finds nothing (a 404), besides a host that serves no country. */
  notFound?: { description: string; message: string; examples: Examples };
  /** The answer of a request that passed the guard and the validator: a body, nothing (404), or an ApiError thrown. */
  read(reads: ListingReads, tenant: Tenant, query: Static<Q>, params: Static<P>): Body | undefined | Promise<Body | undefined>;
}

/** Declares an endpoint, so that `read` gets the types of its own schemas. */
export function defineEndpoint<Q extends TObject, P extends TObject>(endpoint: Endpoint<Q, P>): Endpoint {
  return endpoint as unknown as Endpoint;
}
