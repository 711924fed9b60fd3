import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configurationTable, loadConfig } from '../../src/config/index.js';
import { TABLE_END, TABLE_START, withCurrentTable } from '../../src/config/readme-write.js';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));

/** The README table's rows by variable: [default, values, meaning]. */
function rows(table: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const line of table.split('\n').slice(2)) {
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim());
    found.set(cells[0]!.replaceAll('`', ''), cells.slice(1));
  }
  return found;
}

describe('configuration declared once (issue 42, item 2)', () => {
  it('the README\'s configuration table is the one the declarations give (`npm run generate` rewrites it)', () => {
    const readme = readFileSync(README, 'utf8');
    assert.ok(readme.includes(TABLE_START) && readme.includes(TABLE_END), 'the markers are in the README');
    assert.equal(readme, withCurrentTable(readme), 'README.md is stale: run `npm run generate`');
  });

  it('every number the table shows as a default is the default loadConfig gives', () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    const byVariable = rows(configurationTable());
    const checked: Record<string, string> = {
      PORT: 'port', RATE_LIMIT_PER_MINUTE: 'rateLimitPerMinute', READ_CACHE_TTL_MS: 'readCacheTtlMs', CHANGE_HISTORY_DAYS: 'changeHistoryDays',
      MAX_KEYS_PER_ACCOUNT_COUNTRY: 'maxKeysPerAccountCountry', SHUTDOWN_TIMEOUT_MS: 'shutdownTimeoutMs', USAGE_FLUSH_INTERVAL_MS: 'usageFlushIntervalMs',
    };
    for (const [variable, key] of Object.entries(checked)) assert.equal(byVariable.get(variable)?.[0], `\`${String(defaults[key])}\``, variable);
    assert.match(byVariable.get('MAX_KEYS_PER_ACCOUNT_COUNTRY')![2]!, new RegExp(`${String(defaults.maxKeysPerAccountCountry)} keys at ${String(defaults.rateLimitPerMinute)}/min`));
  });

  it('each bound the table shows is the one enforced', () => {
    for (const [variable, [, values]] of rows(configurationTable())) {
      const bounds = /^([0-9,]+) to ([0-9,]+)/.exec(values!);
      if (!bounds) continue;
      const [min, max] = [Number(bounds[1]!.replaceAll(',', '')), Number(bounds[2]!.replaceAll(',', ''))];
      assert.doesNotThrow(() => loadConfig({ [variable]: String(min) }), variable);
      assert.doesNotThrow(() => loadConfig({ [variable]: String(max) }), variable);
      assert.throws(() => loadConfig({ [variable]: String(max + 1) }), new RegExp(`^ConfigError: ${variable}: must be between ${min} and ${max}`), variable);
      if (min > 0) assert.throws(() => loadConfig({ [variable]: String(min - 1) }), new RegExp(`^ConfigError: ${variable}:`), variable);
    }
  });
});
