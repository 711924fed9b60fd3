import { sql, type Kysely } from '#kysely';
import { isPostgres } from '../database.js';
import { FIELDS_012 } from './012_price_basis.js';
import { frozenBody, writeBodies, type FrozenForm } from './009_listing_body.js';

/**
 * D26-D28 on `listings`:
 *
 * - `location` (D28): the listing's place as its API JSON, null for every listing there is; each
 *   stored body (migration 009) is written again with the new field after `street_address`.
 * - `search_words` (D26): the listing's distinct words in compared form (listings/search-words.ts),
 *   derived like `body` and written by every import.
 * - `listings_visible_order` carries them, with `currency` and `price_basis` (D27's price ranges),
 *   so that building a tenant's index still reads that index alone (migration 008).
 *
 * Frozen like 012: the body as this migration leaves it, and the words by D26's rule as written
 * here (listings/search-words.ts is the live one; a later change to it recomputes them in a
 * migration of its own).
 */
export const FIELDS_015: ReadonlyArray<readonly [string, FrozenForm]> = FIELDS_012.flatMap((field) =>
  field[0] === 'street_address' ? [field, ['location', 'json'] as const] : [field]);

const KEY = ['owner_account_id', 'country', 'status', 'is_featured desc', 'created_at desc', 'id'];
const CARRIED_008 = ['expiry_date', 'change_seq', 'price', 'size_sqft', 'usage_types', 'is_takeover'];
const CARRIED = [...CARRIED_008, 'currency', 'price_basis', 'location', 'search_words'];
const CHUNK = 500;

/** D26's words of a listing's searched fields, distinct, space-separated (listings/search-words.ts as of this migration). */
export function searchWords015(row: Readonly<Record<string, unknown>>): string {
  const words = new Set<string>();
  const texts = [row.title, row.building_name, row.street_address, ...(JSON.parse(String(row.usage_types)) as string[])];
  for (const text of texts) {
    if (typeof text !== 'string') continue;
    const folded = text.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase().normalize('NFKD').replace(/\p{M}+/gu, '');
    for (const word of folded.split(/[^\p{L}\p{N}]+/u)) if (word !== '') words.add(word);
  }
  return [...words].join(' ');
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').addColumn('location', 'text').execute();
  await db.schema.alterTable('listings').addColumn('search_words', 'text', (c) => c.notNull().defaultTo('')).execute();
  let after = '';
  for (;;) {
    const rows = (await db.selectFrom('listings').selectAll().where('id', '>', after).orderBy('id').limit(CHUNK).execute()) as Array<Record<string, unknown> & { id: string }>;
    if (rows.length === 0) break;
    const ids = sql.join(rows.map((r) => r.id));
    const bodies = sql.join(rows.map((r) => sql`when ${r.id} then ${frozenBody(FIELDS_015, r)}`), sql` `);
    const words = sql.join(rows.map((r) => sql`when ${r.id} then ${searchWords015(r)}`), sql` `);
    await sql`update listings set body = case id ${bodies} end, search_words = case id ${words} end where id in (${ids})`.execute(db);
    after = rows.at(-1)!.id;
  }
  await coveringIndex(db, CARRIED);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await coveringIndex(db, CARRIED_008);
  await db.schema.alterTable('listings').dropColumn('search_words').execute();
  await db.schema.alterTable('listings').dropColumn('location').execute();
  await writeBodies(db, (row) => frozenBody(FIELDS_012, row));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function coveringIndex(db: Kysely<any>, carried: readonly string[]): Promise<void> {
  await db.schema.dropIndex('listings_visible_order').execute();
  if (isPostgres(db)) {
    await sql`create index listings_visible_order on listings (${sql.raw(KEY.map(quoted).join(', '))}) include (${sql.raw(carried.map(quoted).join(', '))})`.execute(db);
  } else {
    await db.schema.createIndex('listings_visible_order').on('listings').columns([...KEY, ...carried]).execute();
  }
}

/** `"name"` or `"name" desc`. */
function quoted(column: string): string {
  const [name, direction] = column.split(' ');
  return `"${name}"${direction === undefined ? '' : ` ${direction}`}`;
}
