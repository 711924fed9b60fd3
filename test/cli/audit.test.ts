import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { keyDisplay } from '../../src/auth/key-format.js';
import { CLI_ACTOR } from '../../src/storage/audit.js';
import { activityItems, dev, signedIn } from '../dashboard/helpers.js';
import { dom } from '../support/html.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { fails, okJson, rows, tempDatabase, type CliDatabase } from './helpers.js';

/**
 * The audit log shows changes made with the CLI beside the dashboard's: key create, key revoke,
 * key set-limit, origin add and origin remove each leave one entry by "operator (CLI)" (no member),
 * visible on the Activity page; a command that changes nothing, or fails, leaves none; a key is
 * named by its display prefix and last four only (D20).
 */

describe('the CLI\'s key and origin changes in the audit log, as "operator (CLI)"', () => {
  let db: CliDatabase;
  let server: TestServer | undefined;
  let account: string;

  before(async () => {
    db = tempDatabase();
    account = okJson(await db.call(['account', 'create', '--name', 'Audited Pte Ltd', '--json'])).id;
  });
  after(async () => {
    await server?.close();
    db.remove();
  });

  const auditCount = () => rows<{ n: number }>(db.file, 'SELECT count(*) AS n FROM dashboard_audit')[0]!.n;

  it('each change is one entry; repeats that change nothing and failures add none', async () => {
    const start = new Date().toISOString();
    const created = okJson(await db.call(['key', 'create', '--account', account, '--country', 'sg', '--label', 'Website', '--json']));
    assert.equal(auditCount(), 1, 'key create');
    okJson(await db.call(['key', 'set-limit', created.id, '120', '--json']));
    assert.equal(auditCount(), 2, 'key set-limit');
    okJson(await db.call(['key', 'set-limit', created.id, '120', '--json']));
    assert.equal(auditCount(), 2, 'the same limit again is not a change');
    const origin = ['--account', account, '--country', 'sg', 'https://WWW.example.com', '--json'];
    assert.equal(okJson(await db.call(['origin', 'add', ...origin])).added, true);
    assert.equal(auditCount(), 3, 'origin add');
    assert.equal(okJson(await db.call(['origin', 'add', ...origin])).added, false);
    assert.equal(auditCount(), 3, 'an origin registered already is not added again');
    okJson(await db.call(['origin', 'remove', ...origin]));
    assert.equal(auditCount(), 4, 'origin remove');
    okJson(await db.call(['key', 'revoke', created.id, '--json']));
    assert.equal(auditCount(), 5, 'key revoke');
    okJson(await db.call(['key', 'revoke', created.id, '--json']));
    assert.equal(auditCount(), 5, 'revoking a revoked key is not a change');

    fails(await db.call(['origin', 'remove', ...origin]), 1, [/not registered/]);
    fails(await db.call(['origin', 'add', '--account', account, '--country', 'sg', 'https://www.example.com/path']), 1, [/malformed origin/]);
    fails(await db.call(['key', 'set-limit', created.id, '0']), 1, [/PER_MINUTE/]);
    fails(await db.call(['key', 'revoke', '0f0f0f0f-0000-4000-8000-000000000000']), 1, [/no key/]);
    fails(await db.call(['key', 'create', '--account', account, '--country', 'xx', '--label', 'x']), 1, [/unknown country/]);
    assert.equal(auditCount(), 5, 'failed commands');
    // `account create` and the read-only commands are not key or origin changes.
    okJson(await db.call(['key', 'list', '--account', account, '--json']));
    okJson(await db.call(['origin', 'list', '--account', account, '--json']));
    assert.equal(auditCount(), 5);

    server = await startTestServer({ DATABASE_URL: db.url });
    const entries = await server.service.store.audit.listForAccount(account, 100);
    const key = (await server.service.store.keys.get(created.id))!;
    const display = keyDisplay(key);
    assert.equal(display, `${created.key.slice(0, 12)}…${created.key.slice(-4)}`);
    assert.equal(CLI_ACTOR, 'operator (CLI)');
    assert.deepEqual(
      entries.map((e) => [
        e.actor_user_id, e.actor_email, e.action, e.key_id, e.key_display, e.key_label, e.previous_label, e.country, e.origin, e.rate_limit_per_minute,
      ]),
      [
        [null, CLI_ACTOR, 'key.revoked', key.id, display, 'Website', null, 'sg', null, null],
        [null, CLI_ACTOR, 'origin.removed', null, null, null, null, 'sg', 'https://www.example.com', null],
        [null, CLI_ACTOR, 'origin.added', null, null, null, null, 'sg', 'https://www.example.com', null],
        [null, CLI_ACTOR, 'key.limit_changed', key.id, display, 'Website', null, 'sg', null, 120],
        [null, CLI_ACTOR, 'key.created', key.id, display, 'Website', null, 'sg', null, null],
      ],
    );
    // When: the time of the change (the revocation's is the key's revoked_at), in order.
    assert.equal(entries[0]!.at, key.revoked_at);
    assert.equal(entries[4]!.at, key.created_at);
    const times = entries.map((e) => e.at).reverse();
    assert.deepEqual([...times].sort(), times);
    assert.ok(times[0]! >= start && times.at(-1)! <= new Date().toISOString(), times.join(' '));
    // D20: no full key, not even its secret part, in the log.
    const stored = JSON.stringify(rows(db.file, 'SELECT * FROM dashboard_audit'));
    assert.ok(!stored.includes(created.key.slice(12, -4)), 'no full key in the audit log');
  });

  it('the Activity page lists them with the actor "operator (CLI)"', async () => {
    assert.ok(server);
    const member = await signedIn(server, account);
    const page = await member.client.get(dev(account, 'activity'));
    assert.equal(page.status, 200);
    const key = (await server.service.store.keys.listForAccount(account))[0]!;
    const display = keyDisplay(key);
    const items = activityItems(page.body);
    const at = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC operator \(CLI\) /;
    assert.deepEqual(items.map(([action, line]) => [action, line!.replace(at, '')]), [
      ['key.revoked', `revoked key Website ${display}`],
      ['origin.removed', 'removed origin https://www.example.com for Singapore'],
      ['origin.added', 'allowed origin https://www.example.com for Singapore'],
      ['key.limit_changed', `set the limit of key Website ${display} to 120 requests per minute`],
      ['key.created', `created key Website ${display} for Singapore`],
    ]);
    for (const [, line] of items) assert.match(line!, at);
    // The actor is named as such (its own element), not only as words of the line.
    assert.equal(dom(page.body).querySelectorAll('li[data-action] .actor').filter((actor) => actor.text === 'operator (CLI)').length, items.length);
  });
});
