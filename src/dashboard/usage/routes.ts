import type { FastifyInstance } from 'fastify';
import type { BucketCount } from '../../storage/index.js';
import { isOutcome } from '../../usage/index.js';
import { keyFromQuery, type DashboardContext } from '../context.js';
import { accountParams, query, text, type Typed } from '../schemas.js';
import * as usageViews from './views.js';

const PAGE = { params: accountParams(), querystring: query({ range: text(), key: text() }) };

const FIVE_MINUTES_MS = 300_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Each period's bars and where they are read from: the last 24 hours from the five-minute buckets
 * (kept 48 hours), 7 days and 30 days from the hourly ones (kept 90 days), 30 days summed per UTC
 * day by the query itself.
 */
const PERIODS = {
  '24h': { span: 300, barMs: FIVE_MINUTES_MS, bars: 288, byDay: false },
  '7d': { span: 3600, barMs: HOUR_MS, bars: 168, byDay: false },
  '30d': { span: 3600, barMs: DAY_MS, bars: 30, byDay: true },
} as const;

/**
 * Settings > Developer > Usage: the account's requests by outcome over 24 hours, 7 days or 30 days
 * (`?range=`), every key together, then per key, then one key's chart with its limit (`?key=`, else
 * the busiest active key). Every read is a GROUP BY over stored buckets: its cost grows with keys
 * and bars, never with requests.
 */
export async function usageRoutes(scope: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { store, config, clock, send, notFound, memberOf, flushSeconds, limitOf } = ctx;

  scope.get<Typed<typeof PAGE>>('/usage', { schema: PAGE }, async (request, reply) => {
    const member = memberOf(request);
    const accountId = member.ctx.accountId;
    const rangeId = request.query.range === '' ? '24h' : request.query.range;
    if (!Object.hasOwn(PERIODS, rangeId)) return notFound(reply, member.ctx);
    const range = usageViews.RANGES[rangeId as keyof typeof PERIODS];
    const period = PERIODS[range.id];
    const keys = await store.keys.listForAccount(accountId);
    const chosen = keyFromQuery(request.query.key, keys);
    if (chosen === null) return notFound(reply, member.ctx);

    const now = clock();
    const starts = Array.from({ length: period.bars }, (_, i) => now - (now % period.barMs) - (period.bars - 1 - i) * period.barMs);
    const since = iso(starts[0]!);
    const [accountRows, totals] = await Promise.all([
      store.usage.series(accountId, { span: period.span, since, byDay: period.byDay }),
      store.usage.totalsOfAccount(accountId, period.span, since),
    ]);
    const series = (rows: BucketCount[]): usageViews.Series => {
      const counts = starts.map((): usageViews.Counts => ({}));
      for (const r of rows) {
        const i = Math.floor((Date.parse(r.bucket_start) - starts[0]!) / period.barMs);
        if (i >= 0 && i < starts.length && isOutcome(r.outcome)) counts[i]![r.outcome] = (counts[i]![r.outcome] ?? 0) + r.n;
      }
      return { starts: starts.map(iso), counts };
    };
    const active = (k: { key: { revoked_at: string | null } }) => (k.key.revoked_at === null ? 0 : 1);
    const keyUsage: usageViews.KeyUsage[] = keys
      .map((key) => {
        const counts: usageViews.Counts = {};
        for (const r of totals) if (r.key_id === key.id && isOutcome(r.outcome)) counts[r.outcome] = (counts[r.outcome] ?? 0) + r.n;
        return { key, counts, limitPerMinute: limitOf(key) };
      })
      .sort((a, b) => usageViews.total(b.counts) - usageViews.total(a.counts) || active(a) - active(b) || b.key.created_at.localeCompare(a.key.created_at));
    // The key asked for; else the busiest active key of the period; else (no active key was used)
    // the busiest key, a revoked one still being called, say; else none.
    const used = keyUsage.filter((k) => usageViews.total(k.counts) > 0);
    const selectedUsage = chosen !== undefined ? keyUsage.find((k) => k.key.id === chosen.id) : (used.find((k) => active(k) === 0) ?? used[0]);
    const selected = selectedUsage === undefined ? undefined : {
      usage: selectedUsage,
      series: series(await store.usage.series(accountId, { keyId: selectedUsage.key.id, span: period.span, since, byDay: period.byDay })),
    };
    // Only for an empty period: whether there is anything in a longer one.
    const anyIn30Days = used.length > 0 || (range.id !== '30d' && (await store.usage.totalsOfAccount(accountId, 3600, iso(now - (now % DAY_MS) - 29 * DAY_MS))).length > 0);
    return send(reply, 200, usageViews.usagePage(member.ctx, {
      range, keys: keyUsage, account: series(accountRows), selected, chosenKeyId: chosen?.id, anyIn30Days, flushSeconds,
      defaultLimit: config.rateLimitPerMinute,
    }));
  });
}
