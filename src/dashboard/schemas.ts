import { Type, type Static, type TObject, type TProperties } from '#typebox';
import { CSRF_FIELD } from './csrf.js';

/*
 * The shapes of the dashboard's requests, in TypeBox like the API's endpoints: each route declares
 * its params, query and form body with these, Fastify checks them before the handler runs, and the
 * handler's types come from the same declaration (`Route<...>`). The schema says what a request
 * is made of; what a value means (a country this deployment serves, an origin that can be
 * registered, a label that is not too long) is the handler's to check, because its answer is the
 * form again with what is wrong. A request the schema refuses (a field sent twice, say) is one no
 * page of the dashboard sends: it gets the "Request not accepted" page (index.ts) and changes nothing.
 */

/** A form field or query parameter: one text value; absent (or empty) reads as ''. */
export const text = () => Type.String({ default: '' });

/** A field sent once per value (checkboxes of one name): a list, [] when none is ticked (Fastify's Ajv makes one value a list of one). */
export const texts = () => Type.Array(Type.String(), { default: [] });

/** A form the dashboard posts: its fields, and the CSRF token that the guard checks first (routes.ts). */
export const form = <P extends TProperties>(fields: P) => Type.Object({ ...fields, [CSRF_FIELD]: text() });

/** Query parameters, each optional. */
export const query = <P extends TProperties>(fields: P) => Type.Object(fields);

/** The params of every page of Settings > Developer: the account in the URL (routes.ts). */
export const accountParams = <P extends TProperties>(fields: P = {} as P) => Type.Object({ accountId: Type.String(), ...fields });

/** What a route declares: its schema, as Fastify's `schema` route option. */
export interface RouteSchema {
  params?: TObject;
  querystring?: TObject;
  body?: TObject;
}

/** A route's schema as Fastify's route generics: the types its handler is given, from the declaration. */
export interface Typed<S extends RouteSchema> {
  Params: S['params'] extends TObject ? Static<S['params']> : unknown;
  Querystring: S['querystring'] extends TObject ? Static<S['querystring']> : unknown;
  Body: S['body'] extends TObject ? Static<S['body']> : unknown;
}

/**
 * Refuses, at start-up, a route that does not declare what its requests are made of: a form (POST)
 * without its body schema, a URL with params without their schema. Registered as the dashboard's
 * `onRoute` hook (index.ts), so a route added without one fails every dashboard test at once.
 */
export function requireDeclaredSchema(route: { method: string | string[]; url: string; schema?: RouteSchema }): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (methods.includes('POST') && route.schema?.body === undefined) throw new Error(`dashboard: POST ${route.url} declares no body schema (schemas.ts)`);
  if (route.url.includes(':') && route.schema?.params === undefined) throw new Error(`dashboard: ${route.url} declares no params schema (schemas.ts)`);
}
