import type { Kysely } from '#kysely';
import { FIELDS_009, frozenBody, writeBodies, type FrozenForm } from './009_listing_body.js';

/**
 * D25: `listings.price_basis` (what `price` is per), null for every listing there is, and each
 * listing's stored JSON (`body`, migration 009) written again with the new field after `price`.
 *
 * Frozen like 009: the listing object as this migration leaves it, not the live declaration.
 */
export const FIELDS_012: ReadonlyArray<readonly [string, FrozenForm]> = FIELDS_009.flatMap((field) =>
  field[0] === 'price' ? [field, ['price_basis', 'value'] as const] : [field]);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').addColumn('price_basis', 'varchar(32)').execute();
  await writeBodies(db, (row) => frozenBody(FIELDS_012, row));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').dropColumn('price_basis').execute();
  await writeBodies(db, (row) => frozenBody(FIELDS_009, row));
}
