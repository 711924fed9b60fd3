import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { callCli } from '../support/cli.js';
import { createScratchPostgres, type TestDatabase } from '../support/database.js';
import { startTestServer, TestClock, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import { dump, fails, okJson, okText, rows, tempDatabase, type CliDatabase } from './helpers.js';

/**
 * `listings-api import` (OPERATIONS "Import format"): upserts from a file or stdin, and all or
 * nothing: any bad line exits 1 naming the line and the field, writing nothing. The real bin is
 * spawned for the `--json` output, each exit status and stdin (`import -`); the rest runs the same
 * command line in-process (`db.call`), from files.
 */

const ORG = '0a000000-0000-4000-8000-00000000000a';
const LANDLORD = '0b000000-0000-4000-8000-00000000000b';

let serial = 0;
/** A valid import line (object) for an owner; fields override. */
function listing(owner: string, overrides: Record<string, unknown> = {}): Record<string, unknown> & { id: string } {
  serial++;
  return {
    id: randomUUID(),
    owner_account_id: owner,
    country: 'sg',
    building_id: '11111111-1111-4111-8111-111111111111',
    title: `Unit ${serial}`,
    size_sqft: 800 + serial,
    usage_types: ['Retail', 'Shop'],
    price: 6.5,
    currency: 'SGD',
    status: 'active',
    images: ['https://img.example.com/a.jpg', 'https://img.example.com/b.jpg'],
    cover_image_index: 1,
    url: `https://www.example.com/listings/${serial}`,
    created_at: '2026-06-01T00:00:00Z',
    ...overrides,
  } as Record<string, unknown> & { id: string };
}

const ndjson = (lines: Array<Record<string, unknown> | string>) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';

async function setUp(db: CliDatabase): Promise<void> {
  okJson(await db.call(['account', 'create', '--name', 'Import Org', '--id', ORG, '--json']));
  okJson(await db.call(['account', 'create', '--name', 'Import Landlord', '--kind', 'individual', '--id', LANDLORD, '--json']));
}

/** `import FILE --json` in-process, of `text` written to a file of the suite's folder. */
function importText(db: CliDatabase, text: string, name = 'input.ndjson') {
  const file = join(db.dir, name);
  writeFileSync(file, text);
  return db.call(['import', file, '--json']);
}

describe('import: a file over a megabyte', () => {
  let db: CliDatabase;
  before(async () => {
    db = tempDatabase();
    await setUp(db);
  });
  after(() => db.remove());

  it('a file over a megabyte is imported whole (read and checked by a worker thread)', async () => {
    const lines = Array.from({ length: 1_800 }, (_, i) => listing(ORG, { title: `Big file ${i} ${'x'.repeat(300)}` }));
    const text = ndjson(lines);
    assert.ok(text.length > 1024 * 1024);
    assert.deepEqual(okJson(await importText(db, text, 'big.ndjson')), { inserted: 1_800, updated: 0, unchanged: 0 });
    const stored = rows(db.file, 'select id, title, org_id from listings where title like ?', 'Big file 1799 %');
    assert.deepEqual(stored, [{ id: lines[1_799]!.id, title: lines[1_799]!.title, org_id: ORG }]);
    assert.deepEqual(okJson(db.run(['import', '-', '--json'], text)), { inserted: 0, updated: 1_800, unchanged: 1_800 }, 'the same lines on standard input');
  });
});

describe('import: upserts', () => {
  let db: CliDatabase;
  let server: TestServer;
  let key: string;
  const a = listing(ORG);
  const b = listing(ORG, { country: 'my', currency: 'MYR' });
  const c = listing(LANDLORD, { images: [], cover_image_index: 0 });

  before(async () => {
    db = tempDatabase();
    await setUp(db);
    server = await startTestServer({ DATABASE_URL: db.url }, new TestClock(Date.now()));
    key = (await server.createKey(ORG, 'sg')).key;
  });
  after(async () => {
    await server.close();
    db.remove();
  });

  it('imports a file: inserted count, org_id derived from the owner (D1), defaults filled', async () => {
    const file = join(db.dir, 'first.ndjson');
    const minimal = { id: randomUUID(), owner_account_id: ORG, country: 'uk', building_id: randomUUID(), usage_types: ['Clinic'], currency: 'GBP', status: 'active', url: 'https://www.example.com/m' };
    writeFileSync(file, ndjson([a, b, c, minimal]));
    assert.deepEqual(okJson(db.run(['import', file, '--json'])), { inserted: 4, updated: 0, unchanged: 0 });
    const stored = rows<Record<string, unknown>>(db.file, 'SELECT * FROM listings ORDER BY title');
    assert.equal(stored.length, 4);
    const byId = new Map(stored.map((r) => [r.id, r]));
    assert.equal(byId.get(a.id)!.org_id, ORG);
    assert.equal(byId.get(c.id)!.org_id, null, 'an individual landlord: org_id null');
    assert.equal(byId.get(a.id)!.created_at, '2026-06-01T00:00:00.000Z');
    const m = byId.get(minimal.id)!;
    assert.deepEqual(
      [m.view_count, m.inquiry_count, m.images, m.cover_image_index, m.is_takeover, m.is_featured, m.title, m.price, m.expiry_date],
      [0, 0, '[]', 0, 0, 0, null, null, null],
    );
    assert.ok(Math.abs(Date.parse(String(m.created_at)) - Date.now()) < 60_000, 'created_at defaults to the import time');
  });

  it('re-importing updates; the human output counts both', async () => {
    const file = join(db.dir, 'second.ndjson');
    const d = listing(ORG);
    writeFileSync(file, ndjson([{ ...a, title: 'Renamed', price: 7 }, d]));
    assert.equal(okText(await db.call(['import', file])), 'Imported: 1 inserted, 1 updated (0 of them unchanged).\n');
    assert.deepEqual(rows(db.file, 'SELECT title, price FROM listings WHERE id = ?', a.id), [{ title: 'Renamed', price: 7 }]);
  });

  it("reads stdin with '-'; blank lines and CRLF line ends are fine; an empty input imports nothing", async () => {
    const e = listing(ORG);
    assert.deepEqual(okJson(db.run(['import', '-', '--json'], `\r\n${JSON.stringify(e)}\r\n\r\n   \n${JSON.stringify({ ...b, title: 'B2' })}`)), { inserted: 1, updated: 1, unchanged: 0 });
    assert.deepEqual(rows(db.file, 'SELECT title FROM listings WHERE id = ?', b.id), [{ title: 'B2' }]);
    const before = dump(db.file);
    assert.deepEqual(okJson(db.run(['import', '-', '--json'], '')), { inserted: 0, updated: 0, unchanged: 0 });
    const empty = join(db.dir, 'empty.ndjson');
    writeFileSync(empty, '\n\n');
    assert.deepEqual(okJson(await db.call(['import', empty, '--json'])), { inserted: 0, updated: 0, unchanged: 0 });
    assert.equal(dump(db.file), before);
  });

  it('a listing re-imported as leased disappears from the API at once; active again brings it back', async () => {
    const visible = async () => {
      const page = await server.get('/v1/listings?per_page=100', { key });
      assert.equal(page.status, 200, page.body);
      return page.json.items.map((item: { id: string }) => item.id) as string[];
    };
    assert.ok((await visible()).includes(a.id));
    assert.equal((await server.get(`/v1/listings/${a.id}`, { key })).status, 200);

    assert.deepEqual(okJson(await importText(db, ndjson([{ ...a, status: 'leased' }]))), { inserted: 0, updated: 1, unchanged: 0 });
    assert.ok(!(await visible()).includes(a.id), 'leased: not listed');
    const gone = await server.get(`/v1/listings/${a.id}`, { key });
    assert.equal(gone.status, 404);
    assert.equal(gone.json.error, 'not_found');

    okJson(await importText(db, ndjson([{ ...a, status: 'active' }])));
    assert.ok((await visible()).includes(a.id));
  });

  it('a file that starts with a UTF-8 byte-order mark is read like any other (issue 8, item 11)', async () => {
    const first = listing(ORG);
    assert.deepEqual(okJson(await importText(db, `\uFEFF${ndjson([first, listing(ORG)])}`, 'bom.ndjson')), { inserted: 2, updated: 0, unchanged: 0 });
    assert.equal(rows(db.file, 'SELECT title FROM listings WHERE id = ?', first.id).length, 1);
  });

  it('refuses a missing file (exit 1) and a missing FILE argument (exit 2)', () => {
    fails(db.run(['import', join(db.dir, 'nope.ndjson'), '--json']), 1, [/cannot read/, /nope\.ndjson/]);
    fails(db.run(['import']), 2, [/FILE/]);
  });
});

describe('import: all or nothing', () => {
  let db: CliDatabase;
  let baseline: string;
  /** Already stored: the good lines of every bad file update it, so a partial write would show. */
  const existing = listing(ORG, { title: 'Original title' });

  before(async () => {
    db = tempDatabase();
    await setUp(db);
    assert.deepEqual(okJson(await importText(db, ndjson([existing, listing(LANDLORD)]))), { inserted: 2, updated: 0, unchanged: 0 });
    baseline = dump(db.file);
  });
  after(() => db.remove());

  /**
   * Two good lines (an update and an insert), then `bad`, as a file (in-process) or on stdin
   * (spawned); expects exit 1 and no write.
   */
  async function refused(
    label: string,
    bad: Record<string, unknown> | string,
    field: string | undefined,
    words?: RegExp,
    options: { line?: number; lines?: Array<Record<string, unknown> | string>; stdin?: boolean; trailingNewline?: boolean } = {},
  ): Promise<void> {
    const lines = options.lines ?? [{ ...existing, title: 'Must not be written' }, listing(ORG), bad];
    const line = options.line ?? lines.indexOf(bad) + 1;
    let text = ndjson(lines);
    if (options.trailingNewline === false) text = text.slice(0, -1);
    let result;
    if (options.stdin) {
      result = db.run(['import', '-', '--json'], text);
    } else {
      const file = join(db.dir, 'bad.ndjson');
      writeFileSync(file, text);
      result = await db.call(['import', file, '--json']);
    }
    const patterns = [/import failed, nothing was written/, new RegExp(`\\bline ${line}\\b`)];
    if (field !== undefined) patterns.push(new RegExp(`field "${field}"`));
    if (words) patterns.push(words);
    fails(result, 1, patterns, label);
    assert.equal(dump(db.file), baseline, `${label}: the database changed`);
  }

  it('bad JSON and non-objects', async () => {
    await refused('bad JSON', '{"id": "x", ', undefined, /not valid JSON/);
    await refused('not JSON at all', 'hello', undefined, /not valid JSON/);
    await refused('an array', '[1, 2, 3]', undefined, /expected a JSON object/);
    await refused('a string', '"listing"', undefined, /expected a JSON object/);
  });

  it('an unknown field', async () => {
    await refused('unknown field', listing(ORG, { colour: 'red' }), 'colour', /not a field/);
  });

  it('a wrong type in each typed field', async () => {
    const wrong: Array<[string, unknown]> = [
      ['id', 12345], ['building_id', 'building-7'], ['org_id', 42], ['owner_account_id', true], ['country', 7],
      ['title', 5], ['size_sqft', '1000'], ['usage_types', 'Retail'], ['price', '6.50'], ['currency', 'sgd'],
      ['is_takeover', 'yes'], ['is_featured', 1], ['status', 'ACTIVE'], ['expiry_date', 20261001], ['available_from', true],
      ['min_lease_tenure', 12], ['view_count', 1.5], ['inquiry_count', -1], ['building_name', ['x']], ['street_address', {}],
      ['images', 'https://img.example.com/a.jpg'], ['cover_image_index', '1'], ['url', 'not a url'], ['created_at', 'yesterday'],
    ];
    for (const [field, value] of wrong) await refused(`${field}: ${JSON.stringify(value)}`, listing(ORG, { [field]: value }), field);
  });

  it('usage_types outside the taxonomy, or a sub-type of the wrong main type', async () => {
    await refused('unknown main type', listing(ORG, { usage_types: ['Hotel'] }), 'usage_types', /"Hotel" is not a main usage type/);
    await refused('wrong main type', listing(ORG, { usage_types: ['Retail', 'Cafe'] }), 'usage_types', /"Cafe" is not a sub-type of "Retail"/);
  });

  it('cover_image_index outside images', async () => {
    await refused('cover out of range', listing(ORG, { cover_image_index: 2 }), 'cover_image_index', /0 to 1/);
    await refused('cover without images', listing(ORG, { images: [], cover_image_index: 1 }), 'cover_image_index');
  });

  it('an unknown owner, and an org_id that contradicts the owner (D1)', async () => {
    const stranger = randomUUID();
    await refused('unknown owner', listing(stranger), 'owner_account_id', new RegExp(`no account ${stranger}`));
    await refused('org_id for an individual', listing(LANDLORD, { org_id: LANDLORD }), 'org_id', /null/);
    await refused('org_id of another account', listing(ORG, { org_id: LANDLORD }), 'org_id', new RegExp(ORG));
  });

  it('a bad country, a bad date, an impossible date', async () => {
    await refused('bad country', listing(ORG, { country: 'xx' }), 'country', /"xx"/);
    await refused('upper-case country', listing(ORG, { country: 'SG' }), 'country');
    await refused('bad date', listing(ORG, { expiry_date: 'next tuesday' }), 'expiry_date', /next tuesday/);
    await refused('impossible date', listing(ORG, { available_from: '2026-02-30' }), 'available_from', /2026-02-30/);
    await refused('impossible time', listing(ORG, { created_at: '2026-01-01T24:00:00Z' }), 'created_at');
  });

  it('a missing required field', async () => {
    // Every required field is covered by the unit tests (import-parse); here one of each kind of reader.
    for (const field of ['id', 'usage_types', 'url']) {
      const line = listing(ORG);
      delete line[field];
      await refused(`missing ${field}`, line, field, /is required/);
    }
  });

  it('a non-https image', async () => {
    await refused('http image', listing(ORG, { images: ['https://img.example.com/a.jpg', 'http://img.example.com/b.jpg'] }), 'images', /entry 1 is not an absolute https URL/);
  });

  it('the same id twice in one file', async () => {
    const twice = listing(ORG);
    await refused('duplicate id', { ...twice, title: 'again' }, 'id', /already on line 2/, { lines: [listing(ORG), twice, listing(ORG), { ...twice, title: 'again' }], line: 4 });
  });

  it('a bad line first, after many good lines, as the last line (with or without a final newline), and from stdin', async () => {
    const bad = listing(ORG, { country: 'zz' });
    await refused('first line', bad, 'country', undefined, { lines: [bad, listing(ORG), { ...existing, title: 'Must not be written' }] });
    const many = Array.from({ length: 300 }, () => listing(ORG));
    await refused('after 300 good lines', bad, 'country', undefined, { lines: [{ ...existing, title: 'Must not be written' }, ...many, bad, listing(ORG)], line: 302 });
    await refused('last line, no final newline', bad, 'country', undefined, { trailingNewline: false });
    await refused('last line, final newline', bad, 'country');
    await refused('stdin', bad, 'country', undefined, { stdin: true });
    // Blank lines still count as lines, so the number is the one an editor shows.
    await refused('after blank lines', bad, 'country', undefined, { lines: [{ ...existing, title: 'Must not be written' }, '', '', bad], line: 4 });
  });

  it("a file's control characters never reach the operator's terminal: they are shown escaped (issue 8, item 11)", async () => {
    for (const [bad, shown] of [
      [JSON.stringify({ ...listing(ORG), '\u001b[2J\u001b[31mevil': 1 }), /line 2, field "\\u001b\[2J\\u001b\[31mevil": is not a field of a listing/],
      ['\u001b]0;owned\u0007{', /line 2: not valid JSON .*\\u001b\]0;owned\\u0007/],
      [JSON.stringify({ ...listing(ORG), country: '\u009b31m\u202eus' }), /line 2, field "country": .*\\u009b31m\\u202eus/],
    ] as const) {
      const file = join(db.dir, 'escapes.ndjson');
      writeFileSync(file, ndjson([listing(ORG), bad]));
      const result = db.run(['import', file]); // spawned: these are the bytes a terminal would get
      assert.equal(result.status, 1);
      // eslint-disable-next-line no-control-regex -- control characters are what must not be printed
      assert.doesNotMatch(result.stderr, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/, JSON.stringify(result.stderr));
      assert.match(result.stderr, shown);
      assert.equal(dump(db.file), baseline);
    }
  });

  it('names the first bad line when there are several', async () => {
    const unknownOwner = listing(randomUUID());
    await refused('unknown owner before a syntax error', unknownOwner, 'owner_account_id', undefined, {
      lines: [listing(ORG), unknownOwner, listing(ORG), '{broken', listing(ORG, { country: 'xx' })], line: 2,
    });
    await refused('syntax error before an unknown owner', '{broken', undefined, /not valid JSON/, {
      lines: [listing(ORG), '{broken', listing(randomUUID())], line: 2,
    });
    await refused('two field errors on one line: one named', listing(ORG, { country: 'xx', url: 'nope' }), undefined, /field "(country|url)"/);
    // Standard input is read by a worker thread: the same first line is named.
    const stranger = listing(randomUUID());
    await refused('stdin: unknown owner before a syntax error', stranger, 'owner_account_id', undefined, {
      lines: [listing(ORG), stranger, listing(ORG), '{broken'], line: 2, stdin: true,
    });
  });

  it('a file over a megabyte (read and checked by a worker thread): the first bad line, in any batch, and nothing written', async () => {
    // Lines of about 750 bytes: 1,800 of them make a file of 1.3 MB, over the CLI's threshold.
    const padded = () => listing(ORG, { title: `Padded ${'x'.repeat(300)}` });
    const many = (n: number) => Array.from({ length: n }, padded);
    const stranger = listing(randomUUID());
    await refused('unknown owner in the second batch, syntax error in the third', stranger, 'owner_account_id', undefined, {
      lines: [{ ...existing, title: 'Must not be written' }, ...many(1_200), stranger, ...many(600), '{broken', ...many(10)], line: 1_202,
    });
    const twice = padded();
    await refused('an id repeated 1,700 lines later', { ...twice, title: 'again' }, 'id', /already on line 5/, {
      lines: [...many(4), twice, ...many(1_700), { ...twice, title: 'again' }], line: 1_706,
    });
    await refused('a bad line after 1,800 good ones', listing(ORG, { country: 'zz' }), 'country', undefined, {
      lines: [...many(1_800), listing(ORG, { country: 'zz' })], line: 1_801,
    });
  });
});

