import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';

/** Issue 12's configuration: USAGE_COUNTING, USAGE_FLUSH_INTERVAL_MS and METRICS_PORT, validated with a message naming the variable. */
describe('usage and metrics configuration', () => {
  it('defaults: usage counted and flushed every 5 s, metrics off', () => {
    const config = loadConfig({});
    assert.equal(config.usageCounting, true);
    assert.equal(config.usageFlushIntervalMs, 5000);
    assert.equal(config.metricsPort, 'off');
  });

  it('accepts off, numbers and 0 (any free port)', () => {
    assert.equal(loadConfig({ USAGE_COUNTING: 'off' }).usageCounting, false);
    assert.equal(loadConfig({ USAGE_FLUSH_INTERVAL_MS: '1000' }).usageFlushIntervalMs, 1000);
    assert.equal(loadConfig({ METRICS_PORT: '9464' }).metricsPort, 9464);
    assert.equal(loadConfig({ METRICS_PORT: '0' }).metricsPort, 0);
    assert.equal(loadConfig({ METRICS_PORT: 'OFF' }).metricsPort, 'off');
  });

  it('refuses bad values, naming the variable', () => {
    const refused = (env: Record<string, string>, variable: string, message: RegExp) => {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable && message.test(error.message));
    };
    refused({ USAGE_COUNTING: 'sometimes' }, 'USAGE_COUNTING', /^USAGE_COUNTING: expected one of/);
    refused({ USAGE_FLUSH_INTERVAL_MS: '50' }, 'USAGE_FLUSH_INTERVAL_MS', /between 100 and 60000/);
    refused({ METRICS_PORT: 'ninety' }, 'METRICS_PORT', /^METRICS_PORT: expected a whole number/);
    refused({ METRICS_PORT: '70000' }, 'METRICS_PORT', /between 0 and 65535/);
    refused({ PORT: '3000', METRICS_PORT: '3000' }, 'METRICS_PORT', /must differ from PORT/);
    refused({ DASHBOARD_PORT: '3001', METRICS_PORT: '3001' }, 'METRICS_PORT', /must differ from DASHBOARD_PORT/);
  });
});
