import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parseScrape, sampleValue } from '../support/prometheus.js';

const FIXTURE = fileURLToPath(new URL('../support/cluster-metrics-fixture.js', import.meta.url));

/**
 * The primary's sums across a worker's exit (src/metrics/cluster.ts, issue 30 item 3), in a real
 * cluster of forked workers whose float counters are chosen so that the order of the additions
 * matters: summed live as (0.255 + 0.495) + 0.449 = 1.199, and after the first worker's exit as
 * (0.495 + 0.449) + 0.255 = 1.1989999999999998, one unit in the last place lower.
 */
describe('serve --workers metrics: the primary\'s sums across worker exits', () => {
  it('a float counter never decreases when a worker\'s counts move to the departed ones; gauges of dead workers are dropped', () => {
    const run = spawnSync(process.execPath, [FIXTURE, '0.255', '0.495', '0.449'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    const scrapes = run.stdout.trim().split('\n').map((line) => parseScrape(JSON.parse(line) as string));
    assert.equal(scrapes.length, 5, 'three starts and two exits');
    const totals = scrapes.map((s) => sampleValue(s, 'fixture_seconds_total'));
    for (let i = 1; i < totals.length; i++) assert.ok(totals[i]! >= totals[i - 1]!, `the counter went ${totals[i - 1]} -> ${totals[i]} at scrape ${i}`);
    assert.ok(Math.abs(totals.at(-1)! - 1.199) < 1e-9, `${totals.at(-1)}`);
    assert.deepEqual(scrapes.map((s) => sampleValue(s, 'fixture_workers')), [1, 2, 3, 2, 1]);
  });
});