/**
 * On PostgreSQL (issue 29, item 4): the swap's statements grow with the file, and an import is not
 * a request, so DATABASE_STATEMENT_TIMEOUT_MS (there so that a stuck query fails a request) does
 * not bound it; IMPORT_STATEMENT_TIMEOUT_MS does, none by default. A statement cancelled by
 * either is reported on the CLI's one line with the setting that governs it.
 */
describe('import on PostgreSQL: statement timeouts', { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, () => {
  let database: TestDatabase;
  let dir: string;
  /** The command line in-process on the suite's PostgreSQL database, with the default settings unless `env` says otherwise. */
  const call = (args: string[], env: Record<string, string> = {}) => callCli(args, { DATABASE_URL: database.url, ...env });
  /** The result of one query on a connection of its own. */
  const query = async (text: string): Promise<Array<Record<string, unknown>>> => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  };
  /**
   * Runs `fn` while another connection holds `table` locked (every statement that reads it waits),
   * releasing the lock once a statement has waited for it `releaseAfterWaitMs` (by the database's
   * clock) if given, else once `fn` is done.
   */
  const whileLocked = async <T>(table: string, fn: () => Promise<T>, releaseAfterWaitMs?: number): Promise<T> => {
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`lock table ${table} in access exclusive mode`);
      const running = fn();
      if (releaseAfterWaitMs === undefined) {
        const result = await running;
        await holder.query('rollback');
        return result;
      }
      // Ended meanwhile (it gave up waiting, say): what it did is told by the await below.
      let ended = false;
      void running.then(() => (ended = true), () => (ended = true));
      // Real time is the point: the statement must wait longer than its timeout would allow.
      // Counted from when it began waiting, not from the command's start, which a slow machine stretches.
      const waited = async () => ended || (await query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
        and clock_timestamp() - query_start > interval '${releaseAfterWaitMs} milliseconds'`)).length > 0;
      await until(waited, { what: `a statement to wait ${releaseAfterWaitMs} ms for the lock on ${table}`, timeoutMs: 30_000, everyMs: 50 });
      await holder.query('rollback');
      return await running;
    } finally {
      await holder.end();
    }
  };
  const importFile = (name: string, lines: Array<Record<string, unknown>>) => {
    const file = join(dir, name);
    writeFileSync(file, ndjson(lines));
    return file;
  };

  before(async () => {
    database = await createScratchPostgres(process.env.TEST_DATABASE_URL!, `listings_test_${process.pid}_import`);
    dir = mkdtempSync(join(tmpdir(), 'listings-pg-import-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  it('a first import of 10,000 listings into a new database succeeds with the default settings, each listing stamped with its change', async () => {
    // A new database: the change log has no statistics, which once made the swap seek each
    // listing's change by its tenant alone and time out (issue 29, item 4).
    okJson(await call(['account', 'create', '--name', 'Import Org', '--id', ORG, '--json']));
    const file = importFile('first.ndjson', Array.from({ length: 10_000 }, (_, i) => listing(ORG, { title: `First import ${i} ${'x'.repeat(200)}` })));
    assert.deepEqual(okJson(await call(['import', file, '--json']), 'first import'), { inserted: 10_000, updated: 0, unchanged: 0 });
    const [stamped] = await query('select count(*)::int as n from listings l join listing_changes c on c.seq = l.change_seq and c.listing_id = l.id and c.owner_account_id = l.owner_account_id');
    assert.equal(stamped!.n, 10_000);
  });

  it("an import is not bound by DATABASE_STATEMENT_TIMEOUT_MS: it waits for a lock longer than that and succeeds", async () => {
    const file = importFile('waits.ndjson', [listing(ORG, { title: 'Waited for the change log' })]);
    const result = await whileLocked('listing_changes', () => call(['import', file, '--json'], { DATABASE_STATEMENT_TIMEOUT_MS: '100' }), 1000);
    assert.deepEqual(okJson(result, 'import past DATABASE_STATEMENT_TIMEOUT_MS'), { inserted: 1, updated: 0, unchanged: 0 });
  });

  it("an import's statement cancelled by IMPORT_STATEMENT_TIMEOUT_MS: one line that names it, and nothing written", async () => {
    const [before] = await query('select count(*)::int as n from listings');
    const file = importFile('cancelled.ndjson', [listing(ORG, { title: 'Must not be written' }), listing(ORG)]);
    const result = await whileLocked('listing_changes', () => call(['import', file, '--json'], { IMPORT_STATEMENT_TIMEOUT_MS: '200' }));
    fails(result, 1, [/^listings-api: import failed, nothing was written: /, /\bIMPORT_STATEMENT_TIMEOUT_MS \(200 ms\)/, /set it to 0 for no limit/], 'import');
    assert.deepEqual(await query('select count(*)::int as n from listings'), [before]);
  });

  it("another command's statement cancelled by DATABASE_STATEMENT_TIMEOUT_MS: one line that names it", async () => {
    const result = await whileLocked('accounts', () => call(['account', 'list'], { DATABASE_STATEMENT_TIMEOUT_MS: '200' }));
    fails(result, 1, [/^listings-api: a database statement ran past DATABASE_STATEMENT_TIMEOUT_MS \(200 ms\) and was cancelled; raise it$/], 'account list');
  });
});
