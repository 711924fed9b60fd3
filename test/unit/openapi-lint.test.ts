import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { parseDeprecations } from '../../src/config/deprecations.js';
import { buildOpenApiDocument } from '../../src/http/openapi.js';

const FEED_DEPRECATED = '[{"prefix": "/v1/listings/changes", "since": "2026-12-01", "sunset": "2027-12-01", "link": "https://developers.example.com/changelog#feed"}]';

/**
 * The OpenAPI document passes Redocly CLI's lint with every built-in rule on, except the few that
 * redocly.yaml turns off with a reason: zero errors, zero warnings, nothing ignored. The linter is
 * the exact-pinned devDependency @redocly/cli, run from node_modules with its built-in rules only:
 * nothing is downloaded, and telemetry and the update check are off (redocly.yaml and the
 * environment below), so it works offline.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const CONFIG = join(ROOT, 'redocly.yaml');

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer?: string }> }>;
}

function lint(file: string): Promise<{ code: number | null; report: LintReport; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'lint', file, '--config', CONFIG, '--format', 'json'], {
      cwd: ROOT,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve({ code, report: JSON.parse(stdout) as LintReport, stderr });
      } catch {
        reject(new Error(`redocly lint printed no JSON report (exit ${code}):\n${stdout}\n${stderr}`));
      }
    });
  });
}

function assertClean(what: string, result: { code: number | null; report: LintReport; stderr: string }): void {
  const problems = result.report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
  assert.deepEqual(problems, [], `${what}: Redocly found problems:\n${problems.join('\n')}`);
  assert.deepEqual(result.report.totals, { errors: 0, warnings: 0, ignored: 0 }, what);
  assert.equal(result.code, 0, `${what}: exit ${result.code}\n${result.stderr}`);
}

describe('OpenAPI lint (Redocly CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('openapi.json as committed: no error, no warning, nothing ignored', async () => {
    assertClean('openapi.json', await lint(join(ROOT, 'openapi.json')));
  });

  it('the documents deployments serve (GET /openapi.json): local, Singapore only, one regional country, deprecated operations (D29)', async () => {
    const variants = {
      local: buildOpenApiDocument({ apiDomain: 'localhost' }),
      sgOnly: buildOpenApiDocument({ apiDomain: 'listings.example.net', countries: ['sg'] }),
      ukOnly: buildOpenApiDocument({ apiDomain: 'listings.example.net', countries: ['uk'] }),
      // D29: one operation deprecated with a sunset, and everything deprecated without one (no shared answer left).
      feedDeprecated: buildOpenApiDocument({ deprecations: parseDeprecations(FEED_DEPRECATED) }),
      allDeprecated: buildOpenApiDocument({ deprecations: parseDeprecations('[{"prefix": "/v1", "since": "2026-12-01", "link": "https://developers.example.com/v2"}]') }),
    };
    for (const [name, document] of Object.entries(variants)) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify(document, null, 2));
      assertClean(name, await lint(file));
    }
  });

  it('the lint is not vacuous: a document with a problem fails it', async () => {
    const broken = buildOpenApiDocument() as any;
    delete broken.paths['/v1/listings'].get.responses['200'].headers.ETag;
    broken.paths['/v1/listings/{id}'].get.parameters = [];
    const file = join(dir, 'broken.json');
    writeFileSync(file, JSON.stringify(broken, null, 2));
    const result = await lint(file);
    assert.notEqual(result.code, 0);
    const rules = new Set(result.report.problems.map((p) => p.ruleId));
    assert.ok(rules.has('response-contains-header'), [...rules].join(', '));
    assert.ok(rules.has('path-parameters-defined'), [...rules].join(', '));
  });
});
