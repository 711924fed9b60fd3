import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../support/process.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { fails, okJson, okText, rows, tempDatabase, UUID, type CliDatabase } from './helpers.js';

/** `webhook add | list | remove | test | enable | rotate-secret` (D24): --json, exit codes, one-line errors, audit. */
describe('webhook commands (D24)', () => {
  let db: CliDatabase;
  let account: string;
  let receiver: Receiver;
  let received: Receiver['received'];
  let url = '';

  before(async () => {
    db = tempDatabase();
    account = okJson(await db.call(['account', 'create', '--name', 'Hooks Ltd', '--json'])).id;
    receiver = await startReceiver();
    ({ received, url } = receiver);
  });
  after(async () => {
    db.remove();
    await receiver.close();
  });

  it('add prints the id and the signing secret; list shows it enabled; both audited', async () => {
    const added = okJson(db.run(['webhook', 'add', '--account', account, '--country', 'sg', url, '--json']));
    assert.deepEqual(Object.keys(added).sort(), ['country', 'id', 'secret', 'url']);
    assert.match(added.id, UUID);
    assert.match(added.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(added.url, url);
    const listed = okJson(await db.call(['webhook', 'list', '--account', account, '--json']));
    assert.equal(listed.webhooks.length, 1);
    assert.deepEqual({ id: listed.webhooks[0].id, url: listed.webhooks[0].url, country: 'sg', status: listed.webhooks[0].status }, { id: added.id, url, country: 'sg', status: 'enabled' });
    assert.equal(JSON.stringify(listed).includes(added.secret), false, 'list never shows the secret');
    const audit = rows<{ action: string; webhook_url: string }>(db.file, "SELECT action, webhook_url FROM dashboard_audit WHERE action LIKE 'webhook.%'");
    assert.deepEqual(audit, [{ action: 'webhook.added', webhook_url: url }]);
  });

  it('refuses each URL rule with one line naming the problem, writing nothing', async () => {
    const cases: Array<[string, RegExp]> = [
      ['http://example.com/hook', /use https/],
      ['https://user:pw@example.com/hook', /user name or password/],
      ['https://example.com/hook#x', /fragment/],
      ['example.com/hook', /not an absolute URL/],
      // Issue 40 item 0: broadcast and multicast are refused when added.
      ['https://255.255.255.255/hook', /address 255\.255\.255\.255 is in the special-purpose range "broadcast"/],
      ['https://[ff02::1]/hook', /address ff02::1 is in the special-purpose range "multicast"/],
      ['https://224.0.0.251/hook', /special-purpose range "multicast"/],
    ];
    for (const [bad, pattern] of cases) fails(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', bad]), 1, [pattern], bad);
    fails(await db.call(['webhook', 'add', '--account', account, '--country', 'xx', url]), 1, [/unknown country "xx"/]);
    assert.equal(rows(db.webhooksFile, 'SELECT id FROM webhook_endpoints').length, 1);
  });

  it('at most 10 endpoints per account and country', async () => {
    for (let i = 1; i < 10; i++) okJson(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', `${url}/${i}`, '--json']));
    fails(await db.call(['webhook', 'add', '--account', account, '--country', 'sg', `${url}/11`]), 1, [/10 webhook endpoints in sg already/]);
    okJson(await db.call(['webhook', 'add', '--account', account, '--country', 'my', `${url}/my`, '--json']));
  });

  it('test sends a signed webhook.test event and prints the answer; a failed one exits 1 with the reason', async () => {
    const [first] = okJson(await db.call(['webhook', 'list', '--account', account, '--json'])).webhooks;
    const secret = rows<{ secret: string }>(db.webhooksFile, 'SELECT secret FROM webhook_endpoints WHERE id = ?', first.id)[0]!.secret;
    const sent = okJson(await db.call(['webhook', 'test', first.id, '--json'], undefined, { WEBHOOK_ALLOW_PRIVATE: '1' }));
    assert.equal(sent.delivered, true);
    assert.equal(sent.status, 204);
    const message = received.at(-1)!;
    const verified = new Webhook(secret).verify(message.body, message.headers as Record<string, string>) as { type: string; data: unknown };
    assert.equal(verified.type, 'webhook.test');
    assert.deepEqual(verified.data, { country: first.country });
    // Issue 40 item 8: a failure is its category only, with neither the address nor a timing.
    const refused = fails(await db.call(['webhook', 'test', first.id]), 1, [/not delivered/, /: refused address$/], 'without WEBHOOK_ALLOW_PRIVATE');
    assert.doesNotMatch(refused, /127\.0\.0\.1 |\bms\b|loopback/);
    receiver.answerWith(500);
    fails(await db.call(['webhook', 'test', first.id], undefined, { WEBHOOK_ALLOW_PRIVATE: '1' }), 1, [/not delivered/, /HTTP 500/]);
    receiver.answerWith(204);
    const attempts = rows<{ message_type: string; status: number | null; error: string | null }>(db.webhooksFile, 'SELECT message_type, status, error FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id', first.id);
    assert.deepEqual(attempts.map((a) => [a.status, a.error]), [[204, null], [null, 'refused address'], [500, 'HTTP 500']]);
  });

  it('test to a closed port or a server that hangs up says so as a category: no error name, no timing (issue 40 item 8)', async () => {
    const closed = await freePort();
    const hangUp = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
    try {
      const other = okJson(await db.call(['account', 'create', '--name', 'Scan Ltd', '--json'])).id as string;
      const cases: Array<[string, string]> = [[`http://127.0.0.1:${closed}/hook`, 'could not connect'], [`http://127.0.0.1:${(hangUp.address() as AddressInfo).port}/hook`, 'closed without an answer']];
      for (const [hook, category] of cases) {
        const { id } = okJson(await db.call(['webhook', 'add', '--account', other, '--country', 'sg', hook, '--json']));
        const line = fails(await db.call(['webhook', 'test', id], undefined, { WEBHOOK_ALLOW_PRIVATE: '1' }), 1, [new RegExp(`not delivered to .*: ${category}$`)], hook);
        assert.doesNotMatch(line, /E[A-Z]{4,}|\bms\b|hang up|after/, hook);
      }
    } finally {
      await new Promise((resolve) => hangUp.close(resolve));
    }
  });

  it('rotate-secret prints a new secret; both sign for a day', async () => {
    const [first] = okJson(await db.call(['webhook', 'list', '--account', account, '--json'])).webhooks;
    const before = rows<{ secret: string }>(db.webhooksFile, 'SELECT secret FROM webhook_endpoints WHERE id = ?', first.id)[0]!.secret;
    const rotated = okJson(await db.call(['webhook', 'rotate-secret', first.id, '--json']));
    assert.notEqual(rotated.secret, before);
    okJson(await db.call(['webhook', 'test', first.id, '--json'], undefined, { WEBHOOK_ALLOW_PRIVATE: '1' }));
    const message = received.at(-1)!;
    assert.ok(new Webhook(rotated.secret).verify(message.body, message.headers as Record<string, string>));
    assert.ok(new Webhook(before).verify(message.body, message.headers as Record<string, string>));
  });

  it('enable, remove; unknown or malformed ids are one-line errors', async () => {
    const [first] = okJson(await db.call(['webhook', 'list', '--account', account, '--json'])).webhooks;
    assert.deepEqual(okJson(await db.call(['webhook', 'enable', first.id, '--json'])), { id: first.id, status: 'enabled' });
    assert.deepEqual(okJson(await db.call(['webhook', 'remove', first.id, '--json'])), { id: first.id, removed: true });
    fails(await db.call(['webhook', 'remove', first.id]), 1, [/no webhook endpoint with id/]);
    fails(await db.call(['webhook', 'enable', 'nope']), 1, [/webhook id "nope" is not a UUID/]);
    assert.match(okText(await db.call(['webhook', 'list', '--account', account])), /ID\s+COUNTRY\s+STATUS\s+URL/);
    const actions = rows<{ action: string }>(db.file, "SELECT action FROM dashboard_audit WHERE action LIKE 'webhook.%' ORDER BY id").map((r) => r.action);
    assert.deepEqual([...new Set(actions)].sort(), ['webhook.added', 'webhook.enabled', 'webhook.removed', 'webhook.secret_rotated']);
  });
});
