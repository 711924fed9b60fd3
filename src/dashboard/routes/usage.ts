import type { FastifyInstance } from 'fastify';
import { isOutcome, type Outcome } from '../../usage/outcomes.js';
import * as usageViews from '../usage-views.js';
import type { DashboardContext } from './context.js';
import { keyFromQuery } from './key-query.js';

const FIVE_MINUTES_MS = 300_000;
const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** Settings > Developer > Usage: requests per key and outcome, the last 24 hours and 30 days. */
export async function usageRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, clock, send, notFound, memberOf, flushSeconds, limitOf } = ctx;

  scope.get('/usage', async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const keys = await store.keys.listForAccount(accountId);
    const chosen = await keyFromQuery(request, keys);
    if (chosen === null) return notFound(reply, member.ctx);
    const now = clock();
    // The last 24 hours: 288 five-minute buckets, the current one last; the last 30 days: 30 UTC days, today last.
    const fiveMinuteStarts = Array.from({ length: 288 }, (_, i) => now - (now % FIVE_MINUTES_MS) - (287 - i) * FIVE_MINUTES_MS);
    const dayStarts = Array.from({ length: 30 }, (_, i) => now - (now % DAY_MS) - (29 - i) * DAY_MS);
    const since24h = iso(fiveMinuteStarts[0]!);
    const since30d = iso(dayStarts[0]!);
    const [totals24h, totals30d] = await Promise.all([
      store.usage.totalsOfAccount(accountId, 300, since24h),
      store.usage.totalsOfAccount(accountId, 3600, since30d),
    ]);
    const countsOf = (rows: Array<{ key_id: string; outcome: string; n: number }>, keyId: string) => {
      const counts: usageViews.Counts = {};
      for (const r of rows) if (r.key_id === keyId && isOutcome(r.outcome)) counts[r.outcome] = (counts[r.outcome] ?? 0) + r.n;
      return counts;
    };
    const sum = (c: usageViews.Counts) => Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
    const keyUsage = keys
      .map((key) => ({ key, last24h: countsOf(totals24h, key.id), last30d: countsOf(totals30d, key.id) }))
      .sort((a, b) =>
        sum(b.last30d) - sum(a.last30d)
        || (a.key.revoked_at === null ? 0 : 1) - (b.key.revoked_at === null ? 0 : 1)
        || b.key.created_at.localeCompare(a.key.created_at));
    // The key asked for, else the busiest one of the last 30 days.
    const selectedKey = chosen ?? (keyUsage[0] !== undefined && sum(keyUsage[0].last30d) + sum(keyUsage[0].last24h) > 0 ? keyUsage[0].key : undefined);
    let selected: Parameters<typeof usageViews.usagePage>[1]['selected'];
    if (selectedKey !== undefined) {
      const [fine, hourly] = await Promise.all([
        store.usage.bucketsOfKey(selectedKey.id, 300, since24h),
        store.usage.bucketsOfKey(selectedKey.id, 3600, since30d),
      ]);
      const series = (starts: number[], rows: typeof fine, width: number): usageViews.Series => {
        const counts = starts.map((): usageViews.Counts => ({}));
        for (const r of rows) {
          const i = Math.floor((Date.parse(r.bucket_start) - starts[0]!) / width);
          const outcome = r.outcome as Outcome;
          if (i >= 0 && i < starts.length && isOutcome(outcome)) counts[i]![outcome] = (counts[i]![outcome] ?? 0) + Number(r.n);
        }
        return { starts: starts.map(iso), counts };
      };
      selected = {
        key: selectedKey,
        limitPerMinute: limitOf(selectedKey),
        day: series(fiveMinuteStarts, fine, FIVE_MINUTES_MS),
        month: series(dayStarts, hourly, DAY_MS),
      };
    }
    return send(reply, 200, usageViews.usagePage(member.ctx, { keys: keyUsage, selected, flushSeconds }));
  });
}
