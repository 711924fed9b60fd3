import type { FeedRepository } from './feed.js';
import type { createKeysRepository } from './keys.js';
import type { createListingsRepository } from './listings.js';
import type { createOriginsRepository } from './origins.js';

/** An account id that no account has (version 4, all zeroes): the statements below read no row. */
const NOBODY = '00000000-0000-4000-8000-000000000000';

/**
 * Readiness (issue 40 item 10): the API's read path runs these repository queries, so the check
 * runs them too, each for an account that does not exist. A table or a column the code reads that
 * was renamed or dropped fails them as it fails every request (both engines check every name when
 * they prepare a statement, rows or none), where `select 1 from <table>` passed. Each is a seek in
 * an index that finds nothing: a few page reads in all.
 */
export async function runReadPathStatements(repositories: {
  keys: ReturnType<typeof createKeysRepository>;
  origins: ReturnType<typeof createOriginsRepository>;
  listings: ReturnType<typeof createListingsRepository>;
  feed: FeedRepository;
}): Promise<void> {
  const { keys, origins, listings, feed } = repositories;
  const now = new Date().toISOString();
  await keys.findByHash('0'.repeat(64));
  await origins.isAllowed(NOBODY, 'sg', 'https://readiness.invalid');
  await listings.orderedChunk(NOBODY, 'sg', now, undefined, 1);
  await listings.changedSince(NOBODY, 'sg', 0, 1);
  await listings.indexRows([NOBODY]);
  await listings.rows([NOBODY]);
  await feed.cursorSecret();
  await feed.prunedSeq(NOBODY, 'sg');
  await feed.lastChanges(NOBODY, 'sg', 0, 1);
  await feed.expiries(NOBODY, 'sg', { expiry: now, id: NOBODY }, now, 1);
  await feed.snapshot(NOBODY, 'sg', now, undefined, 1);
}
