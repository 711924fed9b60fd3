import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dump, fails, okJson, okText, tempDatabase, type CliDatabase } from '../cli/helpers.js';
import { startTestServer } from '../support/server.js';
import { DashboardClient, dev } from './helpers.js';

describe('CLI: user create / user list / user set-password (dashboard members; OPERATIONS style)', () => {
  let db: CliDatabase;
  let accountId: string;
  const TABLES = ['accounts', 'dashboard_users', 'dashboard_sessions'];

  before(() => {
    db = tempDatabase();
    accountId = okJson(db.run(['account', 'create', '--name', 'Acme', '--json'])).id;
  });
  after(() => db.remove());

  it('user create with a password on stdin: --json gives the id and no password; the member can sign in with it', async () => {
    const created = okJson(db.run(['user', 'create', '--account', accountId, '--email', ' Dev@Acme.example ', '--json'], 'a long enough password\n'), 'create');
    assert.deepEqual(Object.keys(created).sort(), ['account_id', 'email', 'generated_password', 'id']);
    assert.equal(created.email, 'dev@acme.example');
    assert.equal(created.account_id, accountId);
    assert.equal(created.generated_password, null);

    const server = await startTestServer({ DATABASE_URL: db.url });
    try {
      const client = new DashboardClient(server.dashboardPort!);
      const res = await client.signIn('dev@acme.example', 'a long enough password');
      assert.equal(res.status, 303);
      assert.equal(res.location, dev(accountId, 'keys'));
    } finally {
      await server.close();
    }
  });

  it('user create without stdin (or with --generate-password) generates a password and prints it once', async () => {
    const out = okText(db.run(['user', 'create', '--account', accountId, '--email', 'ops@acme.example']));
    const password = /Password \(shown once, only its hash is kept\): ([A-Za-z0-9]{20})\n/.exec(out)?.[1];
    assert.ok(password, out);
    assert.match(out, /^Added ops@acme\.example \(member [0-9a-f-]{36}\) to account /);
    assert.match(out, /They sign in at http:\/\/dashboard\.localhost:3000\n/);
    const json = okJson(db.run(['user', 'create', '--account', accountId, '--email', 'gen@acme.example', '--generate-password', '--json'], 'ignored stdin\n'));
    assert.match(json.generated_password, /^[A-Za-z0-9]{20}$/);
    assert.ok(!dump(db.file, ['dashboard_users']).includes(json.generated_password), 'only a hash is stored');
    assert.match(dump(db.file, ['dashboard_users']), /scrypt\$32768\$8\$1\$/);

    const server = await startTestServer({ DATABASE_URL: db.url });
    try {
      assert.equal((await new DashboardClient(server.dashboardPort!).signIn('ops@acme.example', password)).status, 303);
      assert.equal((await new DashboardClient(server.dashboardPort!).signIn('gen@acme.example', json.generated_password)).status, 303);
    } finally {
      await server.close();
    }
  });

  it('user list: the members of one account, as a table or --json', () => {
    const other = okJson(db.run(['account', 'create', '--name', 'Other', '--json'])).id;
    okJson(db.run(['user', 'create', '--account', other, '--email', 'someone@other.example', '--json']));
    okJson(db.run(['user', 'create', '--account', accountId, '--email', 'zed@acme.example', '--json']));
    const list = okJson(db.run(['user', 'list', '--account', accountId, '--json']));
    assert.deepEqual(list.users.map((u: { email: string }) => u.email), ['dev@acme.example', 'gen@acme.example', 'ops@acme.example', 'zed@acme.example']);
    for (const user of list.users) assert.deepEqual(Object.keys(user).sort(), ['created_at', 'email', 'id', 'last_sign_in_at']);
    assert.ok(list.users.find((u: { email: string }) => u.email === 'dev@acme.example').last_sign_in_at !== null, 'signed in above');
    assert.ok(!JSON.stringify(list).includes('scrypt'), 'no hashes listed');
    const table = okText(db.run(['user', 'list', '--account', accountId]));
    assert.match(table, /^EMAIL\s+ID\s+CREATED\s+LAST SIGN-IN\n/);
    assert.match(table, /zed@acme\.example .* never\n/);
    const empty = okJson(db.run(['account', 'create', '--name', 'Empty', '--json'])).id;
    assert.match(okText(db.run(['user', 'list', '--account', empty])), /No members yet; add one with: listings-api user create --account ID --email EMAIL/);
  });

  it('user set-password replaces the password and ends the member\'s sessions', async () => {
    const server = await startTestServer({ DATABASE_URL: db.url });
    try {
      const client = new DashboardClient(server.dashboardPort!);
      assert.equal((await client.signIn('dev@acme.example', 'a long enough password')).status, 303);
      assert.equal((await client.get(dev(accountId, 'keys'))).status, 200);
      const res = okJson(db.run(['user', 'set-password', '--email', 'dev@acme.example', '--json'], 'another long password\n'));
      assert.equal(res.generated_password, null);
      assert.equal((await client.get(dev(accountId, 'keys'))).location, '/sign-in', 'signed out everywhere');
      assert.equal((await new DashboardClient(server.dashboardPort!).signIn('dev@acme.example', 'a long enough password')).status, 401);
      assert.equal((await new DashboardClient(server.dashboardPort!).signIn('dev@acme.example', 'another long password')).status, 303);
    } finally {
      await server.close();
    }
  });

  it('bad input: one line on stderr, exit 1, nothing written; missing options: exit 2', () => {
    const before = dump(db.file, TABLES);
    fails(db.run(['user', 'create', '--account', accountId, '--email', 'not-an-email']), 1, [/--email "not-an-email" is not an email address/]);
    fails(db.run(['user', 'create', '--account', 'nope', '--email', 'x@acme.example']), 1, [/account id "nope" is not a UUID/]);
    fails(db.run(['user', 'create', '--account', '00000000-0000-4000-8000-000000000000', '--email', 'x@acme.example']), 1, [/no account with id 00000000-0000-4000-8000-000000000000/]);
    fails(db.run(['user', 'create', '--account', accountId, '--email', 'DEV@acme.example']), 1, [/a member with email dev@acme\.example exists already/]);
    const short = fails(db.run(['user', 'create', '--account', accountId, '--email', 'short@acme.example'], 'tooshort\n'), 1, [/password from stdin not accepted: the password is shorter than 12 characters/]);
    assert.ok(!short.includes('tooshort'), 'the password is not echoed');
    fails(db.run(['user', 'set-password', '--email', 'nobody@acme.example']), 1, [/no member with email nobody@acme\.example/]);
    fails(db.run(['user', 'list', '--account', 'nope']), 1, [/account id "nope" is not a UUID/]);
    fails(db.run(['user', 'create', '--account', accountId]), 2, [/--email/]);
    fails(db.run(['user', 'list']), 2, [/--account/]);
    fails(db.run(['user']), 2, [/missing command/]);
    assert.equal(dump(db.file, TABLES), before);
  });
});
