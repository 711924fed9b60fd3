import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freshness, ReadCache } from '../../src/cache/read-cache.js';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  const clock = () => now;
  return { clock, advance: (ms: number) => (now += ms) };
}

describe('ReadCache (the read path\'s one cache pattern)', () => {
  it('loads once for all callers asking at the same time, then answers synchronously', async () => {
    const { clock } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxEntries: 10 });
    let loads = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const load = async () => {
      loads++;
      await gate;
      return { value: 'v' };
    };
    const first = cache.getOrLoad('k', load);
    const second = cache.getOrLoad('k', load);
    assert.ok(first instanceof Promise && second instanceof Promise);
    release();
    assert.deepEqual(await Promise.all([first, second]), ['v', 'v']);
    assert.equal(loads, 1);
    assert.equal(cache.getOrLoad('k', load), 'v', 'a hit is not a promise');
    assert.deepEqual({ hits: cache.hits, misses: cache.misses }, { hits: 1, misses: 2 });
  });

  it('settled() waits for the refreshes ahead under way, whether they land or fail', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    cache.remember('a', 'old a');
    cache.remember('b', 'old b');
    await cache.settled(); // nothing under way: resolves at once
    advance(3000); // the last quarter of the TTL: both are due
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    assert.equal(cache.getOrLoad('a', async () => (await gate, { value: 'new a' })), 'old a', 'answered from memory while read again');
    assert.equal(cache.getOrLoad('b', async () => { await gate; throw new Error('database down'); }), 'old b');
    let settled = false;
    const waiting = cache.settled().then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'the reads are still under way');
    release();
    await waiting;
    assert.equal(cache.getOrLoad('a', async () => ({ value: 'unused' })), 'new a');
    assert.equal(cache.getOrLoad('b', async () => ({ value: 'unused' })), 'old b', 'a failed refresh leaves the entry until it expires');
  });

  it('expired entries nobody reads again are dropped as new ones are stored, two for each; valid ones stay', () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxEntries: 1000 });
    for (let i = 0; i < 100; i++) cache.remember(`old ${i}`, 'v');
    advance(3000);
    for (let i = 0; i < 10; i++) cache.remember(`young ${i}`, 'v');
    assert.equal(cache.size, 110, 'nothing expired yet: nothing dropped');
    advance(2500); // the old ones are past their 5 s, the young ones are not
    for (let i = 0; i < 50; i++) cache.remember(`new ${i}`, 'v');
    assert.equal(cache.size, 10 + 50, 'the 100 expired entries went, two per entry stored');
    for (let i = 0; i < 10; i++) assert.equal(cache.peek(`young ${i}`), 'v');
    // Reading the young ones made them the most recently read: expired entries behind a valid one
    // wait until they are the oldest. Once everything has expired, storing drains it all.
    cache.remember('early', 'v', clock() + 10); // a page that expires early (D10)
    advance(5000);
    for (let i = 0; i < 31; i++) cache.remember(`last ${i}`, 'v');
    assert.equal(cache.size, 31, 'the 61 expired entries went as 31 were stored');
  });

  it('a failed load is not cached: the next caller loads again', async () => {
    const { clock } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxEntries: 10 });
    await assert.rejects(async () => cache.getOrLoad('k', async () => Promise.reject(new Error('down'))), /down/);
    assert.equal(await cache.getOrLoad('k', async () => ({ value: 'back' })), 'back');
  });

  it('expires at the safety TTL, or earlier at validUntil (D10: a page changes when a listing on it expires)', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxEntries: 10 });
    cache.remember('ttl', 'a');
    cache.remember('until', 'b', clock() + 100);
    advance(99);
    assert.equal(cache.peek('until'), 'b');
    advance(1);
    assert.equal(cache.peek('until'), undefined, 'gone at validUntil exactly');
    assert.equal(cache.peek('ttl'), 'a');
    advance(4900);
    assert.equal(cache.peek('ttl'), undefined, 'gone at the TTL exactly');
  });

  it('refresh-ahead: a read in the last quarter of the TTL answers from memory and loads once in the background', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    let loads = 0;
    let release!: () => void;
    let gate = Promise.resolve();
    const load = async () => {
      loads++;
      await gate;
      return { value: `v${loads}` };
    };
    assert.equal(await cache.getOrLoad('k', load), 'v1');
    advance(2999);
    assert.equal(cache.getOrLoad('k', load), 'v1');
    assert.equal(loads, 1, 'before the last quarter: no reload');
    gate = new Promise<void>((resolve) => (release = resolve));
    advance(1);
    assert.equal(cache.getOrLoad('k', load), 'v1', 'due: still answered from memory, synchronously');
    assert.equal(cache.getOrLoad('k', load), 'v1');
    assert.equal(loads, 2, 'one reload, however many reads find the entry due');
    assert.equal(cache.refreshes, 1);
    release();
    await gate;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(cache.getOrLoad('k', load), 'v2', 'the reloaded value');
    advance(3999); // 6,999 ms after the first load, 3,999 after the reload
    assert.equal(cache.getOrLoad('k', load), 'v2', 'read on, an entry is never missed');
    assert.deepEqual({ hits: cache.hits, misses: cache.misses }, { hits: 5, misses: 1 });
    advance(1);
    assert.ok(cache.getOrLoad('k', load) instanceof Promise, 'the reload lives one TTL: the read that found it due did not make it live longer');
  });

  it('refresh-ahead never serves past the TTL: an entry not read in its last quarter expires as before', () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    cache.remember('k', 'v');
    advance(3000);
    assert.equal(cache.peek('k'), 'v', 'a peek without onStale starts nothing');
    assert.equal(cache.refreshes, 0);
    advance(1000);
    assert.equal(cache.peek('k'), undefined);
  });

  it('an entry that ends at validUntil before its TTL is not refreshed ahead (D10: it changes then)', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    let loads = 0;
    const load = async () => ({ value: `v${++loads}`, validUntil: clock() + 3500 });
    assert.equal(await cache.getOrLoad('page', load), 'v1');
    advance(3499);
    assert.equal(cache.getOrLoad('page', load), 'v1');
    assert.equal(loads, 1, 'not refreshed ahead');
    advance(1);
    assert.ok(cache.getOrLoad('page', load) instanceof Promise, 'gone at validUntil exactly');
  });

  it('a failed refresh leaves the entry answered until its TTL; the next read then loads and meets the error', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    cache.remember('k', 'old');
    let attempts = 0;
    const failing = async (): Promise<{ value: string }> => {
      attempts++;
      throw new Error('database away');
    };
    advance(3500);
    assert.equal(cache.getOrLoad('k', failing), 'old');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(attempts, 1);
    assert.equal(cache.getOrLoad('k', failing), 'old', 'answered until its TTL, and not retried meanwhile');
    assert.equal(attempts, 1);
    advance(500);
    await assert.rejects(async () => cache.getOrLoad('k', failing), /database away/);
  });

  it('peek calls onStale with the key, once, when the entry is stale (its last quarter here)', () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    cache.remember('k', 'v');
    const stale: string[] = [];
    const onStale = (key: string) => stale.push(key);
    advance(2999);
    assert.equal(cache.peek('k', onStale), 'v');
    assert.deepEqual(stale, []);
    advance(1);
    assert.equal(cache.peek('k', onStale), 'v');
    assert.equal(cache.peek('k', onStale), 'v');
    assert.deepEqual(stale, ['k']);
    cache.remember('k', 'v2'); // what the caller does with what it read again
    advance(3999);
    assert.equal(cache.peek('k', onStale), 'v2');
    assert.deepEqual(stale, ['k', 'k'], 'due again in the last quarter of its new TTL');
  });

  it('a value assembled from parts read earlier lives a TTL from its oldest read (readAt), and is refreshed ahead from then', async () => {
    const { clock, advance } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(4000, 3 / 4), maxEntries: 10 });
    let loads = 0;
    const readAt = clock() - 1000;
    const load = async () => ({ value: `v${++loads}`, readAt });
    assert.equal(await cache.getOrLoad('page', load), 'v1');
    advance(1999);
    assert.equal(cache.getOrLoad('page', load), 'v1');
    assert.equal(loads, 1, 'not due before readAt + 3/4 of the TTL');
    advance(1);
    assert.equal(cache.getOrLoad('page', load), 'v1', 'due at readAt + 3/4 of the TTL');
    assert.equal(loads, 2);
    cache.remember('late', 'x', Infinity, clock() - 4000);
    assert.equal(cache.peek('late'), undefined, 'read a whole TTL ago: not kept at all');
  });

  it('a TTL of 0 keeps nothing (READ_CACHE_TTL_MS=0)', () => {
    const { clock } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(0, 3 / 4), maxEntries: 10 });
    cache.remember('k', 'v');
    assert.equal(cache.peek('k'), undefined);
    assert.equal(cache.size, 0);
  });

  it('a byte bound drops the least recently read entries first (READ_CACHE_MAX_MB)', () => {
    const { clock } = manualClock();
    const cache = new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxSize: 100, sizeOf: (s) => s.length });
    cache.remember('a', 'x'.repeat(40));
    cache.remember('b', 'y'.repeat(40));
    assert.ok(cache.peek('a') !== undefined, 'a read makes a the most recent');
    cache.remember('c', 'z'.repeat(40));
    assert.equal(cache.peek('b'), undefined, 'b, the least recently read, went first');
    assert.ok(cache.peek('a') !== undefined && cache.peek('c') !== undefined);
    cache.remember('huge', 'w'.repeat(101));
    assert.equal(cache.peek('huge'), undefined, 'an entry larger than the whole bound is not kept');
  });

  it('refuses to be built without a bound', () => {
    const { clock } = manualClock();
    assert.throws(() => new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4) }), /needs a bound/);
    assert.throws(() => new ReadCache<string>({ clock, freshness: freshness(5000, 3 / 4), maxSize: 10 }), /needs a bound/);
  });

  it("each namespace has its own fresh and stale times; freshUntil(readAt) is the namespace's rule", () => {
    const { clock, advance } = manualClock();
    const half = new ReadCache<string>({ clock, freshness: freshness(4000, 1 / 2), maxEntries: 10 });
    const most = new ReadCache<string>({ clock, freshness: { freshMs: 3900, staleMs: 4000 }, maxEntries: 10 });
    assert.equal(half.freshUntil(clock()), clock() + 2000);
    half.remember('k', 'v');
    most.remember('k', 'v');
    advance(2000);
    const stale: string[] = [];
    half.peek('k', (key) => stale.push(`half ${key}`));
    most.peek('k', (key) => stale.push(`most ${key}`));
    assert.deepEqual(stale, ['half k'], 'stale at half the stale time in one namespace, fresh in the other');
    advance(1900);
    most.peek('k', (key) => stale.push(`most ${key}`));
    assert.deepEqual(stale, ['half k', 'most k']);
    advance(100);
    assert.equal(half.peek('k'), undefined);
    assert.equal(most.peek('k'), undefined, 'both never served past their stale time');
  });
});
