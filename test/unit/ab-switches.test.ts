import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';

/**
 * The switches of `npm run bench:ab` (bench/README.md) turn their mechanism off, and only when set:
 * an A/B whose B ran the mechanism anyway would report nothing. Each is read once when its module
 * loads, so each case runs in a process of its own, with and without the variable.
 */
const SRC = new URL('../../src/', import.meta.url).href;

/** Runs an ES module script with `env` added to this process's environment; its stdout, trimmed. */
function run(script: string, env: Record<string, string> = {}): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim();
}

describe('the A/B switches (bench/ab.ts)', () => {
  it('LISTINGS_CONNECTION_KEYS=off: a connection never recalls its key', () => {
    const script = `
      import { ConnectionKeys } from '${SRC}auth/connection-keys.js';
      const keys = new ConnectionKeys({ clock: () => 0, versions: { authVersion: () => 1 } });
      const socket = {};
      const key = { id: 'k', country: 'sg', validUntil: 1000 };
      keys.remember(socket, 'Bearer x', key);
      console.log(keys.recall(socket, 'Bearer x', 'sg') === key ? 'recalled' : 'checked');`;
    assert.equal(run(script), 'recalled');
    assert.equal(run(script, { LISTINGS_CONNECTION_KEYS: 'off' }), 'checked');
  });

  it('LISTINGS_REFRESH_AHEAD=off: a stale entry is not read again before it expires', () => {
    const script = `
      import { freshness, ReadCache } from '${SRC}cache/read-cache.js';
      let now = 0;
      const cache = new ReadCache({ clock: () => now, freshness: freshness(1000, 3 / 4), maxEntries: 10 });
      cache.remember('a', 1);
      now = 900; // in the last quarter of the TTL
      let due = false;
      const value = cache.peek('a', () => (due = true));
      console.log(value + ' ' + (due ? 'due' : 'not-due'));`;
    assert.equal(run(script), '1 due');
    assert.equal(run(script, { LISTINGS_REFRESH_AHEAD: 'off' }), '1 not-due');
  });

  it("LISTINGS_REQUEST_LOG=pino: request lines go through pino's own method", () => {
    // The template holds a line to the end of the turn; pino's method hands it over at once.
    const script = `
      import { requestLineWriter, servingLogger } from '${SRC}core/logger.js';
      const written = [];
      const logger = servingLogger('info', { write: (text) => written.push(text), flush() {}, flushSync() {} }, () => ',"time":1');
      const fields = { reqId: 'r', method: 'GET', route: null, path: '/', status: 200, ms: 1, key_prefix: null, client_address: null, host: null, country: null, origin: null, key_id: null, account_id: null, error: null, reason: null };
      requestLineWriter(logger, 'request')(fields);
      const atOnce = written.length;
      setImmediate(() => console.log(atOnce + ' ' + written.length + ' ' + JSON.parse(written.join('')).reqId));`;
    assert.equal(run(script), '0 1 r');
    assert.equal(run(script, { LISTINGS_REQUEST_LOG: 'pino' }), '1 1 r');
  });

  it('LISTINGS_TURN_BUDGET=off: a step never waits for a later turn', () => {
    // A 1 ms window on a clock that has moved on: the second step of the turn waits, unless off.
    const script = `
      import { TurnBudget } from '${SRC}core/turn-budget.js';
      let now = 0;
      const budget = new TurnBudget(1, () => now);
      budget.take();
      now = 5;
      console.log(budget.take() === undefined ? 'at-once' : 'waits');`;
    assert.equal(run(script), 'waits');
    assert.equal(run(script, { LISTINGS_TURN_BUDGET: 'off' }), 'at-once');
  });

  it('LISTINGS_TURN_BATCH=off: each look-up of a turn is loaded alone', () => {
    const script = `
      import { batchPerTurn } from '${SRC}core/turn-batch.js';
      const calls = [];
      const load = batchPerTurn(async (keys) => { calls.push(keys.length); return new Map(keys.map((k) => [k, k * 2])); });
      const values = await Promise.all([load(1), load(2), load(3)]);
      console.log(values.join(',') + ' ' + calls.join(','));`;
    assert.equal(run(script), '2,4,6 3');
    assert.equal(run(script, { LISTINGS_TURN_BATCH: 'off' }), '2,4,6 1,1,1');
  });
});
