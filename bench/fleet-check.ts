import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import type { FleetTenant } from './fleet-data.js';
import { httpGet } from './processes.js';

/**
 * The fleet benchmark's correctness check: requests made through nginx, each answer compared with
 * what PostgreSQL says, read here with `pg` and SQL of the bench's own (not the service's code):
 * D1 (the key's tenant: owner and country), D10 (visible: `active`, no expiry or one after now)
 * and D9 (featured first, then newest, then id ascending, compared as bytes: COLLATE "C").
 * Every field of every listing answered is compared with its row; a mismatch is reported with
 * its request.
 */

export interface CheckRequest {
  tenant: FleetTenant;
  path: string;
  kind: 'first' | 'deep' | 'detail';
}

export interface CheckResult {
  requests: number;
  byKind: Record<string, number>;
  listingsCompared: number;
  wrong: number;
  mismatches: string[];
}

const PER_PAGE = 20;
/** Stored as JSON text; the API shows the value. */
const JSON_COLUMNS = new Set(['usage_types', 'images', 'location']);
const FLAG_COLUMNS = new Set(['is_featured', 'is_takeover']);

/** A row's column as the API shows the field (null stays null). */
function shown(name: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (JSON_COLUMNS.has(name)) return typeof value === 'string' ? JSON.parse(value) : value;
  if (FLAG_COLUMNS.has(name)) return Number(value) === 1;
  return value;
}

/** The differences between an answered listing and its row: every field the API returns that the row has a column for. */
function listingDiff(answer: Record<string, unknown>, row: Record<string, unknown>): string[] {
  const diffs: string[] = [];
  for (const [name, value] of Object.entries(answer)) {
    if (!(name in row)) {
      diffs.push(`field ${name}: no such column`);
      continue;
    }
    const expected = name === 'status' ? (row.status === 'active' ? 'active' : `row status ${String(row.status)}`) : shown(name, row[name]);
    if (!isDeepStrictEqual(value, expected)) diffs.push(`${name}: answered ${JSON.stringify(value)}, database ${JSON.stringify(expected)}`);
  }
  return diffs;
}

const VISIBLE = `owner_account_id = $1 AND country = 'sg' AND status = 'active' AND (expiry_date IS NULL OR expiry_date > $2)`;

/** The page the database says: its rows in D9 order, and the tenant's visible total. */
async function expectedPage(db: pg.Client, tenant: FleetTenant, page: number, now: string) {
  const rows = await db.query(
    `SELECT * FROM listings WHERE ${VISIBLE} ORDER BY is_featured DESC, created_at COLLATE "C" DESC, id COLLATE "C" ASC LIMIT ${PER_PAGE} OFFSET $3`,
    [tenant.accountId, now, (page - 1) * PER_PAGE],
  );
  const count = await db.query(`SELECT count(*)::int AS n FROM listings WHERE ${VISIBLE}`, [tenant.accountId, now]);
  return { rows: rows.rows as Array<Record<string, unknown>>, total: (count.rows[0] as { n: number }).n };
}

/** The problems of one answer against the database (none: correct). */
async function checkOne(db: pg.Client, port: number, request: CheckRequest): Promise<{ problems: string[]; listings: number }> {
  const res = await httpGet(port, request.path, { host: 'api.localhost', authorization: `Bearer ${request.tenant.key}` });
  const now = new Date().toISOString();
  if (request.kind === 'detail') {
    const id = request.path.slice(request.path.lastIndexOf('/') + 1);
    const row = (await db.query(`SELECT * FROM listings WHERE ${VISIBLE} AND id = $3`, [request.tenant.accountId, now, id])).rows[0] as Record<string, unknown> | undefined;
    if (row === undefined) return { problems: res.status === 404 ? [] : [`status ${res.status}, the database has no visible listing ${id} of the tenant (expected 404)`], listings: 0 };
    if (res.status !== 200) return { problems: [`status ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`], listings: 0 };
    return { problems: listingDiff(JSON.parse(res.body.toString('utf8')) as Record<string, unknown>, row), listings: 1 };
  }
  const page = Number(new URL(request.path, 'http://x').searchParams.get('page') ?? '1');
  const expected = await expectedPage(db, request.tenant, page, now);
  if (res.status !== 200) return { problems: [`status ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`], listings: 0 };
  const body = JSON.parse(res.body.toString('utf8')) as { items: Array<Record<string, unknown>>; page: number; per_page: number; total: number; pages: number };
  const problems: string[] = [];
  if (body.total !== expected.total) problems.push(`total: answered ${body.total}, database ${expected.total}`);
  if (body.pages !== Math.ceil(expected.total / PER_PAGE)) problems.push(`pages: answered ${body.pages}, database ${Math.ceil(expected.total / PER_PAGE)}`);
  if (body.page !== page || body.per_page !== PER_PAGE) problems.push(`page ${body.page} per_page ${body.per_page}: expected ${page} and ${PER_PAGE}`);
  const answeredIds = body.items.map((item) => item.id);
  const expectedIds = expected.rows.map((row) => row.id);
  if (!isDeepStrictEqual(answeredIds, expectedIds)) problems.push(`ids in D9 order: answered ${JSON.stringify(answeredIds)}, database ${JSON.stringify(expectedIds)}`);
  else body.items.forEach((item, i) => problems.push(...listingDiff(item, expected.rows[i]!).map((d) => `item ${i} (${String(item.id)}): ${d}`)));
  return { problems, listings: body.items.length };
}

/** Sends the requests through nginx (`concurrency` at a time) and compares each answer with the database. */
export async function checkAnswers(databaseUrl: string, port: number, requests: readonly CheckRequest[], concurrency = 4): Promise<CheckResult> {
  const clients = await Promise.all(Array.from({ length: concurrency }, async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return client;
  }));
  const result: CheckResult = { requests: requests.length, byKind: {}, listingsCompared: 0, wrong: 0, mismatches: [] };
  let next = 0;
  try {
    await Promise.all(clients.map(async (db) => {
      for (let i = next++; i < requests.length; i = next++) {
        const request = requests[i]!;
        result.byKind[request.kind] = (result.byKind[request.kind] ?? 0) + 1;
        const { problems, listings } = await checkOne(db, port, request).catch((error: unknown) => ({ problems: [`failed: ${String(error)}`], listings: 0 }));
        result.listingsCompared += listings;
        if (problems.length === 0) continue;
        result.wrong++;
        result.mismatches.push(`GET ${request.path} (tenant ${request.tenant.index}, ${request.kind}): ${problems.slice(0, 5).join('; ')}`);
      }
    }));
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
  return result;
}
