import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { DEFAULT_RATE_LIMIT_PER_MINUTE } from '../../src/config/index.js';
import { COUNTRY_CODES } from '../../src/core/countries.js';
import { MAX_TARGET_LENGTH } from '../../src/http/front.js';
import { retrySchedule, spokenDuration } from '../../src/http/openapi.js';
import { MAX_QUERY_PARAMETERS } from '../../src/http/v1/query.js';
import { MAX_PER_PAGE } from '../../src/listings/listing.js';
import { WINDOW_SECONDS } from '../../src/ratelimit/limiter.js';
import { DISABLE_AFTER_MS, PREVIOUS_SECRET_MS } from '../../src/webhooks/deliverer.js';
import { ATTEMPT_TIMEOUT_MS } from '../../src/webhooks/send.js';

/**
 * The repository stands on its own: its Markdown links only to files inside it (and to anchors
 * that exist), and every decision number that the code, the tests and the README cite (`D7`) can
 * be looked up under its own heading in docs/api.md.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', 'data', '.git']);

function filesUnder(dir: string, accept: (name: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, accept);
    return accept(name) ? [path] : [];
  });
}

const markdown = filesUnder(ROOT, (name) => name.endsWith('.md'));
const API_DOC = join(ROOT, 'docs', 'api.md');

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1]!)));
}

/** Markdown links and images outside code blocks and code spans: [text](target). */
function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

describe('documentation in the repository', () => {
  it('finds the Markdown files', () => {
    const names = markdown.map((f) => relative(ROOT, f).split(sep).join('/'));
    assert.ok(names.includes('README.md') && names.includes('docs/api.md'), names.join(', '));
  });

  it('links only inside the repository, to files and anchors that exist', () => {
    const problems: string[] = [];
    for (const file of markdown) {
      const where = relative(ROOT, file);
      for (const link of linksOf(file)) {
        if (/^(https?|mailto):/i.test(link)) continue;
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (relative(ROOT, target).startsWith('..') || relative(ROOT, target) === '' && path !== '') {
          problems.push(`${where}: ${link} points outside the repository`);
          continue;
        }
        if (!existsSync(target)) {
          problems.push(`${where}: ${link} does not exist`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && target.endsWith('.md') && !anchorsOf(target).has(anchor)) {
          problems.push(`${where}: ${link}: no heading with the anchor #${anchor}`);
        }
      }
      if (/\.\.\/shared\b|shared\/spec/.test(readFileSync(file, 'utf8'))) problems.push(`${where}: mentions ../shared, which is not in a clone`);
    }
    assert.deepEqual(problems, []);
  });

  it('issue 42: the figures docs/api.md states are the ones the code enforces', () => {
    const guide = readFileSync(API_DOC, 'utf8').replace(/\s+/g, ' ');
    const figures = [
      `**${DEFAULT_RATE_LIMIT_PER_MINUTE} requests in any rolling ${WINDOW_SECONDS} seconds**`,
      `clamped to ${MAX_PER_PAGE}`,
      `**Retries** after ${retrySchedule()},`,
      `\`disabled\` after ${spokenDuration(DISABLE_AFTER_MS)} of failures`,
      `both secrets sign for ${spokenDuration(PREVIOUS_SECRET_MS)}`,
      `gets a 2xx within ${spokenDuration(ATTEMPT_TIMEOUT_MS)}`,
      `over ${MAX_TARGET_LENGTH.toLocaleString('en-US')} characters is 414`,
      `more than ${MAX_QUERY_PARAMETERS} parameters is 400`,
    ];
    for (const figure of figures) assert.ok(guide.includes(figure), `docs/api.md does not say "${figure}"`);
    // The table of hosts: one row per country, in the code's order, each on its D3 host.
    const rows = [...readFileSync(API_DOC, 'utf8').matchAll(/^\| [A-Z][A-Za-z ]+ \| `([a-z]{2})` \| `(api\.[a-z.]+)` \|$/gm)];
    assert.deepEqual(rows.map((m) => m[1]), [...COUNTRY_CODES]);
    for (const [, code, host] of rows) assert.equal(host, code === 'sg' ? 'api.example.com' : `api.${code}.example.com`);
  });

  it('docs/api.md has a heading for every decision, D1 to D29, in order', () => {
    const headings = [...readFileSync(API_DOC, 'utf8').matchAll(/^### D(\d+) \S/gm)].map((m) => Number(m[1]));
    assert.deepEqual(headings, Array.from({ length: 29 }, (_, i) => i + 1));
  });

  it('D24 says endpoints are managed on the dashboard as well as by the CLI, naming actions both have', () => {
    const doc = readFileSync(API_DOC, 'utf8');
    const section = doc.slice(doc.indexOf('### D24 '), doc.indexOf('### D25 '));
    const endpoints = /^- \*\*Endpoints\*\* ([^]*?)\n- /m.exec(section)?.[1] ?? '';
    assert.match(endpoints, /dashboard's Webhooks page/);
    assert.match(endpoints, /operator CLI/);
    // The actions the guide names are the dashboard's routes and the CLI's subcommands.
    const routes = readFileSync(join(ROOT, 'src', 'dashboard', 'webhooks', 'routes.ts'), 'utf8');
    for (const action of ['test', 'enable', 'rotate', 'remove']) assert.match(routes, new RegExp(`scope\\.post[^(]*\\('/webhooks/${action}'`), action);
    const help = spawnSync(process.execPath, [join(ROOT, 'bin', 'listings-api.js'), 'webhook', '--help'], { encoding: 'utf8' }).stdout;
    for (const command of ['add', 'list', 'remove', 'test', 'enable', 'rotate-secret']) {
      assert.match(endpoints, new RegExp(`\`(webhook )?${command}\\b`), command);
      assert.match(help, new RegExp(`^  ${command}\\b`, 'm'), `listings-api webhook ${command}`);
    }
  });

  it('every decision number cited in the code, the tests and the README is under its heading in docs/api.md', () => {
    const anchors = anchorsOf(API_DOC);
    const cited = new Map<string, string>();
    const sources = [
      ...['src', 'test', 'bench', 'scripts'].flatMap((d) => filesUnder(join(ROOT, d), (n) => /\.(ts|js|md)$/.test(n))),
      join(ROOT, 'README.md'),
    ];
    for (const file of sources) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bD(\d{1,2})\b/g)) cited.set(`D${m[1]}`, relative(ROOT, file));
    }
    assert.ok(cited.size >= 21, [...cited.keys()].join(' '));
    const missing = [...cited].filter(([d]) => ![...anchors].some((a) => a.startsWith(`${d.toLowerCase()}-`)));
    assert.deepEqual(missing, [], 'cited but not under a heading of docs/api.md');
  });
});
