import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { listingLine } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { fails, okJson, okText, rows, tempDatabase, type CliDatabase } from './helpers.js';
import { until } from '../support/until.js';

/**
 * `webhook replay | filter | attempts` (issue 43 item 3): the operator's side, against a real
 * `serve` process delivering on its own timer: --json, paging, one-line refusals, audit.
 */
describe('webhook replay, filter and attempts commands (issue 43)', () => {
  let db: CliDatabase;
  let receiver: Receiver;
  let server: ServerProcess;
  let account: string;
  let webhookId: string;
  const ids = ['a1000000-0000-4000-8000-000000000001', 'a1000000-0000-4000-8000-000000000002', 'a1000000-0000-4000-8000-000000000003'];

  before(async () => {
    db = tempDatabase();
    receiver = await startReceiver();
    account = okJson(await db.call(['account', 'create', '--name', 'Replay Ltd', '--json'])).id as string;
    webhookId = okJson(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', receiver.url, '--json'])).id as string;
    server = await startServerProcess({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: '1', DASHBOARD_PORT: 'off', WARMUP_TIMEOUT_MS: '0' });
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
    db?.remove();
  });

  const importListing = async (id: string, overrides: Record<string, unknown> = {}) => {
    const file = `${db.dir}/${id}.ndjson`;
    writeFileSync(file, `${JSON.stringify(listingLine(account, { id, ...overrides }))}\n`);
    okJson(await db.call(['import', file, '--json']));
  };
  const upserted = (n: number) => (JSON.parse(receiver.received[n]!.body) as { data: { upserted: string[] } }).data.upserted;

  it('replay --since a time sends the changes since then again, marked; it is audited', { timeout: 30_000 }, async () => {
    await importListing(ids[0]!);
    await until(() => receiver.received.length === 1, { what: 'the first message' });
    const since = new Date().toISOString();
    await importListing(ids[1]!);
    await until(() => receiver.received.length === 2, { what: 'the second message' });

    const asked = okJson(await db.call(['webhook', 'replay', webhookId, '--since', since, '--json']));
    assert.deepEqual(asked, { id: webhookId, replay: 'requested', since });
    await until(() => receiver.received.length === 3, { what: 'the replayed message' });
    assert.deepEqual(upserted(2), [ids[1]]);
    assert.equal(receiver.received[2]!.headers['listings-replay'], 'true');
    assert.equal(receiver.received[1]!.headers['listings-replay'], undefined);
    const audit = rows<{ action: string }>(db.file, "SELECT action FROM dashboard_audit WHERE action = 'webhook.replayed'");
    assert.equal(audit.length, 1);
  });

  it('replay refusals are one line, exit 1, and ask for nothing', async () => {
    fails(await db.call(['webhook', 'replay', webhookId, '--since', '2999-01-01T00:00:00Z']), 1, [/in the future/]);
    fails(await db.call(['webhook', 'replay', webhookId, '--since', 'yesterday']), 1, [/not issued by this API/]);
    fails(await db.call(['webhook', 'replay', webhookId, '--since', '2026-12-01']), 1, [/not a date and time with its offset/]);
    fails(await db.call(['webhook', 'replay', webhookId]), 2, [/required option '--since <when>'/], 'a usage error');
    fails(await db.call(['webhook', 'replay', 'f0000000-0000-4000-8000-000000000000', '--since', new Date().toISOString()]), 1, [/no webhook endpoint/]);
    assert.deepEqual(rows(db.webhooksFile, 'SELECT replay_from FROM webhook_endpoints'), [{ replay_from: null }]);
  });

  it('filter chooses what the endpoint is told of; list shows it; bad names are refused', { timeout: 30_000 }, async () => {
    const set = okJson(await db.call(['webhook', 'filter', webhookId, '--changes', 'upserted', '--usage-types', 'Office, Retail', '--json']));
    assert.deepEqual(set, { id: webhookId, changes: 'upserted', usage_types: ['Office', 'Retail'] });
    const listed = okJson(await db.call(['webhook', 'list', '--account', account, '--json'])).webhooks[0];
    assert.deepEqual([listed.changes, listed.usage_types], ['upserted', ['Office', 'Retail']]);
    assert.match(okText(await db.call(['webhook', 'filter', webhookId, '--changes', 'upserted', '--usage-types', 'Office'])), /told of upserts only, listings of Office from its next message on/);
    fails(await db.call(['webhook', 'filter', webhookId, '--usage-types', 'Offices']), 1, [/"Offices" is not a usage type/]);
    fails(await db.call(['webhook', 'filter', webhookId, '--changes', 'none']), 1, [/changes must be one of all, upserted, removed/]);

    const before = receiver.received.length;
    await importListing(ids[2]!, { usage_types: ['F&B', 'Cafe'] });
    await importListing('a1000000-0000-4000-8000-000000000004', { usage_types: ['Office'] });
    await until(() => receiver.received.slice(before).some((r) => r.body.includes('a1000000-0000-4000-8000-000000000004')), { what: 'the office listing' });
    // The cafe (not an office) would be a removal, and removals are filtered out: only the office was sent.
    assert.ok(receiver.received.slice(before).every((r) => !r.body.includes(ids[2]!)), 'the cafe was not sent');
    okText(await db.call(['webhook', 'filter', webhookId, '--changes', 'all', '--usage-types', 'all']));
    assert.deepEqual(rows(db.webhooksFile, 'SELECT only_change, only_usage_types FROM webhook_endpoints'), [{ only_change: null, only_usage_types: null }]);
  });

  it('attempts lists the delivery log newest first, a page at a time, with the command for the next page', async () => {
    const all = okJson(await db.call(['webhook', 'attempts', webhookId, '--json']));
    assert.ok(all.attempts.length >= 4, JSON.stringify(all));
    assert.equal(all.next_before, null);
    assert.deepEqual(Object.keys(all.attempts[0]).sort(), ['at', 'attempt', 'delivered', 'duration_ms', 'id', 'ids', 'message_id', 'outcome', 'replay', 'type']);
    assert.deepEqual(all.attempts.map((a: { replay: boolean }) => a.replay).filter(Boolean), [true], 'the replayed one is marked');
    const first = okJson(await db.call(['webhook', 'attempts', webhookId, '--limit', '2', '--json']));
    assert.deepEqual(first.attempts.map((a: { id: string }) => a.id), all.attempts.slice(0, 2).map((a: { id: string }) => a.id));
    const second = okJson(await db.call(['webhook', 'attempts', webhookId, '--limit', '2', '--before', first.next_before, '--json']));
    assert.deepEqual(second.attempts.map((a: { id: string }) => a.id), all.attempts.slice(2, 4).map((a: { id: string }) => a.id));
    const text = okText(await db.call(['webhook', 'attempts', webhookId, '--limit', '1']));
    assert.match(text, /^AT +MESSAGE +TYPE +IDS +ATTEMPT +OUTCOME +MS$/m);
    assert.match(text, /HTTP 204/);
    assert.match(text, new RegExp(`Older attempts: listings-api webhook attempts ${webhookId} --before [0-9a-f-]{36}$`, 'm'));
    fails(await db.call(['webhook', 'attempts', webhookId, '--limit', '0']), 1, [/--limit must be a whole number from 1 to 1000/]);
    fails(await db.call(['webhook', 'attempts', webhookId, '--before', 'nope']), 1, [/attempt id/]);
  });
});
