import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { html, SafeHtml } from '../../src/dashboard/html.js';
import { hashPassword, isEmail, normalizeEmail, passwordProblem, verifyPassword } from '../../src/dashboard/passwords.js';

describe('dashboard templates escape everything they are given', () => {
  it('escapes text in content and in attributes; nests templates; drops null, undefined and false', () => {
    const label = `<img src=x onerror="alert(1)"> & 'q' \`b\``;
    const out = html`<p title="${label}">${label}</p>${[html`<b>${'<i>'}</b>`, '<u>']}${null}${undefined}${false}${0}`;
    assert.ok(out instanceof SafeHtml);
    assert.equal(out.value,
      '<p title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &#39;q&#39; &#96;b&#96;">&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &#39;q&#39; &#96;b&#96;</p><b>&lt;i&gt;</b>&lt;u&gt;0');
  });
});

describe('dashboard passwords: scrypt with a salt per password, constant-time check', () => {
  it('verifies the right password only; two hashes of one password differ (salt)', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    assert.match(a, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, b);
    assert.equal(await verifyPassword('correct horse battery staple', a), true);
    assert.equal(await verifyPassword('correct horse battery stapl', a), false);
    assert.equal(await verifyPassword('Correct horse battery staple', b), false);
  });

  it('a malformed or tampered stored hash never matches', async () => {
    const good = await hashPassword('correct horse battery staple');
    const parts = good.split('$');
    for (const stored of ['', 'plain', good.replace('scrypt', 'bcrypt'), [...parts.slice(0, 5), `${parts[5]!.slice(0, -2)}AA`].join('$'),
      ['scrypt', '3', '8', '1', parts[4], parts[5]].join('$'), ['scrypt', String(2 ** 21), '8', '1', parts[4], parts[5]].join('$')]) {
      assert.equal(await verifyPassword('correct horse battery staple', stored), false, stored);
    }
  });

  it('password and email rules', () => {
    assert.match(passwordProblem('short')!, /shorter than 12/);
    assert.equal(passwordProblem('twelve chars'), undefined);
    assert.match(passwordProblem('x'.repeat(257))!, /longer than 256/);
    assert.equal(normalizeEmail('  Ada@Example.COM '), 'ada@example.com');
    for (const ok of ['a@b.co', 'first.last+tag@sub.example.com']) assert.ok(isEmail(ok), ok);
    for (const bad of ['', 'a', 'a@b', '@b.co', 'a@@b.co', 'a b@c.co', 'a@-b.co', `${'a'.repeat(250)}@b.co`]) assert.ok(!isEmail(bad), bad);
  });
});
