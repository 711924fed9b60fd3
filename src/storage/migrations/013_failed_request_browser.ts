import type { Kysely } from '#kysely';

/**
 * A failed request keeps whether a browser sent it (issue 33 item 7): `sec_fetch`, the request's
 * Fetch Metadata headers as `site mode dest` (`cross-site cors empty`), which every current browser
 * adds to its requests and a script or curl does not (unless it forges them too); an empty text
 * when it sent none of them, null for a row written before this column. "Allow this origin" says
 * by it whether a page on the origin called the API or something set `Origin` itself.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_failed_requests').addColumn('sec_fetch', 'varchar(64)').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_failed_requests').dropColumn('sec_fetch').execute();
}
