import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { okJson, tempDatabase, type CliDatabase } from './helpers.js';
import { startServerProcess, waitFor } from '../support/process.js';
import { listingLine } from '../support/server.js';

/**
 * D24: an instance killed (SIGKILL) in the middle of a delivery loses nothing: another instance
 * takes the endpoint over once the dead one's lease has run out (30 s), and sends the same message,
 * same webhook-id and same body. Real `serve` processes on one SQLite file.
 */
describe('webhooks: kill -9 of the sending instance mid-delivery (D24)', () => {
  let db: CliDatabase;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const hanging: ServerResponse[] = [];
  let answer: 'hang' | number = 'hang';
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => void (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      if (answer === 'hang') hanging.push(res);
      else res.writeHead(answer).end();
    });
  });

  before(async () => {
    db = tempDatabase();
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const res of hanging) res.destroy();
    await new Promise((resolve) => receiver.close(resolve));
    db.remove();
  });

  it('the other instance sends the same message after the lease', { timeout: 90_000 }, async () => {
    const account = okJson(await db.call(['account', 'create', '--name', 'Crash Ltd', '--json'])).id as string;
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
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
      answer = 204;
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
