import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import type { DashboardUser, Store } from '../storage/index.js';

/**
 * Server-side sessions in the database, so that a member stays signed in whichever instance
 * answers. The session id (32 random bytes) lives only in the member's cookie; the table holds its
 * SHA-256, so a copy of the table signs no one in. A session ends after IDLE_MS without a request,
 * or ABSOLUTE_MS after sign-in, whichever is sooner, or at sign-out.
 */
export const IDLE_MS = 2 * 60 * 60 * 1000;
export const ABSOLUTE_MS = 12 * 60 * 60 * 1000;
/** Activity extends the idle expiry at most once a minute, so page views are not all writes. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface SignedIn {
  user: DashboardUser;
  /** The raw session id from the cookie (request-scoped; never stored or logged). */
  sessionId: string;
}

export function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export function createSessions(store: Store, clock: Clock) {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    /** Starts a session for a member; returns the id to put in the cookie. */
    async start(userId: string): Promise<string> {
      const now = clock();
      // Housekeeping on sign-in (rare) rather than on every request.
      await store.sessions.deleteExpired(iso(now));
      const sessionId = randomBytes(32).toString('base64url');
      await store.sessions.create({
        id_hash: hashSessionId(sessionId),
        user_id: userId,
        created_at: iso(now),
        last_seen_at: iso(now),
        expires_at: iso(Math.min(now + IDLE_MS, now + ABSOLUTE_MS)),
      });
      return sessionId;
    },

    /** The member a cookie's session id belongs to, or undefined (unknown, expired, malformed). */
    async resume(sessionId: string | undefined): Promise<SignedIn | undefined> {
      if (sessionId === undefined || !SESSION_ID.test(sessionId)) return undefined;
      const idHash = hashSessionId(sessionId);
      const found = await store.sessions.findWithUser(idHash);
      if (found === undefined) return undefined;
      const now = clock();
      if (Date.parse(found.session.expires_at) <= now) {
        await store.sessions.delete(idHash);
        return undefined;
      }
      if (now - Date.parse(found.session.last_seen_at) >= TOUCH_EVERY_MS) {
        const expires = Math.min(now + IDLE_MS, Date.parse(found.session.created_at) + ABSOLUTE_MS);
        await store.sessions.touch(idHash, iso(now), iso(expires));
      }
      return { user: found.user, sessionId };
    },

    async end(sessionId: string): Promise<void> {
      await store.sessions.delete(hashSessionId(sessionId));
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
