import type { Country } from '../core/countries.js';
import type { Clock } from '../core/clock.js';
import type { AuthenticatedKey } from './authenticate.js';

/**
 * The key each connection presented last, so that the next request on it that sends the same
 * Authorization header skips the key check's work: the format and checksum check, the SHA-256
 * and the cache look-up (about a twentieth of a cached answer's CPU under wrk). A client on a
 * keep-alive connection (a server's HTTP agent, the SDK, a proxy's pool of upstream
 * connections) sends the same header on every request of it.
 *
 * It is exactly as strict as the check it skips:
 * - only while the auth version has not moved since (D4: a revocation, a limit change or any
 *   other change of a key is refused or applied on the next request, on every connection);
 * - only while the key record it came from is fresh (`AuthenticatedKey.validUntil`: the keys
 *   cache's fresh time, readmodel/caches.ts, from when it was read from the database, so that a
 *   look-up once it is stale reads it again in the background while the cached record answers),
 *   so never with the caches off;
 * - only on the host of the key's own country (D3); any other answer (a 401) comes from the
 *   full check;
 * - the header is compared in constant time for its length: a connection a proxy shares between
 *   clients must not tell one client how much of its header matches another's.
 *
 * What is held is what the connection's last request held, dropped with the connection (a
 * WeakMap on its socket), or as soon as it can no longer be recalled; it is never logged or
 * answered.
 */
export interface ConnectionKeysOptions {
  clock: Clock;
  /** Where the auth version is read (storage/changes.ts): it moves with every change of a key or an origin. */
  versions: { authVersion(): number };
}

/** `LISTINGS_CONNECTION_KEYS=off` (read once): every request checks its key in full; the switch of the design record's A/B (bench/ab.ts). */
const ON = process.env.LISTINGS_CONNECTION_KEYS !== 'off';

interface Remembered {
  header: string;
  key: AuthenticatedKey;
  authVersion: number;
}

export class ConnectionKeys {
  private readonly last = new WeakMap<object, Remembered>();

  constructor(private readonly options: ConnectionKeysOptions) {}

  /** The key `header` was found to be on this connection, if that still holds for this host; else undefined. */
  recall(connection: object, header: string, hostCountry: Country): AuthenticatedKey | undefined {
    if (!ON) return undefined;
    const remembered = this.last.get(connection);
    if (remembered === undefined) return undefined;
    const { key } = remembered;
    if (remembered.authVersion !== this.options.versions.authVersion() || this.options.clock() >= key.validUntil) {
      // Out of date for good: the secret is not kept a moment longer.
      this.last.delete(connection);
      return undefined;
    }
    return key.country === hostCountry && sameText(remembered.header, header) ? key : undefined;
  }

  /**
   * Remembers what a key check found, in the same synchronous step as the look-up it made (the
   * auth version read now is the one it was found under; a look-up that waited for the database
   * is not remembered: the next request finds the key in the cache, and is).
   */
  remember(connection: object, header: string, key: AuthenticatedKey): void {
    if (!ON || this.options.clock() >= key.validUntil) return;
    this.last.set(connection, { header, key, authVersion: this.options.versions.authVersion() });
  }
}

/** Equal strings, in time that depends on their length only (no early exit at the first difference). */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
