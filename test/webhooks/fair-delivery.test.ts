import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { okJson, tempDatabase, type CliDatabase } from '../cli/helpers.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { listingLine } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { until } from '../support/until.js';

/**
 * Issue 43 item 1: one instance's webhook sender is shared by every tenant, and no tenant's
 * endpoints delay another's. A real `serve` process on its own timer and the real clock, with a
 * small WEBHOOK_CONCURRENCY (8: a tenant holds at most 2), so that the old sender's eight slots,
 * all held by one tenant's hanging endpoints, would have kept the healthy tenant waiting for the
 * attempts' 10 s timeout.
 */
describe('webhooks: fair delivery between tenants (issue 43)', () => {
  let db: CliDatabase;
  let hanging: Receiver;
  let busy: Receiver;
  let healthy: Receiver;
  let server: ServerProcess;
  const accounts: Record<'hanging' | 'busy' | 'healthy', string> = { hanging: '', busy: '', healthy: '' };

  before(async () => {
    db = tempDatabase();
    [hanging, busy, healthy] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
    hanging.answerWith('hang');
    for (const name of ['hanging', 'busy', 'healthy'] as const) {
      accounts[name] = okJson(await db.call(['account', 'create', '--name', `${name} Ltd`, '--json'])).id as string;
    }
    // Ten endpoints each (D24's most) for the hanging and the busy tenant, one for the healthy one.
    for (let n = 0; n < 10; n++) {
      okJson(await db.call(['webhook', 'add', '--account', accounts.hanging, '--country', 'sg', `${hanging.url}?n=${n}`, '--json']));
      okJson(await db.call(['webhook', 'add', '--account', accounts.busy, '--country', 'sg', `${busy.url}?n=${n}`, '--json']));
    }
    okJson(await db.call(['webhook', 'add', '--account', accounts.healthy, '--country', 'sg', healthy.url, '--json']));
    server = await startServerProcess({ DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_CONCURRENCY: '8', DASHBOARD_PORT: 'off', WARMUP_TIMEOUT_MS: '0' });
  });
  after(async () => {
    await server?.stop();
    await Promise.all([hanging?.close(), busy?.close(), healthy?.close()]);
    db?.remove();
  });

  const importLines = async (account: string, count: number, name: string) => {
    const file = `${db.dir}/${name}.ndjson`;
    writeFileSync(file, Array.from({ length: count }, () => JSON.stringify(listingLine(account))).join('\n') + '\n');
    okJson(await db.call(['import', file, '--json']));
  };

  it('a tenant whose ten endpoints hang, and one importing 3,000 listings to its ten: another tenant\'s first attempt comes within 5 s', { timeout: 60_000 }, async () => {
    await importLines(accounts.hanging, 1, 'hanging');
    await until(() => hanging.received.length >= 2, { what: 'the hanging tenant\'s attempts', timeoutMs: 10_000 });
    await importLines(accounts.busy, 3000, 'busy');
    const committed = Date.now();
    await importLines(accounts.healthy, 1, 'healthy');
    await until(() => healthy.received.length === 1, { what: 'the healthy tenant\'s message', timeoutMs: 10_000 });
    const latency = Date.now() - committed;
    assert.ok(latency < 5000, `the healthy tenant's first attempt came ${latency} ms after its change (D24: within 5 s)`);

    // The busy tenant's 30 messages all go out (3 per endpoint, in order), the hanging tenant meanwhile holding its two.
    await until(() => busy.received.length === 30, { what: 'the busy tenant\'s backlog', timeoutMs: 30_000 });
    for (let n = 0; n < 10; n++) {
      const sizes = busy.received.filter((r) => r.url.endsWith(`?n=${n}`)).map((r) => (JSON.parse(r.body) as { data: { upserted: string[] } }).data.upserted.length);
      assert.deepEqual(sizes, [1000, 1000, 1000], `endpoint ${n}: three messages in order`);
    }
    assert.equal(hanging.mostAtOnce(), 2, 'the hanging tenant held its share (a quarter of 8), never more');
    assert.ok(busy.mostAtOnce() <= 2, `the busy tenant held at most its share (${busy.mostAtOnce()})`);
  });
});
