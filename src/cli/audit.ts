import { auditedKey } from '../auth/keys.js';
import { CLI_ACTOR } from '../storage/audit.js';
import type { ApiKeyRecord, AuditEntry, Store } from '../storage/index.js';

/**
 * Records a key or origin change made with the command line in the audit log, so that the
 * dashboard's Activity page lists it beside the changes members made there. The actor is
 * CLI_ACTOR with no member id; a key is named by its display prefix and last four only (D20).
 */
export async function recordCliChange(
  store: Store,
  change: Pick<AuditEntry, 'account_id' | 'at' | 'action'> & Partial<Pick<AuditEntry, 'country' | 'origin' | 'rate_limit_per_minute' | 'webhook_url'>>,
  key?: ApiKeyRecord,
): Promise<void> {
  await store.audit.record({
    actor_user_id: null,
    actor_email: CLI_ACTOR,
    ...auditedKey(key),
    ...change,
  });
}
