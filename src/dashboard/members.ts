import { randomUUID } from 'node:crypto';
import type { DashboardUser, Store } from '../storage/index.js';
import { hashPassword } from './passwords.js';

/**
 * Dashboard members (who may sign in to Settings > Developer), as the CLI and the demo manage
 * them: only the scrypt hash of a password is ever stored, and a new password ends every session
 * the member had.
 */
export async function addMember(
  store: Store,
  input: { accountId: string; email: string; password: string; now: Date; id?: string },
): Promise<DashboardUser> {
  const user: DashboardUser = {
    id: input.id ?? randomUUID(),
    account_id: input.accountId,
    email: input.email,
    password_hash: await hashPassword(input.password),
    created_at: input.now.toISOString(),
    last_sign_in_at: null,
  };
  await store.users.create(user);
  return user;
}

/** Replaces a member's password and signs them out everywhere. */
export async function setMemberPassword(store: Store, userId: string, password: string): Promise<void> {
  await store.users.setPasswordHash(userId, await hashPassword(password));
  await store.sessions.deleteForUser(userId);
}
