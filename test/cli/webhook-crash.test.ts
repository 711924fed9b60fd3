import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { okJson, tempDatabase, type CliDatabase } from './helpers.js';
import { startServerProcess } from '../support/process.js';
import { listingLine } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { until } from '../support/until.js';

/**
 * D24: an instance killed (SIGKILL) in the middle of a delivery loses nothing: another instance
 * takes the endpoint over once the dead one's lease has run out (30 s), and sends the same message,
 * same webhook-id and same body. Real `serve` processes on one SQLite file.
 *
 * The 30 s are not waited out: that a lease holds until its time and is taken over after it is
 * test/webhooks/delivery.test.ts's, on an injected clock. Here the dead instance's lease is run out
 * in its row (the one thing 30 s would change), so the test is about what only real processes
 * show: what a SIGKILL leaves in the store is enough for another process to send the same message.
 */
describe('webhooks: kill -9 of the sending instance mid-delivery (D24)', () => {
  let db: CliDatabase;
  let receiver: Receiver;
  let received: Receiver['received'];

  before(async () => {
    db = tempDatabase();
    receiver = await startReceiver();
    receiver.answerWith('hang');
    received = receiver.received;
  });
  after(async () => {
    await receiver.close();
    db.remove();
  });

  it('the other instance sends the same message after the lease', { timeout: 40_000 }, async () => {
    const account = okJson(await db.call(['account', 'create', '--name', 'Crash Ltd', '--json'])).id as string;
    const { url } = receiver;
    okJson(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', url, '--json']));
    const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: '1', DASHBOARD_PORT: 'off', WARMUP_TIMEOUT_MS: '0' };
    const first = await startServerProcess(env);
    try {
      const file = `${db.dir}/change.ndjson`;
      writeFileSync(file, `${JSON.stringify(listingLine(account, { id: 'f0000000-0000-4000-8000-000000000001' }))}\n`);
      okJson(await db.call(['import', file, '--json']));
      await until(() => received.length === 1, { what: 'the first attempt' });
      // Mid-delivery: the attempt is open, the endpoint leased to the first instance.
      first.child.kill('SIGKILL');
      await first.exited;
      runOutLease(db.webhooksFile);
      receiver.answerWith(204);
      const other = await startServerProcess(env);
      try {
        await until(() => received.length === 2, { what: 'the attempt of the instance that took over' });
        assert.equal(received[1]!.headers['webhook-id'], received[0]!.headers['webhook-id']);
        assert.equal(received[1]!.body, received[0]!.body);
        assert.deepEqual(JSON.parse(received[1]!.body).data.upserted, ['f0000000-0000-4000-8000-000000000001']);
      } finally {
        await other.stop();
      }
    } finally {
      await first.stop('SIGKILL');
    }
  });
});

/** Moves the held lease of the one endpoint to the past, as 30 s would (after asserting it is held). */
function runOutLease(webhooksFile: string): void {
  const file = new BetterSqlite3(webhooksFile);
  try {
    const held = file.prepare('SELECT lease_owner, lease_until, message_id FROM webhook_endpoints').all() as Array<Record<string, string | null>>;
    assert.equal(held.length, 1);
    assert.ok(held[0]!.lease_owner !== null && held[0]!.lease_until! > new Date().toISOString(), 'the killed instance held the lease');
    assert.ok(held[0]!.message_id !== null, 'and had kept the message it was sending');
    file.prepare('UPDATE webhook_endpoints SET lease_until = ?').run(new Date(Date.now() - 1000).toISOString());
  } finally {
    file.close();
  }
}
