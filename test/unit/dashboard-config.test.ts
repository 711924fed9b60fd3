import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';

describe('configuration: DASHBOARD_PORT (the developer dashboard)', () => {
  it('defaults to 3001; takes a port, 0 (any free port) or "off" (no dashboard)', () => {
    assert.equal(loadConfig({}).dashboardPort, 3001);
    assert.equal(loadConfig({ DASHBOARD_PORT: '' }).dashboardPort, 3001);
    assert.equal(loadConfig({ DASHBOARD_PORT: '8081' }).dashboardPort, 8081);
    assert.equal(loadConfig({ DASHBOARD_PORT: ' 0 ' }).dashboardPort, 0);
    assert.equal(loadConfig({ DASHBOARD_PORT: 'off' }).dashboardPort, null);
    assert.equal(loadConfig({ DASHBOARD_PORT: 'OFF' }).dashboardPort, null);
    assert.equal(loadConfig({ PORT: '0', DASHBOARD_PORT: '0' }).dashboardPort, 0, 'both on free ports');
  });

  it('refuses anything else, and the API port itself, naming the variable', () => {
    for (const env of [{ DASHBOARD_PORT: 'no' }, { DASHBOARD_PORT: '-1' }, { DASHBOARD_PORT: '65536' }, { DASHBOARD_PORT: '30.1' },
      { DASHBOARD_PORT: '3000' }, { PORT: '8080', DASHBOARD_PORT: '8080' }]) {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === 'DASHBOARD_PORT', JSON.stringify(env));
    }
    assert.throws(() => loadConfig({ DASHBOARD_PORT: '3000' }), /DASHBOARD_PORT: must differ from PORT \(3000\)/);
  });
});
