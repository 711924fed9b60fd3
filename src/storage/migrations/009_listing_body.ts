import { sql, type Kysely } from '#kysely';

/**
 * `listings.body`: each listing's JSON as the API shows it, written with the listing (see
 * listings/body.ts), so that a read sends it instead of reading every column and encoding them
 * again. Existing listings get theirs here, in chunks in id order, each chunk one UPDATE. A later
 * change to the listing object's JSON is a migration that computes them again.
 *
 * Frozen: the listing object as it was when this migration was written, not the live
 * declaration (listings/fields.ts). A field added later must not appear here (the rows it reads
 * have no such column yet; the live writer wrote `"field":undefined` for them).
 */
const CHUNK = 500;

/** How a stored value is written as JSON. */
export type FrozenForm = 'value' | 'json' | 'flag' | 'active';

/** The fields in the object's order, each with how its stored value is written as JSON. */
export const FIELDS_009: ReadonlyArray<readonly [string, FrozenForm]> = [
  ['id', 'value'], ['building_id', 'value'], ['org_id', 'value'], ['title', 'value'], ['size_sqft', 'value'],
  ['usage_types', 'json'], ['price', 'value'], ['currency', 'value'], ['is_takeover', 'flag'], ['is_featured', 'flag'],
  ['status', 'active'], ['expiry_date', 'value'], ['available_from', 'value'], ['min_lease_tenure', 'value'],
  ['view_count', 'value'], ['inquiry_count', 'value'], ['building_name', 'value'], ['street_address', 'value'],
  ['images', 'json'], ['cover_image_index', 'value'], ['url', 'value'], ['created_at', 'value'],
];

/** A row's JSON: arrays are stored as their JSON text, flags as 0/1, the status shown is always "active". */
export function listingBody009(row: Readonly<Record<string, unknown>>): string {
  return frozenBody(FIELDS_009, row);
}

/** A row's JSON with these fields, in this order (later migrations that change the object give theirs). */
export function frozenBody(fields: ReadonlyArray<readonly [string, FrozenForm]>, row: Readonly<Record<string, unknown>>): string {
  const parts = fields.map(([name, form]) => {
    const stored = row[name];
    const json = stored === null || stored === undefined ? 'null'
      : form === 'json' ? String(stored)
      : form === 'flag' ? String(Number(stored) === 1)
      : form === 'active' ? '"active"'
      : JSON.stringify(stored);
    return `${JSON.stringify(name)}:${json}`;
  });
  return `{${parts.join(',')}}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').addColumn('body', 'text', (c) => c.notNull().defaultTo('')).execute();
  await writeBodies(db, listingBody009);
}

/** Computes every listing's `body` again with `bodyOf`, in chunks in id order, each chunk one UPDATE. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function writeBodies(db: Kysely<any>, bodyOf: (row: Readonly<Record<string, unknown>>) => string): Promise<void> {
  let after = '';
  for (;;) {
    const rows = (await db.selectFrom('listings').selectAll().where('id', '>', after).orderBy('id').limit(CHUNK).execute()) as Array<Record<string, unknown> & { id: string }>;
    if (rows.length === 0) break;
    const bodies = sql.join(rows.map((r) => sql`when ${r.id} then ${bodyOf(r)}`), sql` `);
    await sql`update listings set body = case id ${bodies} end where id in (${sql.join(rows.map((r) => r.id))})`.execute(db);
    after = rows.at(-1)!.id;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').dropColumn('body').execute();
}
