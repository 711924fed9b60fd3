import type { RateLimit } from './errors.js';

/**
 * What the proxy handler's look-ups may spend of the key: each visitor's budget (VisitorBudget),
 * the site's share of the key (SiteBudget), and who a visitor is (addressKey).
 */

/** The API's window (D14): a key's limit counts the requests of any rolling minute. */
const WINDOW_MS = 60_000;

/**
 * Look-ups per visitor: a token bucket per key, `perMinute` deep, refilled evenly over the minute,
 * so that a visitor may look up `perMinute` URLs at once and then one every 60 s / `perMinute`. At
 * most MAX_VISITORS keys are kept, the least recently seen dropped first (a dropped visitor starts
 * again with a full budget, as a new one would).
 */
export class VisitorBudget {
  static readonly MAX_VISITORS = 10_000;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #perMs: number;

  constructor(private readonly perMinute: number, private readonly now: () => number) {
    this.#perMs = perMinute / WINDOW_MS;
  }

  /** Spends one look-up of `visitor`: 0 when it could, else the milliseconds until it can. */
  take(visitor: string): number {
    if (this.perMinute === Infinity) return 0;
    const at = this.now();
    const bucket = this.#buckets.get(visitor);
    // A clock that went back refills nothing.
    const tokens = bucket === undefined ? this.perMinute : Math.min(this.perMinute, bucket.tokens + Math.max(0, at - bucket.at) * this.#perMs);
    this.#buckets.delete(visitor);
    if (tokens < 1) {
      this.#buckets.set(visitor, { tokens, at });
      return Math.ceil((1 - tokens) / this.#perMs);
    }
    this.#buckets.set(visitor, { tokens: tokens - 1, at });
    if (this.#buckets.size > VisitorBudget.MAX_VISITORS) this.#buckets.delete(this.#buckets.keys().next().value!);
    return 0;
  }

  /** Gives back the look-up just taken, which was not sent after all (the site's share was spent). */
  refund(visitor: string): void {
    const bucket = this.#buckets.get(visitor);
    if (bucket !== undefined) bucket.tokens = Math.min(this.perMinute, bucket.tokens + 1);
  }
}

/**
 * The site's share of the key, for the look-ups visitors cause (a miss or a revalidation; the
 * server's own reads are not counted here):
 *
 * - at most `share` of them in any rolling minute, the API's own window, so that the proxy alone
 *   never takes more of the key than that;
 * - the last third of the share is kept for visitors new to the site: once two thirds are used,
 *   only a visitor with fewer than NEWCOMER_LOOKUPS look-ups in the last minute may take one, so
 *   that a few busy visitors cannot take all of it;
 * - none while the API's last answer said the key is down to its reserve (`Limit` minus the share:
 *   what other instances of the site, or anything else with the key, spent counts too), until the
 *   key's `X-RateLimit-Reset`.
 *
 * The share is `configured`, or three quarters of the key's limit as the API last reported it
 * (X-RateLimit-Limit; 60, the API's default, before the first answer).
 */
export class SiteBudget {
  /** Of the key's limit, the default share. */
  static readonly DEFAULT_SHARE = 3 / 4;
  /** Of the share, the part kept for newcomers. */
  static readonly KEPT_FOR_NEWCOMERS = 1 / 3;
  /** A visitor with fewer look-ups than this in the last minute counts as new. */
  static readonly NEWCOMER_LOOKUPS = 5;
  /** The key's limit before the API has said otherwise (the spec's default). */
  static readonly ASSUMED_LIMIT = 60;

  /** The look-ups of the last minute, oldest first. */
  readonly #log: Array<{ at: number; visitor: string }> = [];

  constructor(
    private readonly configured: number | undefined,
    private readonly report: () => RateLimit | undefined,
    private readonly now: () => number,
  ) {}

  /** The share in force: the configured one, or three quarters of the key's limit. */
  share(): number {
    if (this.configured !== undefined) return this.configured;
    return Math.max(1, Math.floor((this.report()?.limit ?? SiteBudget.ASSUMED_LIMIT) * SiteBudget.DEFAULT_SHARE));
  }

  /** Spends one look-up for `visitor`: 0 when it may be sent, else the milliseconds until one may. */
  take(visitor: string): number {
    const share = this.share();
    if (share === Infinity) return 0;
    const at = this.now();
    const log = this.#log;
    // A clock that went back keeps the entries: nothing is freed early.
    while (log.length > 0 && at - log[0]!.at >= WINDOW_MS) log.shift();
    const key = this.report();
    if (key !== undefined && key.remaining <= Math.max(0, key.limit - share) && at < key.reset * 1000) return key.reset * 1000 - at;
    // When the entry at `index` leaves the window, one more look-up fits.
    const freedWhen = (index: number) => Math.max(1, log[index]!.at + WINDOW_MS - at);
    if (log.length >= share) return freedWhen(log.length - share);
    const open = share - Math.floor(share * SiteBudget.KEPT_FOR_NEWCOMERS);
    if (log.length >= open && log.filter((entry) => entry.visitor === visitor).length >= SiteBudget.NEWCOMER_LOOKUPS) return freedWhen(log.length - open);
    log.push({ at, visitor });
    return 0;
  }
}

/**
 * The budget key of a client address: an IPv4 address as it is (an IPv4-mapped IPv6 one as its
 * IPv4), an IPv6 address by its network of `prefix` bits (default 56), since one subscriber is
 * commonly given a /56 or a /48, 256 or 65,536 /64s, and would otherwise have a fresh budget at
 * each. Anything else (not an address) as it is.
 */
export function addressKey(address: string, prefix: number): string {
  const mapped = /^::ffff:([0-9]{1,3}(?:\.[0-9]{1,3}){3})$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!address.includes(':')) return address;
  const halves = address.split('%')[0]!.split('::');
  if (halves.length > 2) return address;
  const groupsOf = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  // `::` stands for the zero groups that make eight (an embedded IPv4 address is two).
  const tailGroups = tail.reduce((n, group) => n + (group.includes('.') ? 2 : 1), 0);
  const groups = halves.length === 2 ? [...head, ...Array<string>(Math.max(0, 8 - head.length - tailGroups)).fill('0'), ...tail] : head;
  const kept = Math.ceil(prefix / 16);
  const network = groups.slice(0, kept);
  if (network.length < kept || !network.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return address;
  const masked = network.map((group, i) => {
    const bits = Math.min(16, prefix - i * 16);
    return (parseInt(group, 16) & ((0xffff << (16 - bits)) & 0xffff)).toString(16);
  });
  return `${masked.join(':')}${kept < 8 ? '::' : ''}/${prefix}`;
}
