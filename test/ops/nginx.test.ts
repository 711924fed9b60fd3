import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NGINX, unprivilegedNginxConfig } from '../support/nginx.js';
import { freePort } from '../support/process.js';
import { httpCall, startTestServer, TestClock, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';

/**
 * Issue 44 item 3: the repository's nginx configuration (deploy/nginx/listings-api.conf), run as
 * it is with the ports of two instances on one database: each key reaches one instance, the keys
 * spread over both, answers are the instance's own, and while one instance drains and is gone,
 * every request of its keys is answered by the other (nginx tries the next instance).
 */

const CONF = fileURLToPath(new URL('../../../deploy/nginx/listings-api.conf', import.meta.url));
const SKIP = NGINX === undefined ? 'nginx is not installed (apt-get install nginx-light; .ci/run installs it)' : false;
const KEYS = 20;

/** Resolves once something accepts connections on the port (nginx has started), or fails after 10 s. */
async function listening(port: number, process: ChildProcess, output: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (process.exitCode !== null) throw new Error(`nginx exited (${process.exitCode}): ${output()}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(true));
      socket.on('error', () => resolve(false));
      socket.on('connect', () => socket.destroy());
    });
    if (accepted) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nginx did not listen on ${port}: ${output()}`);
}

/**
 * The shipped configuration with the test's ports in place of its examples, inside the smallest
 * main configuration that runs unprivileged in a directory of its own.
 */
function nginxConfig(dir: string, listen: number, instances: number[]): string {
  const shipped = readFileSync(CONF, 'utf8');
  const servers = [...shipped.matchAll(/^\s*server 127\.0\.0\.1:\d+ (.*);$/gm)];
  assert.equal(servers.length, instances.length, 'the shipped upstream lists two instances');
  let site = shipped.replace(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${listen};`);
  servers.forEach((server, i) => (site = site.replace(server[0], server[0].replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${instances[i]}`))));
  return unprivilegedNginxConfig(dir, site, { workerConnections: 256, http: 'access_log off;' });
}

describe('nginx routing by key in front of two instances (issue 44 item 3)', { skip: SKIP }, () => {
  let first: TestServer;
  let second: TestServer;
  let nginx: ChildProcess;
  let nginxPort: number;
  let nginxOutput = '';
  const keys: string[] = [];

  before(async () => {
    const clock = new TestClock(Date.now());
    first = await startTestServer({ TRUST_PROXY: '1' }, clock, { servingLogger: true });
    second = await startTestServer({ DATABASE_URL: first.databaseUrl, TRUST_PROXY: '1' }, clock, { servingLogger: true });
    const account = await first.createAccount();
    await first.addListings(account, Array.from({ length: 30 }, () => ({})));
    for (let i = 0; i < KEYS; i++) keys.push((await first.createKey(account, 'sg', `key ${i}`)).key);
    await first.allowOrigin(account, 'https://shop.example.com');

    const dir = join(first.dir, 'nginx');
    mkdirSync(dir);
    nginxPort = await freePort();
    writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, nginxPort, [first.port, second.port]));
    nginx = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
    nginx.stdout!.on('data', (c: Buffer) => void (nginxOutput += c.toString()));
    nginx.stderr!.on('data', (c: Buffer) => void (nginxOutput += c.toString()));
    await listening(nginxPort, nginx, () => `${nginxOutput}${existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : ''}`);
  });
  after(async () => {
    if (nginx !== undefined && nginx.exitCode === null) {
      nginx.kill('SIGTERM');
      await new Promise((resolve) => nginx.once('exit', resolve));
    }
    await second?.close().catch(() => undefined);
    await first?.close();
  });

  const viaNginx = (key: string, path = '/v1/listings?per_page=5') => httpCall(nginxPort, path, { key });
  /** Which instance logged the request (its request line, D19), by the id nginx passed back. */
  const answeredBy = async (requestId: string): Promise<'first' | 'second'> => {
    for (let i = 0; i < 200; i++) {
      if (first.logs.lines.some((l) => l.reqId === requestId)) return 'first';
      if (second.logs.lines.some((l) => l.reqId === requestId)) return 'second';
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error(`no instance logged request ${requestId}`);
  };

  it('each key is answered by one instance every time, and the keys spread over both', async () => {
    const instanceOf = new Map<string, Set<string>>();
    for (const key of keys) {
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const res = await viaNginx(key);
        assert.equal(res.status, 200, res.body);
        seen.add(await answeredBy(res.headers['x-request-id'] as string));
      }
      instanceOf.set(key, seen);
    }
    for (const [key, seen] of instanceOf) assert.equal(seen.size, 1, `${key.slice(0, 12)}... reached ${[...seen].join(' and ')}`);
    const used = new Set([...instanceOf.values()].flatMap((seen) => [...seen]));
    assert.deepEqual([...used].sort(), ['first', 'second'], `${KEYS} keys all hashed to one instance`);
  });

  it('an answer through nginx is the instance\'s own: status, body, rate-limit and CORS headers', async () => {
    const key = keys[0]!;
    const proxied = await httpCall(nginxPort, '/v1/listings?per_page=3', { key, headers: { origin: 'https://shop.example.com' } });
    const direct = await httpCall(first.port, '/v1/listings?per_page=3', { key, headers: { origin: 'https://shop.example.com' } });
    assert.equal(proxied.status, 200, proxied.body);
    assert.equal(proxied.headers['access-control-allow-origin'], 'https://shop.example.com');
    assert.equal(proxied.status, direct.status);
    assert.equal(proxied.body, direct.body);
    for (const name of ['content-type', 'x-ratelimit-limit', 'etag', 'access-control-allow-origin']) assert.equal(proxied.headers[name], direct.headers[name], name);
    const missing = await httpCall(nginxPort, '/v1/listings', {});
    assert.equal(missing.status, 401);
    assert.equal((missing.json as { error: string }).error, 'unauthorized');
  });

  it('while one instance drains and is gone, every request of its keys is answered by the other', async () => {
    // The keys of the second instance, as the ring has them now.
    const itsKeys: string[] = [];
    for (const key of keys) {
      const res = await viaNginx(key);
      if ((await answeredBy(res.headers['x-request-id'] as string)) === 'second') itsKeys.push(key);
    }
    assert.ok(itsKeys.length > 0);
    // Requests keep coming, 8 at a time, while the instance drains and closes, and after; a
    // request that fails to get an answer at all counts as status 0.
    let stop = false;
    const statuses: number[] = [];
    const clients = Array.from({ length: 8 }, async (_, c) => {
      for (let n = 0; !stop; n++) statuses.push(await viaNginx(itsKeys[(c + n) % itsKeys.length]!).then((res) => res.status, () => 0));
    });
    let afterClose = 0;
    try {
      await until(() => statuses.length >= 50, { what: '50 requests answered before the close' });
      await second.close();
      afterClose = statuses.length;
      await until(() => statuses.length >= afterClose + 100, { what: '100 requests answered after the close' });
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    const failed = statuses.filter((s) => s !== 200);
    assert.deepEqual(failed, [], `${failed.length} of ${statuses.length} requests failed`);
    // Now the first instance answers them.
    const res = await viaNginx(itsKeys[0]!);
    assert.equal(res.status, 200);
    assert.equal(await answeredBy(res.headers['x-request-id'] as string), 'first');
  });
});
