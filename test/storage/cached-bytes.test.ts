import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Body } from '../../src/readmodel/index.js';
import { TEST_STORE } from '../support/database.js';
import { openReadModelOnStore, type ReadModelOnStore } from '../support/read-model.js';
import { TestClock } from '../support/server.js';
import { atEnd } from '../support/world.js';
import { tenantOf } from '../../src/core/tenant.js';

/**
 * What the read model caches owns its memory. Node cuts short buffers (under 4 KB: a listing, a
 * small page, a short feed answer) from a shared 8 KB pool, and one cached slice keeps the whole
 * slab alive; the caches' byte bound (READ_CACHE_MAX_MB) counts only the slices, so the memory
 * they held grew far past it (docs/design/read-caches.md).
 */
describe(`cached answers on ${TEST_STORE} own their bytes (no slice of Node's buffer pool)`, () => {
  let model: ReadModelOnStore;
  let owner: string;
  let ids: string[];
  let clock: TestClock;

  /** Each test's own world (issue 42): a read model over a store on a fresh database, with its own clock, and a tenant of three listings. */
  async function world(t: TestContext): Promise<void> {
    clock = new TestClock();
    model = await openReadModelOnStore(clock, 5000);
    atEnd(t, () => model.close());
    const tenant = await model.tenantWith(3);
    owner = tenant.owner;
    ids = tenant.lines.map((line) => line.id as string);
  }

  const ownsItsMemory = (body: Body | undefined, what: string) => {
    assert.ok(body !== undefined, what);
    assert.ok(body.bytes.length < 4096, `${what} is small enough for the pool (${body.bytes.length} bytes)`);
    assert.equal(body.bytes.byteOffset, 0, `${what}: not a slice at an offset of a shared buffer`);
    assert.equal(body.bytes.buffer.byteLength, body.bytes.length, `${what}: its memory is its own`);
  };

  it('a detail answer (the cached listing), a page and a feed answer', async (t) => {
    await world(t);
    const tenant = tenantOf(owner, 'sg');
    for (const id of ids) ownsItsMemory(await model.reads.detail(tenant, id), `detail ${id}`);
    ownsItsMemory(await model.reads.listPage(tenant, 1, 1), 'a page of one listing');
    ownsItsMemory(await model.reads.changes(tenant, undefined, 1), 'a feed answer of one event');
    // What the answers say is unchanged.
    const page = JSON.parse((await model.reads.listPage(tenant, 1, 20)).bytes.toString()) as { total: number; items: Array<{ id: string }> };
    assert.equal(page.total, 3);
    assert.deepEqual(new Set(page.items.map((item) => item.id)), new Set(ids));
  });
});
