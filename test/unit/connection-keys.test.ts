import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthenticatedKey } from '../../src/auth/authenticate.js';
import { ConnectionKeys, sameText } from '../../src/auth/connection-keys.js';
import { tenantOf } from '../../src/core/tenant.js';

const key = (validUntil: number): AuthenticatedKey => ({
  id: 'k1',
  accountId: 'a1',
  country: 'sg',
  tenant: tenantOf('a1', 'sg'),
  prefix: 'sg_live_abcd',
  rateLimitPerMinute: null,
  validUntil,
});

describe('connection keys (auth/connection-keys.ts)', () => {
  it('sameText: equal strings only, whatever differs and where', () => {
    assert.equal(sameText('', ''), true);
    assert.equal(sameText('Bearer sg_live_x', 'Bearer sg_live_x'), true);
    assert.equal(sameText('Bearer sg_live_x', 'Bearer sg_live_y'), false, 'last character');
    assert.equal(sameText('Bearer sg_live_x', 'bearer sg_live_x'), false, 'first character');
    assert.equal(sameText('abc', 'abcd'), false, 'a prefix');
    assert.equal(sameText('abcd', 'abc'), false);
    assert.equal(sameText('a\u0100', 'a\u0000'), false, 'char codes above 255 compared whole');
  });

  it('recalls the key remembered for the same connection and header, while the auth version and the clock allow', () => {
    let now = 1000;
    let version = 3;
    const keys = new ConnectionKeys({ clock: () => now, versions: { authVersion: () => version } });
    const connection = {};
    const other = {};
    keys.remember(connection, 'Bearer K', key(2000));
    assert.equal(keys.recall(connection, 'Bearer K', 'sg')?.id, 'k1');
    assert.equal(keys.recall(other, 'Bearer K', 'sg'), undefined, 'another connection');
    assert.equal(keys.recall(connection, 'Bearer L', 'sg'), undefined, 'another header');
    assert.equal(keys.recall(connection, 'Bearer K', 'my'), undefined, "another country's host");
    version = 4;
    assert.equal(keys.recall(connection, 'Bearer K', 'sg'), undefined, 'the auth version moved (D4)');
    keys.remember(connection, 'Bearer K', key(2000));
    now = 1999;
    assert.equal(keys.recall(connection, 'Bearer K', 'sg')?.id, 'k1');
    now = 2000;
    assert.equal(keys.recall(connection, 'Bearer K', 'sg'), undefined, 'its record is due to be read again');
    now = 1500;
    assert.equal(keys.recall(connection, 'Bearer K', 'sg'), undefined, 'forgotten once it could not be recalled');
  });

  it('a recall for another host or header keeps the remembered key (it still holds for its own)', () => {
    const keys = new ConnectionKeys({ clock: () => 1000, versions: { authVersion: () => 1 } });
    const connection = {};
    keys.remember(connection, 'Bearer K', key(2000));
    assert.equal(keys.recall(connection, 'Bearer K', 'uk'), undefined);
    assert.equal(keys.recall(connection, 'Bearer X', 'sg'), undefined);
    assert.equal(keys.recall(connection, 'Bearer K', 'sg')?.id, 'k1');
  });

  it('remembers nothing that is already due (READ_CACHE_TTL_MS=0), and one key per connection', () => {
    const keys = new ConnectionKeys({ clock: () => 1000, versions: { authVersion: () => 1 } });
    const connection = {};
    keys.remember(connection, 'Bearer K', key(1000));
    assert.equal(keys.recall(connection, 'Bearer K', 'sg'), undefined);
    keys.remember(connection, 'Bearer K', key(5000));
    keys.remember(connection, 'Bearer L', { ...key(5000), id: 'k2' });
    assert.equal(keys.recall(connection, 'Bearer K', 'sg'), undefined, 'replaced by the last one');
    assert.equal(keys.recall(connection, 'Bearer L', 'sg')?.id, 'k2');
  });
});
