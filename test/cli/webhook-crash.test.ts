import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { okJson, tempDatabase, type CliDatabase } from './helpers.js';
import { startServerProcess, waitFor } from '../support/process.js';
import { listingLine } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/**
 * D24: an instance killed (SIGKILL) in the middle of a delivery loses nothing: another instance
 * takes the endpoint over once the dead one's lease has run out (30 s), and sends the same message,
 * same webhook-id and same body. Real `serve` processes on one SQLite file.
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

  it('the other instance sends the same message after the lease', { timeout: 90_000 }, async () => {
    const account = okJson(await db.call(['account', 'create', '--name', 'Crash Ltd', '--json'])).id as string;
    const { url } = receiver;
    okJson(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', url, '--json']));
    const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: '1', DASHBOARD_PORT: 'off', WARMUP_TIMEOUT_MS: '0' };
    const first = await startServerProcess(env);
    try {
      const file = `${db.dir}/change.ndjson`;
      writeFileSync(file, `${JSON.stringify(listingLine(account, { id: 'f0000000-0000-4000-8000-000000000001' }))}\n`);
      okJson(await db.call(['import', file, '--json']));
      await waitFor(() => received.length === 1, 'the first attempt');
      // Mid-delivery: the attempt is open, the endpoint leased to the first instance.
      first.child.kill('SIGKILL');
      await first.exited;
      receiver.answerWith(204);
      const other = await startServerProcess(env);
      try {
        await waitFor(() => received.length === 2, 'the attempt of the instance that took over', 60_000);
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
