import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseKey } from '../../src/auth/key-format.js';
import { EXAMPLE_ACCOUNT } from '../../src/cli/program.js';
import { DEMO_ORG_ID } from '../../src/demo/demo-data.js';
import { BIN, type CliResult } from '../support/cli.js';
import { startTestServer, TestClock, type TestServer } from '../support/server.js';
import { dump, fails, okJson, okText, rows, tempDatabase, UUID, type CliDatabase } from './helpers.js';

/**
 * The operator contract of OPERATIONS.md, each suite on its own SQLite file: every command,
 * `--json`, exit statuses, one-line errors that write nothing, and D20 for keys. `db.run` spawns the
 * real bin: for each command's `--json` output, each exit status (0, 1, 2) and the D20 leak checks;
 * `await db.call` runs the same command line in-process for the rest (test/support/cli.ts).
 */

const KEY_FIELDS = ['id', 'label', 'country', 'prefix', 'last4', 'created_at', 'last_used_at', 'revoked_at', 'rate_limit_per_minute'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('migrate', () => {
  let db: CliDatabase;
  before(() => (db = tempDatabase()));
  after(() => db.remove());

  it('applies the schema, then nothing: idempotent (--json and human)', async () => {
    const first = okJson(db.run(['migrate', '--json']), 'first migrate');
    assert.deepEqual(Object.keys(first), ['applied']);
    assert.ok(Array.isArray(first.applied) && first.applied.length >= 1, JSON.stringify(first));
    const tables = rows<{ name: string }>(db.file, "SELECT name FROM sqlite_master WHERE type = 'table'").map((t) => t.name);
    for (const table of ['accounts', 'listings', 'api_keys', 'allowed_origins']) assert.ok(tables.includes(table), table);
    const before = dump(db.file);
    assert.deepEqual(okJson(await db.call(['migrate', '--json']), 'second migrate'), { applied: [] });
    assert.equal(okText(await db.call(['migrate'])), 'Schema is up to date.\n');
    assert.equal(dump(db.file), before);
  });
});

describe('demo', () => {
  let db: CliDatabase;
  let server: TestServer | undefined;
  before(() => (db = tempDatabase()));
  after(async () => {
    await server?.close();
    db.remove();
  });

  it('creates the data set once and prints a working sg key; a second run adds only a key, revoking the one before', async () => {
    const first = okJson(db.run(['demo', '--json']), 'demo');
    assert.deepEqual(Object.keys(first).sort(), ['account_id', 'created', 'curl', 'key', 'key_id']);
    assert.equal(first.created, true);
    assert.match(first.account_id, UUID);
    assert.match(first.key_id, UUID);
    assert.equal(parseKey(first.key), 'sg');
    assert.equal(first.curl, `curl -H "Authorization: Bearer ${first.key}" http://api.localhost:3000/v1/listings`);
    const listingsBefore = dump(db.file, ['accounts', 'listings', 'allowed_origins']);
    const counts = rows<{ n: number }>(db.file, 'SELECT count(*) AS n FROM listings')[0]!.n;
    assert.ok(counts >= 10, `demo listings: ${counts}`);
    assert.deepEqual(
      rows(db.file, 'SELECT country, origin FROM allowed_origins WHERE account_id = ? ORDER BY country, origin', first.account_id),
      // The dev server under both names such servers print.
      [
        { country: 'my', origin: 'http://127.0.0.1:5173' }, { country: 'my', origin: 'http://localhost:5173' },
        { country: 'sg', origin: 'http://127.0.0.1:5173' }, { country: 'sg', origin: 'http://localhost:5173' },
      ],
    );

    // The printed key works against the real service on the same database.
    server = await startTestServer({ DATABASE_URL: db.url }, new TestClock(Date.now()));
    const page = await server.get('/v1/listings', { key: first.key });
    assert.equal(page.status, 200, page.body);
    assert.ok(page.json.items.length > 0);
    assert.ok(page.json.items.every((item: { org_id: string }) => item.org_id === first.account_id));
    const fromBrowser = await server.get('/v1/listings', { key: first.key, headers: { origin: 'http://localhost:5173' } });
    assert.equal(fromBrowser.status, 200, 'the demo origin is registered');

    const second = okJson(await db.call(['demo', '--json']), 'demo again');
    assert.equal(second.created, false);
    assert.equal(second.account_id, first.account_id);
    assert.notEqual(second.key, first.key, 'a fresh key: the first cannot be shown again');
    assert.notEqual(second.key_id, first.key_id);
    assert.equal(dump(db.file, ['accounts', 'listings', 'allowed_origins']), listingsBefore, 'no duplicated data');
    assert.equal(rows<{ n: number }>(db.file, 'SELECT count(*) AS n FROM api_keys')[0]!.n, 2);
    const again = await server.get('/v1/listings', { key: second.key });
    assert.equal(again.status, 200);
    assert.equal(again.json.total, page.json.total);
    assert.equal((await server.get('/v1/listings', { key: first.key })).status, 401, 'the first key is revoked: one active demo key at a time');

    const human = okText(await db.call(['demo']));
    assert.match(human, /exists already/);
    assert.match(human, new RegExp(`Demo organisation: ${first.account_id}\n`));
    assert.match(human, new RegExp(`Revoked the earlier demo key: ${second.key_id}\n`));
    const key = /sg_live_[0-9A-Za-z]{38}/.exec(human)?.[0];
    assert.ok(key !== undefined && parseKey(key) === 'sg', human);
    assert.ok(human.includes(`curl -H "Authorization: Bearer ${key}"`));
    assert.equal((await server.get('/v1/listings', { key })).status, 200);
  });
});

describe('account create', () => {
  let db: CliDatabase;
  before(async () => {
    db = tempDatabase();
    okJson(await db.call(['migrate', '--json']));
  });
  after(() => db.remove());

  it('creates an organisation by default and prints its id (--json)', () => {
    const created = okJson(db.run(['account', 'create', '--name', 'Acme Realty', '--json']));
    assert.deepEqual(Object.keys(created), ['id']);
    assert.match(created.id, UUID);
    assert.deepEqual(rows(db.file, 'SELECT name, kind FROM accounts WHERE id = ?', created.id), [{ name: 'Acme Realty', kind: 'organisation' }]);
  });

  it('creates an individual landlord; the human output is the id alone', async () => {
    const out = okText(await db.call(['account', 'create', '--name', 'Jane Tan', '--kind', 'individual']));
    const id = out.trim();
    assert.match(id, UUID);
    assert.equal(out, `${id}\n`);
    assert.deepEqual(rows(db.file, 'SELECT kind FROM accounts WHERE id = ?', id), [{ kind: 'individual' }]);
  });

  it('takes --id (normalised to lowercase) and refuses a duplicate id, writing nothing', async () => {
    const id = 'ABCDEF01-2345-4678-89AB-CDEF01234567';
    assert.deepEqual(okJson(await db.call(['account', 'create', '--name', 'Fixed', '--kind', 'organisation', '--id', id, '--json'])), { id: id.toLowerCase() });
    const before = dump(db.file);
    fails(await db.call(['account', 'create', '--name', 'Other', '--id', id.toLowerCase(), '--json']), 1, [/exists already/, new RegExp(id.toLowerCase())]);
    fails(await db.call(['account', 'create', '--name', 'Other', '--id', id]), 1, [/exists already/]);
    assert.equal(dump(db.file), before);
  });

  it('refuses bad input with exit 1 and usage errors with exit 2, writing nothing', async () => {
    const before = dump(db.file);
    // The two exit statuses as the shell sees them; the rest in-process.
    fails(db.run(['account', 'create', '--name', 'X', '--kind', 'robot', '--json']), 1, [/--kind/, /robot/]);
    fails(db.run(['account', 'create', '--json']), 2, [/--name/]);
    fails(await db.call(['account', 'create', '--name', 'X', '--kind', 'Organisation']), 1, [/--kind/]);
    fails(await db.call(['account', 'create', '--name', 'X', '--id', 'not-a-uuid']), 1, [/--id/, /not-a-uuid/, /not a UUID/]);
    fails(await db.call(['account', 'create', '--name', '   ']), 1, [/--name/, /empty/]);
    fails(await db.call(['account', 'create', '--name']), 2, [/--name/]);
    fails(await db.call(['account', 'create', '--name', 'X', '--colour', 'red']), 2, [/--colour/]);
    fails(await db.call(['account', 'create', '--name', 'X', 'extra']), 2, [/too many arguments/]);
    assert.equal(dump(db.file), before);
  });
});

describe('account list', () => {
  let db: CliDatabase;
  before(() => (db = tempDatabase()));
  after(() => db.remove());

  it('lists every account oldest first: --json {"accounts": [{id, name, kind, created_at}]}, or a table', async () => {
    assert.deepEqual(okJson(await db.call(['account', 'list', '--json'])), { accounts: [] });
    assert.match(okText(await db.call(['account', 'list'])), /^No accounts yet; create one with: listings-api account create --name NAME\n$/);
    const acme = okJson(await db.call(['account', 'create', '--name', 'Acme Realty', '--json'])).id;
    const jane = okJson(await db.call(['account', 'create', '--name', 'Jane Tan', '--kind', 'individual', '--json'])).id;

    const list = okJson(db.run(['account', 'list', '--json']));
    assert.deepEqual(Object.keys(list), ['accounts']);
    for (const a of list.accounts) {
      assert.deepEqual(Object.keys(a), ['id', 'name', 'kind', 'created_at']);
      assert.match(a.created_at, ISO);
    }
    assert.deepEqual(list.accounts.map((a: { id: string; name: string; kind: string }) => [a.id, a.name, a.kind]), [
      [acme, 'Acme Realty', 'organisation'], [jane, 'Jane Tan', 'individual'],
    ]);

    const lines = okText(await db.call(['account', 'list'])).trimEnd().split('\n');
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.match(lines[0]!, /^ID\s+NAME\s+KIND\s+CREATED$/);
    assert.match(lines[1]!, new RegExp(`^${acme}\\s+Acme Realty\\s+organisation\\s+${list.accounts[0].created_at}$`));
    assert.match(lines[2]!, new RegExp(`^${jane}\\s+Jane Tan\\s+individual\\s+`));
  });

  it('takes no argument and no other option (exit 2)', async () => {
    fails(await db.call(['account', 'list', 'extra']), 2, [/too many arguments/, /\(see listings-api account list --help\)$/]);
    fails(await db.call(['account', 'list', '--kind', 'individual']), 2, [/unknown option '--kind'/]);
  });

  it('a reader that goes away (`| head -1`) ends nothing badly: no stack trace, the status of the command', async () => {
    // The pipe's reading end is closed before the bin has started, so its first write meets EPIPE.
    const child = spawn(process.execPath, [BIN, 'account', 'list'], { env: { ...process.env, DATABASE_URL: db.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [status] = (await once(child, 'close')) as [number | null];
    assert.equal(stderr, '');
    assert.equal(status, 0);
  });
});

describe('keys: create, list, set-limit, revoke', () => {
  let db: CliDatabase;
  let account: string;
  let server: TestServer | undefined;
  /** Full keys printed by key create, and the transcript entries that printed them. */
  const created: Array<{ id: string; key: string }> = [];
  const creations = new Set<number>();

  function createKeySpawned(args: string[]): CliResult {
    const result = db.run(['key', 'create', ...args]);
    creations.add(db.transcript.length - 1);
    return result;
  }
  async function createKey(args: string[]): Promise<CliResult> {
    const result = await db.call(['key', 'create', ...args]);
    creations.add(db.transcript.length - 1);
    return result;
  }

  before(async () => {
    db = tempDatabase();
    account = okJson(await db.call(['account', 'create', '--name', 'Keys Pte Ltd', '--json'])).id;
  });
  after(async () => {
    await server?.close();
    db.remove();
  });

  it('key create prints the full key once (--json); only its hash, prefix and last four are stored', () => {
    const out = okJson(createKeySpawned(['--account', account, '--country', 'sg', '--label', 'website', '--json']));
    assert.deepEqual(Object.keys(out).sort(), ['id', 'key']);
    assert.match(out.id, UUID);
    assert.equal(parseKey(out.key), 'sg');
    created.push(out);
    const [row] = rows<Record<string, unknown>>(db.file, 'SELECT * FROM api_keys WHERE id = ?', out.id);
    assert.ok(row);
    assert.equal(row.key_hash, createHash('sha256').update(out.key).digest('hex'));
    assert.equal(row.prefix, out.key.slice(0, 12));
    assert.equal(row.last4, out.key.slice(-4));
    assert.equal(row.account_id, account);
    assert.equal(row.label, 'website');
    for (const value of Object.values(row)) assert.notEqual(value, out.key);
    // Not anywhere in the database files either.
    for (const file of [db.file, `${db.file}-wal`]) {
      if (existsSync(file)) assert.ok(!readFileSync(file).includes(out.key), `${file} holds the full key`);
    }
  });

  it('key create (human) shows the key on its own first line, for any country, case-insensitively', async () => {
    const out = okText(await createKey(['--account', account.toUpperCase(), '--country', 'MY', '--label', '  staging  ']));
    const [first, ...rest] = out.split('\n');
    assert.equal(parseKey(first!), 'my', out);
    const id = /Key id ([0-9a-f-]{36})/.exec(rest.join('\n'))?.[1];
    assert.ok(id, out);
    assert.match(out, /only time the key is shown/);
    created.push({ id, key: first! });
    assert.deepEqual(rows(db.file, 'SELECT label, country FROM api_keys WHERE id = ?', id), [{ label: 'staging', country: 'my' }]);
  });

  it('key create refuses an unknown country or account, a bad id, an empty label; usage errors for missing options', async () => {
    const before = dump(db.file);
    fails(await createKey(['--account', account, '--country', 'xx', '--label', 'l', '--json']), 1, [/unknown country "xx"/]);
    fails(await createKey(['--account', account, '--country', 'gb', '--label', 'l']), 1, [/unknown country "gb"/]);
    fails(await createKey(['--account', '0f0f0f0f-0000-4000-8000-000000000000', '--country', 'sg', '--label', 'l']), 1, [/no account/, /0f0f0f0f-0000-4000-8000-000000000000/]);
    fails(await createKey(['--account', 'acme', '--country', 'sg', '--label', 'l']), 1, [/account id "acme" is not a UUID/]);
    fails(await createKey(['--account', account, '--country', 'sg', '--label', ' ']), 1, [/--label/]);
    fails(await createKey(['--account', account, '--country', 'sg', '--label', 'x'.repeat(201)]), 1, [/--label/]);
    fails(await createKey(['--account', account, '--country', 'sg']), 2, [/--label/]);
    fails(await createKey(['--account', account, '--label', 'l']), 2, [/--country/]);
    fails(await createKey(['--country', 'sg', '--label', 'l']), 2, [/--account/]);
    assert.equal(dump(db.file), before);
  });

  it('issue 40 item 9: key create past MAX_KEYS_PER_ACCOUNT_COUNTRY active keys in a country is exit 1 with one line, writing nothing; revoked keys do not count', async () => {
    const capped = okJson(await db.call(['account', 'create', '--name', 'Capped Pte Ltd', '--json'])).id as string;
    const cap = { MAX_KEYS_PER_ACCOUNT_COUNTRY: '2' };
    const make = (label: string, country = 'sg') => db.call(['key', 'create', '--account', capped, '--country', country, '--label', label, '--json'], undefined, cap);
    const first = okJson(await make('one'));
    okJson(await make('two'));
    const before = dump(db.file, ['api_keys', 'dashboard_audit']);
    const line = fails(await make('three'), 1, [new RegExp(`account ${capped} has 2 active keys in sg already, the most MAX_KEYS_PER_ACCOUNT_COUNTRY allows`), /key revoke/]);
    // Spawned too: the exit status the shell gets.
    assert.equal(fails(db.run(['key', 'create', '--account', capped, '--country', 'sg', '--label', 'three'], undefined, cap), 1, []), line);
    assert.equal(dump(db.file, ['api_keys', 'dashboard_audit']), before, 'no key, no audit entry');
    okJson(await make('three', 'my'), 'another country is not capped by these');
    okText(await db.call(['key', 'revoke', first.id], undefined, cap));
    okJson(await make('three'), 'a revoked key makes room');
    // The default cap (10) of this deployment allows what 2 did not.
    okJson(await db.call(['key', 'create', '--account', capped, '--country', 'sg', '--label', 'four', '--json']));
  });

  it('key list --json: exactly the documented fields, null for what is unset, no full key', () => {
    const list = okJson(db.run(['key', 'list', '--account', account, '--json']));
    assert.deepEqual(Object.keys(list), ['keys']);
    assert.equal(list.keys.length, 2);
    for (const [i, k] of list.keys.entries()) {
      assert.deepEqual(Object.keys(k), KEY_FIELDS);
      assert.equal(k.id, created[i]!.id);
      assert.equal(k.prefix, created[i]!.key.slice(0, 12));
      assert.equal(k.last4, created[i]!.key.slice(-4));
      assert.match(k.created_at, ISO);
      assert.equal(k.last_used_at, null);
      assert.equal(k.revoked_at, null);
      assert.equal(k.rate_limit_per_minute, null);
    }
    assert.deepEqual(list.keys.map((k: { label: string; country: string }) => [k.label, k.country]), [['website', 'sg'], ['staging', 'my']]);
  });

  it('key list (human) shows prefix...last4 and "never"/"active"/"default"', async () => {
    const out = okText(await db.call(['key', 'list', '--account', account]));
    const lines = out.trimEnd().split('\n');
    assert.equal(lines.length, 3, out);
    assert.match(lines[0]!, /^ID\s+LABEL\s+COUNTRY\s+KEY\s+CREATED\s+LAST USED\s+STATUS\s+LIMIT\/MIN$/);
    assert.ok(lines[1]!.includes(`${created[0]!.key.slice(0, 12)}...${created[0]!.key.slice(-4)}`));
    assert.match(lines[1]!, /never\s+active\s+default$/);
    const empty = okJson(await db.call(['account', 'create', '--name', 'No keys', '--json'])).id;
    assert.match(okText(await db.call(['key', 'list', '--account', empty])), /No keys yet/);
    assert.deepEqual(okJson(await db.call(['key', 'list', '--account', empty, '--json'])), { keys: [] });
  });

  it('key list refuses an unknown or malformed account', async () => {
    fails(await db.call(['key', 'list', '--account', '0f0f0f0f-0000-4000-8000-000000000000', '--json']), 1, [/no account/]);
    fails(await db.call(['key', 'list', '--account', 'nope']), 1, [/"nope" is not a UUID/]);
    fails(await db.call(['key', 'list']), 2, [/--account/]);
  });

  it('key set-limit sets the per-minute limit, which a running server applies', async () => {
    server = await startTestServer({ DATABASE_URL: db.url });
    const { id, key } = created[0]!;
    const first = await server.get('/v1/listings', { key });
    assert.equal(first.status, 200, first.body);
    assert.equal(first.headers['x-ratelimit-limit'], '60', 'the default limit');

    assert.deepEqual(okJson(db.run(['key', 'set-limit', id, '2', '--json'])), { id, rate_limit_per_minute: 2 });
    const list = okJson(await db.call(['key', 'list', '--account', account, '--json']));
    assert.equal(list.keys[0].rate_limit_per_minute, 2);
    assert.equal(list.keys[1].rate_limit_per_minute, null);
    const limited = await server.get('/v1/listings', { key });
    assert.equal(limited.headers['x-ratelimit-limit'], '2');
    assert.equal(limited.status, 200);
    assert.equal((await server.get('/v1/listings', { key })).status, 429, 'the first request counted too: 2 used');

    assert.match(okText(await db.call(['key', 'set-limit', id, '100'])), /100 requests per minute/);
    assert.equal((await server.get('/v1/listings', { key })).headers['x-ratelimit-limit'], '100');
  });

  it('key set-limit refuses a bad number or an unknown key, writing nothing', async () => {
    const before = dump(db.file);
    const { id } = created[0]!;
    for (const value of ['0', '1.5', '1000000001']) fails(await db.call(['key', 'set-limit', id, value]), 1, [/PER_MINUTE/]);
    fails(await db.call(['key', 'set-limit', '0f0f0f0f-0000-4000-8000-000000000000', '5', '--json']), 1, [/no key/]);
    fails(await db.call(['key', 'set-limit', 'nope', '5']), 1, [/key id "nope" is not a UUID/]);
    fails(await db.call(['key', 'set-limit', id]), 2, [/PER_MINUTE/]);
    assert.equal(dump(db.file), before);
  });

  it('key revoke is effective on a running server before it returns (D4), and is idempotent', async () => {
    assert.ok(server);
    const { id, key } = created[1]!;
    const myHost = 'api.my.localhost';
    assert.equal((await server.get('/v1/listings', { key, host: myHost })).status, 200);
    const revoked = okJson(db.run(['key', 'revoke', id, '--json']));
    assert.deepEqual(Object.keys(revoked), ['id', 'revoked_at']);
    assert.equal(revoked.id, id);
    assert.match(revoked.revoked_at, ISO);
    const refused = await server.get('/v1/listings', { key, host: myHost });
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error, 'unauthorized');
    assert.equal((await server.get('/v1/listings', { key: created[0]!.key })).status, 200, 'the other key is untouched');

    const again = okJson(await db.call(['key', 'revoke', id, '--json']));
    assert.equal(again.revoked_at, revoked.revoked_at, 'the first revocation time is kept');
    assert.match(okText(await db.call(['key', 'revoke', id])), new RegExp(`Revoked key ${key.slice(0, 12)}\\.\\.\\.${key.slice(-4)}`));
    const list = okJson(await db.call(['key', 'list', '--account', account, '--json']));
    assert.equal(list.keys[1].revoked_at, revoked.revoked_at);
    assert.equal(list.keys[0].revoked_at, null);
    assert.match(okText(await db.call(['key', 'list', '--account', account])), new RegExp(`revoked ${revoked.revoked_at}`));
  });

  it('key revoke refuses an unknown or malformed id; usage error without one', async () => {
    const before = dump(db.file);
    fails(await db.call(['key', 'revoke', '0f0f0f0f-0000-4000-8000-000000000000', '--json']), 1, [/no key with id 0f0f0f0f-0000-4000-8000-000000000000/]);
    fails(await db.call(['key', 'revoke', 'nope']), 1, [/key id "nope" is not a UUID/]);
    fails(await db.call(['key', 'revoke']), 2, [/KEY_ID/]);
    fails(await db.call(['key', 'revoke', created[0]!.id, 'extra']), 2, [/too many arguments/]);
    assert.equal(dump(db.file), before);
  });

  it('the full key appears nowhere but in key create output: not in lists, not in errors (D20)', () => {
    const key = created[0]!.key;
    // Operators paste a key where an id belongs: the error must not echo it.
    fails(db.run(['key', 'revoke', key]), 1, [/not a UUID/]);
    fails(db.run(['key', 'set-limit', key, '5']), 1, [/not a UUID/]);
    fails(db.run(['key', 'list', '--account', key, '--json']), 1, [/not a UUID/]);
    fails(db.run(['origin', 'add', '--account', key, '--country', 'sg', 'https://www.example.com']), 1, []);
    fails(db.run(['key', 'create', '--account', account, '--country', key, '--label', 'x']), 1, [/unknown country/]);
    fails(db.run([key]), 2, [/unknown command/]);
    fails(db.run(['key', 'list', '--account', account, key]), 2, []);
    // Every run of this suite, spawned or in-process.
    assert.ok(db.transcript.length > 20);
    for (const [i, entry] of db.transcript.entries()) {
      if (creations.has(i)) continue;
      for (const { key: k } of created) {
        assert.ok(!entry.stdout.includes(k) && !entry.stderr.includes(k), `"${entry.args.join(' ').replace(k, '<key>')}" printed a full key`);
        // Not even most of it: at most the display prefix and the last four.
        assert.ok(!entry.stderr.includes(k.slice(0, 20)), `"${entry.args.join(' ').replace(k, '<key>')}" printed most of a key: ${entry.stderr}`);
      }
    }
  });
});

describe('origin add, remove, list', () => {
  let db: CliDatabase;
  let account: string;
  before(async () => {
    db = tempDatabase();
    account = okJson(await db.call(['account', 'create', '--name', 'Origins Ltd', '--json'])).id;
  });
  after(() => db.remove());

  it('origin add stores the normalised origin; adding it again is not an error', async () => {
    assert.deepEqual(okJson(db.run(['origin', 'add', '--account', account, '--country', 'sg', 'HTTPS://WWW.Example.COM:443/', '--json'])), {
      account_id: account, country: 'sg', origin: 'https://www.example.com', added: true,
    });
    const before = dump(db.file);
    assert.deepEqual(okJson(await db.call(['origin', 'add', '--account', account, '--country', 'SG', 'https://www.example.com', '--json'])), {
      account_id: account, country: 'sg', origin: 'https://www.example.com', added: false,
    });
    assert.equal(dump(db.file), before, 'no duplicate row');
    assert.match(okText(await db.call(['origin', 'add', '--account', account, '--country', 'my', 'https://www.example.com'])), /Allowed https:\/\/www\.example\.com for my/);
    assert.match(okText(await db.call(['origin', 'add', '--account', account, '--country', 'sg', 'http://localhost:5173'])), /Allowed http:\/\/localhost:5173 for sg/);
  });

  it('origin list --json: every registration with country, origin and created_at', async () => {
    const list = okJson(db.run(['origin', 'list', '--account', account, '--json']));
    assert.deepEqual(Object.keys(list), ['origins']);
    for (const o of list.origins) {
      assert.deepEqual(Object.keys(o), ['country', 'origin', 'created_at']);
      assert.match(o.created_at, ISO);
    }
    assert.deepEqual(list.origins.map((o: { country: string; origin: string }) => `${o.country} ${o.origin}`), [
      'my https://www.example.com', 'sg http://localhost:5173', 'sg https://www.example.com',
    ]);
    const human = okText(await db.call(['origin', 'list', '--account', account]));
    assert.match(human, /^COUNTRY\s+ORIGIN\s+ADDED\n/);
    assert.equal(human.trimEnd().split('\n').length, 4);
  });

  it('origin add refuses malformed origins, unknown countries and accounts, writing nothing', async () => {
    const before = dump(db.file);
    const add = (origin: string, country = 'sg') => db.call(['origin', 'add', '--account', account, '--country', country, origin, '--json']);
    fails(await add('https://www.example.com/shop'), 1, [/malformed origin/, /path, query or fragment/, /www\.example\.com\/shop/]);
    fails(await add('https://www.example.com?x=1'), 1, [/malformed origin/]);
    fails(await add('http://www.example.com'), 1, [/malformed origin/, /must use https/]);
    fails(await add('https://*.example.com'), 1, [/malformed origin/, /wildcard/]);
    fails(await add('*'), 1, [/wildcard/]);
    fails(await add('null'), 1, [/"null"/]);
    fails(await add('ftp://files.example.com'), 1, [/not an origin/]);
    fails(await add('www.example.com'), 1, [/not an origin/]);
    fails(await add('https://www.example.com:99999'), 1, [/not an origin/]);
    fails(await add('https://user:pw@www.example.com'), 1, [/malformed origin/]);
    fails(await add('https://shop.example.com', 'xx'), 1, [/unknown country "xx"/]);
    fails(await db.call(['origin', 'add', '--account', '0f0f0f0f-0000-4000-8000-000000000000', '--country', 'sg', 'https://a.example.com']), 1, [/no account/]);
    fails(await db.call(['origin', 'add', '--account', account, '--country', 'sg']), 2, [/ORIGIN/]);
    fails(await db.call(['origin', 'add', '--account', account, 'https://a.example.com']), 2, [/--country/]);
    fails(await db.call(['origin', 'add', '--country', 'sg', 'https://a.example.com']), 2, [/--account/]);
    assert.equal(dump(db.file), before);
  });

  it('origin remove takes any spelling of the origin, and only for that country', async () => {
    assert.deepEqual(okJson(db.run(['origin', 'remove', '--account', account, '--country', 'sg', 'https://WWW.EXAMPLE.COM:443', '--json'])), {
      account_id: account, country: 'sg', origin: 'https://www.example.com', removed: true,
    });
    const list = okJson(await db.call(['origin', 'list', '--account', account, '--json']));
    assert.deepEqual(list.origins.map((o: { country: string; origin: string }) => `${o.country} ${o.origin}`), ['my https://www.example.com', 'sg http://localhost:5173']);
    const before = dump(db.file);
    fails(await db.call(['origin', 'remove', '--account', account, '--country', 'sg', 'https://www.example.com', '--json']), 1, [/not registered/, /https:\/\/www\.example\.com/]);
    fails(await db.call(['origin', 'remove', '--account', account, '--country', 'sg', 'https://www.example.com/a']), 1, [/malformed origin/]);
    fails(await db.call(['origin', 'remove', '--account', account, '--country', 'zz', 'https://www.example.com']), 1, [/unknown country/]);
    assert.equal(dump(db.file), before);
    assert.match(okText(await db.call(['origin', 'remove', '--account', account, '--country', 'my', 'https://www.example.com'])), /Removed https:\/\/www\.example\.com for my/);
  });

  it('origin list refuses an unknown account; says so when the list is empty', async () => {
    fails(await db.call(['origin', 'list', '--account', '0f0f0f0f-0000-4000-8000-000000000000']), 1, [/no account/]);
    fails(await db.call(['origin', 'list']), 2, [/--account/]);
    const empty = okJson(await db.call(['account', 'create', '--name', 'Empty', '--json'])).id;
    assert.deepEqual(okJson(await db.call(['origin', 'list', '--account', empty, '--json'])), { origins: [] });
    assert.match(okText(await db.call(['origin', 'list', '--account', empty])), /No browser origins registered/);
  });
});

describe('usage and configuration errors', () => {
  let db: CliDatabase;
  before(() => (db = tempDatabase({ missing: true })));
  after(() => db.remove());

  it('exit 2 with one line on stderr for usage errors', async () => {
    fails(db.run(['frobnicate']), 2, [/unknown command 'frobnicate'/, /--help/]);
    fails(await db.call(['key', 'frob']), 2, [/unknown command 'frob'/]);
    fails(await db.call(['migrate', '--bogus']), 2, [/unknown option '--bogus'/]);
    fails(await db.call(['migrate', 'extra']), 2, [/too many arguments/]);
    fails(await db.call(['import']), 2, [/FILE/]);
  });

  it('exit 2 when the command or sub-command is missing', async () => {
    fails(await db.call([]), 2, [/missing command/, /listings-api --help/]);
    fails(await db.call(['key']), 2, [/missing command/, /listings-api key --help/]);
    fails(await db.call(['origin']), 2, [/missing command/, /listings-api origin --help/]);
  });

  it('--help and help exit 0 with the usage on stdout', async () => {
    const help = okText(db.run(['--help']));
    assert.match(help, /^Usage: listings-api/);
    for (const command of ['serve', 'migrate', 'demo', 'account', 'key', 'origin', 'import']) assert.match(help, new RegExp(`\\n  ${command}\\b`));
    assert.match(okText(await db.call(['key', '--help'])), /set-limit/);
    assert.match(okText(await db.call(['help'])), /^Usage: listings-api/);
  });

  it('a bad configuration exits 1 naming the variable, without echoing a password', async () => {
    const secret = 'Sup3rS3cret';
    const line = fails(db.run(['migrate', '--json'], undefined, { DATABASE_URL: `mysql://admin:${secret}@db.internal/listings` }), 1, [/DATABASE_URL/]);
    assert.ok(!line.includes(secret), line);
    const redis = fails(await db.call(['migrate'], undefined, { REDIS_URL: `http://default:${secret}@cache:6379` }), 1, [/REDIS_URL/]);
    assert.ok(!redis.includes(secret), redis);
    fails(await db.call(['key', 'list', '--account', '0f0f0f0f-0000-4000-8000-000000000000'], undefined, { RATE_LIMIT_PER_MINUTE: '0' }), 1, [/RATE_LIMIT_PER_MINUTE/]);
    fails(await db.call(['migrate'], undefined, { COUNTRIES: 'sg,xx' }), 1, [/COUNTRIES/, /"xx"/]);
    assert.ok(!existsSync(db.file), 'nothing was written: not even the database file');
  });
});

describe('help: required options marked, an example for every command; usage errors point at the command\'s own help', () => {
  let db: CliDatabase;
  before(() => (db = tempDatabase({ missing: true })));
  after(() => db.remove());

  /** Every command, with the options OPERATIONS makes required. */
  const COMMANDS: Array<[string, string[]]> = [
    ['serve', []], ['migrate', []], ['demo', []],
    ['account create', ['--name']], ['account list', []],
    ['key create', ['--account', '--country', '--label']], ['key list', ['--account']], ['key revoke', []], ['key set-limit', []],
    ['origin add', ['--account', '--country']], ['origin remove', ['--account', '--country']], ['origin list', ['--account']],
    ['user create', ['--account', '--email']], ['user list', ['--account']], ['user set-password', ['--email']],
    ['webhook add', ['--account', '--country']], ['webhook list', ['--account']], ['webhook remove', []], ['webhook test', []],
    ['webhook enable', []], ['webhook rotate-secret', []],
    ['import', []],
  ];

  it('every command\'s --help (exit 0, stdout) says which options are required and shows an example', async () => {
    for (const [command, required] of COMMANDS) {
      const help = okText(await db.call([...command.split(' '), '--help']), command);
      assert.ok(help.startsWith(`Usage: listings-api ${command} `), `${command}: ${help}`);
      const options = help.split('\n').filter((line) => /^ {2}-/.test(line));
      for (const line of options) {
        const flag = /--[a-z-]+/.exec(line)![0];
        assert.equal(line.endsWith('(required)'), required.includes(flag), `${command}: ${line}`);
      }
      for (const flag of required) assert.ok(options.some((line) => line.includes(flag)), `${command}: ${flag} listed`);
      // Arguments (KEY_ID, ORIGIN, FILE) are required too, and say so.
      for (const line of help.split('\n').filter((l) => /^ {2}[A-Z_]+ /.test(l))) assert.ok(line.endsWith('(required)'), `${command}: ${line}`);
      assert.match(help, new RegExp(`\nExamples?:\n  \\$ (\\S+=\\S+ )?listings-api ${command}\\b`), command);
    }
    // Spawned once: the help reaches the terminal's stdout.
    assert.match(okText(db.run(['key', 'create', '--help'])), /--label <text>\s+label \(required\)\n[\s\S]*Example:\n {2}\$ listings-api key create --account \S+ --country sg --label website\n/);
  });

  it('the examples name the demo organisation, so they work after `listings-api demo`', () => {
    assert.equal(EXAMPLE_ACCOUNT, DEMO_ORG_ID);
  });

  it('a usage error is one line naming the problem and the command\'s own --help (exit 2)', async () => {
    // As the shell sees it, exactly.
    assert.equal(
      fails(db.run(['key', 'list']), 2, []),
      "listings-api: error: required option '--account <id>' not specified (see listings-api key list --help)",
    );
    for (const [command, required] of COMMANDS) {
      for (const flag of required) {
        const args = [...command.split(' '), ...required.filter((f) => f !== flag).flatMap((f) => [f, 'x'])];
        fails(await db.call(args), 2, [new RegExp(`^listings-api: error: required option '${flag} <[a-z]+>' not specified \\(see listings-api ${command} --help\\)$`)], args.join(' '));
      }
    }
    fails(await db.call(['key', 'revoke', '--colour', 'red']), 2, [/^listings-api: error: unknown option '--colour' \(see listings-api key revoke --help\)$/]);
    fails(await db.call(['key', 'set-limit', '0f0f0f0f-0000-4000-8000-000000000000']), 2, [/^listings-api: error: missing required argument 'PER_MINUTE' \(see listings-api key set-limit --help\)$/]);
    fails(await db.call(['origin', 'list', '--account', 'x', 'extra']), 2, [/^listings-api: error: too many arguments for 'list'\. .* \(see listings-api origin list --help\)$/]);
    fails(await db.call(['key', 'frob']), 2, [/^listings-api: error: unknown command 'frob' \(see listings-api key --help\)$/]);
    fails(await db.call(['frobnicate']), 2, [/^listings-api: error: unknown command 'frobnicate' \(see listings-api --help\)$/]);
    fails(await db.call(['user']), 2, [/^listings-api: error: missing command \(see listings-api user --help\)$/]);
    assert.ok(!existsSync(db.file), 'usage errors open no database');
  });
});

describe('a missing SQLite database: only migrate, serve and demo create one, saying so (issue 30 item 6)', () => {
  let db: CliDatabase;
  before(() => (db = tempDatabase({ missing: true })));
  after(() => db.remove());

  const ID = '0f0f0f0f-0000-4000-8000-000000000000';
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const NOTICE_END = '; a server started from another folder or with another DATABASE_URL does not use it\n';

  /** `listings-api ARGS` run from `cwd` with DATABASE_URL unset: the default, ./data/listings.db there. */
  function runIn(cwd: string, args: string[]): CliResult {
    const result = spawnSync(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: '' }, encoding: 'utf8' });
    return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, json: undefined };
  }

  /** A `--json` result with a notice: exit 0, one JSON object on stdout and nothing else. */
  function jsonWithNotice(result: CliResult, notice: string): any {
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, notice);
    assert.equal(result.stdout.trimEnd().split('\n').length, 1, result.stdout);
    const value = JSON.parse(result.stdout) as object;
    assert.equal(result.stdout, `${JSON.stringify(value)}\n`);
    return value;
  }

  it('every other command exits 1 with one line naming the path and DATABASE_URL, and creates nothing', async () => {
    const file = join(db.dir, 'not-yet', 'listings.db');
    const env = { DATABASE_URL: `file:${file}` };
    const ndjson = join(db.dir, 'listings.ndjson');
    writeFileSync(ndjson, '');
    const commands = [
      ['account', 'create', '--name', 'Acme'], ['account', 'list'],
      ['key', 'create', '--account', ID, '--country', 'sg', '--label', 'site'], ['key', 'list', '--account', ID],
      ['key', 'revoke', ID], ['key', 'set-limit', ID, '600'],
      ['origin', 'add', '--account', ID, '--country', 'sg', 'https://www.example.com'],
      ['origin', 'remove', '--account', ID, '--country', 'sg', 'https://www.example.com'], ['origin', 'list', '--account', ID],
      ['user', 'create', '--account', ID, '--email', 'dev@example.com', '--generate-password'], ['user', 'list', '--account', ID],
      ['user', 'set-password', '--email', 'dev@example.com', '--generate-password'],
      ['import', ndjson],
    ];
    const line = new RegExp(`^listings-api: no database at ${escape(file)} \\(DATABASE_URL=file:${escape(file)}\\): set DATABASE_URL to the database the server uses, or create a new one with "listings-api migrate"$`);
    for (const args of commands) {
      for (const json of [[], ['--json']]) fails(await db.call([...args, ...json], undefined, env), 1, [line], [...args, ...json].join(' '));
    }
    // As the shell sees it.
    fails(db.run(['key', 'revoke', ID, '--json'], undefined, env), 1, [line]);
    assert.ok(!existsSync(join(db.dir, 'not-yet')), 'not even its folder');
  });

  it('from another folder, DATABASE_URL unset: key revoke names ./data/listings.db there instead of "no key with id" on a new database', () => {
    const folder = join(db.dir, 'elsewhere');
    mkdirSync(folder);
    const result = runIn(folder, ['key', 'revoke', ID]);
    fails(result, 1, [
      new RegExp(`^listings-api: no database at ${escape(join(realpathSync(folder), 'data', 'listings.db'))} `),
      /\(DATABASE_URL is unset: the default file:\.\/data\/listings\.db, relative to the current folder\)/,
    ]);
    assert.ok(!existsSync(join(folder, 'data')), 'nothing created there');
  });

  it('migrate creates it with a notice on stderr naming the path; --json stays one object on stdout; the next run says nothing', () => {
    const file = join(db.dir, 'new', 'listings.db');
    const env = { DATABASE_URL: `file:${file}` };
    const first = jsonWithNotice(db.run(['migrate', '--json'], undefined, env), `notice: creating a new, empty SQLite database at ${file} (DATABASE_URL=file:${file})${NOTICE_END}`);
    assert.ok(first.applied.length >= 1);
    assert.ok(existsSync(file));
    assert.deepEqual(okJson(db.run(['migrate', '--json'], undefined, env)), { applied: [] });
    assert.deepEqual(okJson(db.run(['account', 'list', '--json'], undefined, env)), { accounts: [] }, 'the others work on it now');
  });

  it('demo from another folder, DATABASE_URL unset: says it creates a new database there, and which', () => {
    const folder = join(db.dir, 'other-checkout');
    mkdirSync(folder);
    const file = join(realpathSync(folder), 'data', 'listings.db');
    const demo = jsonWithNotice(
      runIn(folder, ['demo', '--json']),
      `notice: creating a new, empty SQLite database at ${file} (DATABASE_URL is unset: the default file:./data/listings.db, relative to the current folder)${NOTICE_END}`,
    );
    assert.equal(demo.created, true);
    assert.equal(parseKey(demo.key), 'sg');
    const human = runIn(folder, ['demo']);
    assert.equal(human.status, 0);
    assert.equal(human.stderr, '', 'an existing database: no notice');
    assert.match(human.stdout, /exists already/);
    assert.equal(rows<{ n: number }>(file, 'SELECT count(*) AS n FROM api_keys')[0]!.n, 2);
  });
});
