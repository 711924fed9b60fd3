/**
 * What follows the `created_at` value in a listing's stored JSON (listings/body.ts): the import's
 * swap appends it in SQL. Apart from body.ts so that storage does not load the serialiser (and
 * with it Fastify's schema tools) into CLI commands that never write a listing.
 */
export const BODY_TAIL = '"}';
