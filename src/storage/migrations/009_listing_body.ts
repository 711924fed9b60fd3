import { sql, type Kysely } from '#kysely';
import { listingBodyOf } from '../../listings/body.js';
import type { StoredListingFields } from '../../listings/fields.js';

/**
 * `listings.body`: each listing's JSON as the API shows it, written with the listing (see
 * listings/body.ts), so that a read sends it instead of reading every column and encoding them
 * again. Existing listings get theirs here, in chunks in id order, each chunk one UPDATE. A later
 * change to the listing object's JSON is a migration that computes them again the same way.
 */
const CHUNK = 500;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').addColumn('body', 'text', (c) => c.notNull().defaultTo('')).execute();
  let after = '';
  for (;;) {
    const rows = (await db.selectFrom('listings').selectAll().where('id', '>', after).orderBy('id').limit(CHUNK).execute()) as Array<StoredListingFields & { id: string }>;
    if (rows.length === 0) break;
    const bodies = sql.join(rows.map((r) => sql`when ${r.id} then ${listingBodyOf(r)}`), sql` `);
    await sql`update listings set body = case id ${bodies} end where id in (${sql.join(rows.map((r) => r.id))})`.execute(db);
    after = rows.at(-1)!.id;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').dropColumn('body').execute();
}
