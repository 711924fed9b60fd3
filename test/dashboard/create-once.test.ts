import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { FORM_CLAIM_RETAIN_MS } from '../../src/dashboard/forms.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { freshServer } from '../support/world.js';
import { DashboardClient, dev, revealedKey, signedIn, text } from './helpers.js';

/**
 * The create-key form is single-use: reloading the page that shows a new key sends the same form
 * again (and passes CSRF), and must never mint a second key. The full key is not kept to show
 * again (D20), so the answer names the key the form made.
 */
describe('dashboard: a create-key form makes one key, however often it is sent', () => {
  let server: TestServer;
  let accountId: string;
  let client: DashboardClient;

  /** Each test's own world (issue 42): a fresh server and what the tests read on it. */
  async function world(t: TestContext): Promise<void> {
    server = await freshServer(t);
    accountId = await server.createAccount();
    ({ client } = await signedIn(server, accountId));
  }

  const keys = () => server.service.store.keys.listForAccount(accountId);
  const created = async () => (await server.service.store.audit.listForAccount(accountId, 1000)).filter((e) => e.action === 'key.created');
  /** The keys page's create form: its single-use token. */
  const openForm = async (who = client) => {
    await who.get(dev(accountId, 'keys'));
    return who.formToken!;
  };
  const submit = (form: string, fields: Record<string, string | null> = {}, who = client) =>
    who.post(dev(accountId, 'keys'), { label: 'Website', country: 'sg', _form: form, ...fields });

  it('the same form sent twice (a reload of the new key page) makes exactly one key; the second answer says so and names it', async (t) => {
    await world(t);
    const form = await openForm();
    const first = await submit(form);
    assert.equal(first.status, 201);
    const key = revealedKey(first.body);

    const again = await submit(form);
    assert.equal(again.status, 409);
    assert.doesNotMatch(again.body, /id="new-key"/);
    assert.ok(!again.body.includes(key.slice(12, -4)), 'the key is not shown again (D20)');
    const [record] = await keys();
    assert.equal((await keys()).length, 1, 'exactly one key exists');
    assert.equal((await created()).length, 1);
    assert.match(text(again.body), new RegExp(
      `This form was already used to create key ${record!.prefix}…${record!.last4} "Website"\\. A key is shown only once; if you did not copy it, revoke it and create another\\.`,
    ));
    assert.ok(again.body.includes(`<a class="button primary" href="${dev(accountId, 'keys')}">Back to keys</a>`), 'a link back');
    assert.ok(again.body.includes(`href="${dev(accountId, 'keys')}/${record!.id}/revoke"`), 'and one to revoke it');

    // Sent once more, with other fields even: still nothing new.
    assert.equal((await submit(form, { label: 'Another', country: 'sg' })).status, 409);
    assert.equal((await keys()).length, 1);
    // A fresh form (the keys page opened again) makes a new key as usual.
    assert.equal((await submit(await openForm(), { label: 'Second' })).status, 201);
    assert.equal((await keys()).length, 2);
  });

  it('two submissions of one form at the same moment (a double click) make one key', async (t) => {
    await world(t);
    const before = (await keys()).length;
    const form = await openForm();
    const answers = await Promise.all([submit(form, { label: 'Double' }), submit(form, { label: 'Double' })]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [201, 409]);
    assert.equal((await keys()).length, before + 1);
  });

  it('on another instance of the dashboard too: the form is claimed in the shared database', async (t) => {
    await world(t);
    const other = await startTestServer({ DATABASE_URL: server.databaseUrl }, server.clock);
    try {
      const form = await openForm();
      assert.equal((await submit(form, { label: 'Instance A' })).status, 201);
      const before = (await keys()).length;
      // The same browser (same session cookie and tokens) sends the form to the other instance.
      const elsewhere = new DashboardClient(other.dashboardPort!);
      for (const [name, value] of client.cookies) elsewhere.cookies.set(name, value);
      elsewhere.csrf = client.csrf;
      const res = await submit(form, { label: 'Instance A' }, elsewhere);
      assert.equal(res.status, 409);
      assert.match(text(res.body), /This form was already used to create key sg_live_\w{4}…\w{4} "Instance A"/);
      assert.equal((await keys()).length, before);
    } finally {
      await other.close();
    }
  });

  it("a form without its token, with an edited one or another member's, is refused (403) and makes nothing", async (t) => {
    await world(t);
    const before = (await keys()).length;
    const form = await openForm();
    const otherMember = await signedIn(server, accountId);
    const othersForm = await openForm(otherMember.client);
    const edited = form.slice(0, -1) + (form.endsWith('A') ? 'B' : 'A');
    for (const token of [null, '', 'not-a-token', edited, othersForm, `${form}x`]) {
      const res = await submit(form, { _form: token });
      assert.equal(res.status, 403, String(token));
      assert.match(text(res.body), /This form has expired/);
    }
    assert.equal((await keys()).length, before);
    // None of that used the form up.
    assert.equal((await submit(form, { label: 'After refusals' })).status, 201);
  });

  it('the CSRF rules still hold, and a refused submission (CSRF or a bad label) does not use the form up', async (t) => {
    await world(t);
    const before = (await keys()).length;
    const form = await openForm();
    for (const [csrf, headers] of [
      [null, {}],
      ['wrong-token-wrong-token-wrong-token-wrong-t', {}],
      [undefined, { origin: 'https://evil.example' }],
      [undefined, { 'sec-fetch-site': 'cross-site' }],
    ] as Array<[string | null | undefined, Record<string, string>]>) {
      const fields = { label: 'Forged', country: 'sg', _form: form, ...(csrf === undefined ? {} : { _csrf: csrf }) };
      assert.equal((await client.post(dev(accountId, 'keys'), fields, headers)).status, 403);
    }
    const bad = await submit(form, { label: '' });
    assert.equal(bad.status, 400);
    assert.equal((await keys()).length, before);
    assert.equal((await submit(form, { label: 'Fixed label' })).status, 201);
    assert.equal((await keys()).length, before + 1);
  });

  it('used forms are forgotten once they could no longer be sent, and the table holds no key (D20)', async (t) => {
    await world(t);
    // Forms used before: five keys made.
    for (let i = 0; i < 5; i++) assert.equal((await submit(await openForm(), { label: `Earlier ${i}` })).status, 201);
    const rows = () => server.service.store.db.selectFrom('dashboard_forms').selectAll().execute();
    const stored = await rows();
    assert.ok(stored.length >= 5);
    const key = revealedKey((await submit(await openForm(), { label: 'Kept out of the table' })).body);
    assert.ok(!JSON.stringify(await rows()).includes(key.slice(12, -4)));
    assert.ok((await rows()).every((r) => r.account_id === accountId && r.key_id !== null));

    server.clock.advance(FORM_CLAIM_RETAIN_MS + 1000);
    const later = await signedIn(server, accountId); // the earlier sessions have ended by now
    assert.equal((await submit(await openForm(later.client), { label: 'Next day' }, later.client)).status, 201);
    assert.deepEqual((await rows()).map((r) => r.used_at), [new Date(server.clock.now()).toISOString()]);
  });
});
