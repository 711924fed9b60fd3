import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { describe, it } from 'node:test';
import { startTestServer } from '../support/server.js';

/**
 * Issue 41 item 4: a cached answer crosses a short, readable path. Which project files run for one
 * request is measured, not listed by hand: V8's precise coverage (call counts per function) is
 * reset after a warm-up request, and read after the measured one; every file under src/ with a
 * function that ran is on the path. Two requests on one keep-alive connection are measured and
 * only files both ran are counted, so that a timer that fires in between (the log's flush, the
 * usage counter's) is not taken for the request's own code.
 */
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
/**
 * The most project files a cached list page and a cached detail may run: a ratchet at the counts
 * measured now, so that a change that lengthens the path fails here, and one that shortens it
 * lowers the bound. Issue 41 asks for about 12.
 */
const MOST_FILES = { list: 16, detail: 19 };

async function filesRunBy(session: Session, send: () => Promise<unknown>): Promise<Set<string>> {
  await session.post('Profiler.takePreciseCoverage'); // resets the counts
  await send();
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const files = new Set<string>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const path = fileURLToPath(script.url);
    if (!path.startsWith(SRC)) continue;
    if (script.functions.some((fn) => fn.ranges.some((range) => range.count > 0))) files.add(relative(SRC, path).replace(/\.js$/, '.ts'));
  }
  return files;
}

describe('the hot path (issue 41 item 4)', () => {
  it(`a cached GET /v1/listings runs at most ${MOST_FILES.list} project files, a cached GET /v1/listings/{id} ${MOST_FILES.detail}`, async (t) => {
    const server = await startTestServer({ LOG_LEVEL: 'info' }, undefined, { servingLogger: true });
    t.after(() => server.close());
    const account = await server.createAccount();
    await server.addListings(account, Array.from({ length: 5 }, (_, i) => ({ title: `L${i}` })));
    const { key } = await server.createKey(account);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const first = await server.get('/v1/listings?per_page=2', { key, agent });
    assert.equal(first.status, 200);
    const id: string = first.json.items[0].id;

    const session = new Session();
    session.connect();
    t.after(() => session.disconnect());
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

    for (const [path, most] of [['/v1/listings?per_page=2', MOST_FILES.list], [`/v1/listings/${id}`, MOST_FILES.detail]] as const) {
      const get = async () => assert.equal((await server.get(path, { key, agent })).status, 200);
      await get(); // cached from here on
      const once = await filesRunBy(session, get);
      const twice = await filesRunBy(session, get);
      const files = [...once].filter((file) => twice.has(file)).sort();
      t.diagnostic(`${path}: ${files.length} files: ${files.join(', ')}`);
      assert.ok(files.length <= most, `${path} ran ${files.length} project files (at most ${most}): ${files.join(', ')}`);
    }
  });
});
