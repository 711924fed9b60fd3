import { sql, type Kysely } from '#kysely';
import { isPostgres } from '../database.js';

/**
 * `listings_visible_order` also carries what the per-tenant index keeps of a listing
 * (readmodel/tenant-index.ts: its change, price, size, usage types, takeover flag), so building
 * a tenant's index reads that index alone, in order, and never the table at random: at 100,000
 * listings a chunk of 500 takes about half the time it did. Same name, same leading columns:
 * every query it served, it still serves. PostgreSQL carries the extra columns as INCLUDE
 * (stored, not sorted on); SQLite, which has no INCLUDE, as trailing key columns.
 */
const KEY = ['owner_account_id', 'country', 'status', 'is_featured desc', 'created_at desc', 'id'];
const CARRIED = ['expiry_date', 'change_seq', 'price', 'size_sqft', 'usage_types', 'is_takeover'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('listings_visible_order').execute();
  if (isPostgres(db)) {
    await sql`create index listings_visible_order on listings (${sql.raw(KEY.map(quoted).join(', '))}) include (${sql.raw(CARRIED.map(quoted).join(', '))})`.execute(db);
  } else {
    await db.schema.createIndex('listings_visible_order').on('listings').columns([...KEY, ...CARRIED]).execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('listings_visible_order').execute();
  await db.schema.createIndex('listings_visible_order').on('listings').columns([...KEY, 'expiry_date']).execute();
}

/** `"name"` or `"name" desc`. */
function quoted(column: string): string {
  const [name, direction] = column.split(' ');
  return `"${name}"${direction === undefined ? '' : ` ${direction}`}`;
}
