import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';

describe('configuration: DASHBOARD_PORT (the developer dashboard)', () => {
  it('defaults to sharing the API\'s port under DASHBOARD_HOST; takes a port, 0 (any free port) or "off" (no dashboard)', () => {
    assert.equal(loadConfig({}).dashboardPort, 'shared');
    assert.equal(loadConfig({ DASHBOARD_PORT: '' }).dashboardPort, 'shared');
    assert.equal(loadConfig({ DASHBOARD_PORT: 'shared' }).dashboardPort, 'shared');
    assert.equal(loadConfig({ DASHBOARD_PORT: '8081' }).dashboardPort, 8081);
    assert.equal(loadConfig({ DASHBOARD_PORT: ' 0 ' }).dashboardPort, 0);
    assert.equal(loadConfig({ DASHBOARD_PORT: 'off' }).dashboardPort, 'off');
    assert.equal(loadConfig({ DASHBOARD_PORT: 'OFF' }).dashboardPort, 'off');
    assert.equal(loadConfig({ PORT: '0', DASHBOARD_PORT: '0' }).dashboardPort, 0, 'both on free ports');
  });

  it('refuses anything else, and the API port itself, naming the variable', () => {
    for (const env of [{ DASHBOARD_PORT: 'no' }, { DASHBOARD_PORT: '-1' }, { DASHBOARD_PORT: '65536' }, { DASHBOARD_PORT: '30.1' },
      { DASHBOARD_PORT: '3000' }, { PORT: '8080', DASHBOARD_PORT: '8080' }]) {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === 'DASHBOARD_PORT', JSON.stringify(env));
    }
    assert.throws(() => loadConfig({ DASHBOARD_PORT: '3000' }), /DASHBOARD_PORT: must differ from PORT \(3000\)/);
  });

  it('DASHBOARD_HOST defaults to dashboard.$API_DOMAIN; a country host of the API or a non-name is refused', () => {
    assert.equal(loadConfig({}).dashboardHost, 'dashboard.localhost');
    assert.equal(loadConfig({ API_DOMAIN: 'Example.com' }).dashboardHost, 'dashboard.example.com');
    assert.equal(loadConfig({ DASHBOARD_HOST: 'Developers.Example.com' }).dashboardHost, 'developers.example.com');
    for (const env of [{ DASHBOARD_HOST: 'api.localhost' }, { DASHBOARD_HOST: 'api.my.localhost' }, { DASHBOARD_HOST: 'http://x' }, { DASHBOARD_HOST: 'a b' }]) {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === 'DASHBOARD_HOST', JSON.stringify(env));
    }
  });

  it('SHUTDOWN_TIMEOUT_MS defaults to 10 s and is validated', () => {
    assert.equal(loadConfig({}).shutdownTimeoutMs, 10_000);
    assert.equal(loadConfig({ SHUTDOWN_TIMEOUT_MS: '500' }).shutdownTimeoutMs, 500);
    assert.throws(() => loadConfig({ SHUTDOWN_TIMEOUT_MS: 'soon' }), /SHUTDOWN_TIMEOUT_MS/);
  });
});
