import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ImportError } from '../../src/import/import-line.js';
import { LINES_PER_BATCH, parseLines, parseLinesInWorker, textLines, type LineBatch } from '../../src/import/import-lines.js';
import { listingLine } from '../support/server.js';

/**
 * The two ways an import reads its lines (import/import-lines.ts): in this thread from a stream,
 * or in a worker thread from a file. Both must give the same batches, in the same order, and the
 * same first bad line, with the lines before it delivered first.
 */

const OWNER = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

let dir: string;
before(() => (dir = mkdtempSync(join(tmpdir(), 'import-lines-'))));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function fileOf(text: string): string {
  const path = join(dir, `input-${++files}.ndjson`);
  writeFileSync(path, text);
  return path;
}

/** Every batch of a reader, and the error it ended with, if any. */
async function drain(batches: AsyncGenerator<LineBatch>): Promise<{ batches: LineBatch[]; error?: unknown }> {
  const seen: LineBatch[] = [];
  try {
    for await (const batch of batches) seen.push(batch);
    return { batches: seen };
  } catch (error) {
    return { batches: seen, error };
  }
}

/** Reads `text` both ways and asserts they agree; returns what they read. */
async function bothWays(text: string): Promise<{ batches: LineBatch[]; error?: unknown }> {
  const here = await drain(parseLines(Readable.from([Buffer.from(text)])));
  const there = await drain(parseLinesInWorker({ path: fileOf(text) }));
  assert.deepEqual(there.batches, here.batches);
  assert.equal(there.error === undefined, here.error === undefined, String(there.error ?? here.error));
  if (here.error !== undefined) {
    assert.ok(here.error instanceof ImportError && there.error instanceof ImportError);
    assert.equal(there.error.message, here.error.message);
    assert.equal(there.error.line, here.error.line);
    assert.equal(there.error.field, here.error.field);
  }
  return here;
}

const lineOf = (overrides: Record<string, unknown> = {}) => JSON.stringify(listingLine(OWNER, overrides));

describe('reading import lines, in this thread and in a worker thread', () => {
  it('the same batches of LINES_PER_BATCH lines, with the count of lines read, across many chunks of the file', async () => {
    // Titles with multi-byte characters, so that chunks of the file end inside a character.
    const lines = Array.from({ length: 2 * LINES_PER_BATCH + 17 }, (_, i) => lineOf({ title: `Caf\u00e9 \u4e2d\u6587 \ud83c\udfe2 ${i}` }));
    const { batches, error } = await bothWays(lines.join('\n'));
    assert.equal(error, undefined);
    assert.deepEqual(batches.map((b) => b.parsed.length), [LINES_PER_BATCH, LINES_PER_BATCH, 17]);
    assert.deepEqual(batches.map((b) => b.linesRead), [LINES_PER_BATCH, 2 * LINES_PER_BATCH, lines.length]);
    assert.equal(batches[2]!.parsed[16]!.row.title, `Caf\u00e9 \u4e2d\u6587 \ud83c\udfe2 ${lines.length - 1}`);
    assert.deepEqual(batches.flatMap((b) => b.parsed.map((p) => p.line)), lines.map((_, i) => i + 1));
  });

  it('line ends \\n, \\r\\n and a lone \\r; blank lines counted but skipped; a byte-order mark ignored', async () => {
    const { batches } = await bothWays(`\uFEFF${lineOf()}\r\n\r\n   \n${lineOf()}\r${lineOf()}\n\n`);
    assert.deepEqual(batches.flatMap((b) => b.parsed.map((p) => p.line)), [1, 4, 5]);
    assert.equal(batches.at(-1)!.linesRead, 6);
  });

  it('U+2028 and U+2029 inside a JSON string are text, not line ends (node:readline ends lines at them since Node.js 22)', async () => {
    const title = 'Line\u2028separator and paragraph\u2029separator';
    const { batches, error } = await bothWays(`${lineOf({ title })}\n${lineOf()}\n`);
    assert.equal(error, undefined);
    assert.deepEqual(batches.flatMap((b) => b.parsed.map((p) => p.line)), [1, 2]);
    assert.equal(batches[0]!.parsed[0]!.row.title, title);
  });

  it('textLines: every line end, wherever the chunks of the file are cut (a \\r\\n across two chunks is one end)', async () => {
    const text = 'a\r\nb\rc\n\nd\u2028e\r\n\r\rf';
    const expected = ['a', 'b', 'c', '', 'd\u2028e', '', '', 'f'];
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)];
      const lines: string[] = [];
      for await (const line of textLines(Readable.from(chunks))) lines.push(line);
      assert.deepEqual(lines, expected, `cut at byte ${cut}`);
    }
    const lines: string[] = [];
    for await (const line of textLines(Readable.from(['x\n', 'y\r']))) lines.push(line);
    assert.deepEqual(lines, ['x', 'y'], 'a final line break ends the last line; nothing follows it');
  });

  it('an empty file: one empty batch', async () => {
    const { batches } = await bothWays('');
    assert.deepEqual(batches, [{ parsed: [], linesRead: 0 }]);
  });

  it('a bad line ends the reading with its error, after the lines before it (in a batch of their own)', async () => {
    const lines = Array.from({ length: LINES_PER_BATCH + 500 }, () => lineOf());
    lines.push('{"id": ', lineOf());
    const { batches, error } = await bothWays(lines.join('\n'));
    assert.ok(error instanceof ImportError);
    assert.equal(error.line, LINES_PER_BATCH + 501);
    assert.match(error.message, /not valid JSON/);
    assert.deepEqual(batches.map((b) => b.parsed.length), [LINES_PER_BATCH, 500]);
    assert.equal(batches[1]!.linesRead, LINES_PER_BATCH + 500);
  });

  it('a bad first line: the error alone', async () => {
    const { batches, error } = await bothWays(`${lineOf({ country: 'xx' })}\n${lineOf()}`);
    assert.deepEqual(batches, []);
    assert.ok(error instanceof ImportError && error.field === 'country');
  });

  it('an input that fails part way: the lines checked before it go first, then its error', async () => {
    const lines = Array.from({ length: 10 }, () => lineOf());
    let sent = false;
    const failing = new Readable({
      read() {
        if (!sent) {
          sent = true;
          this.push(Buffer.from(`${lines.join('\n')}\n`));
        } else {
          this.destroy(new Error('EIO: the disk went away'));
        }
      },
    });
    const { batches, error } = await drain(parseLines(failing));
    assert.deepEqual(batches.map((b) => [b.parsed.length, b.linesRead]), [[10, 10]]);
    assert.match(String(error), /EIO/);
  });

  it('a file that cannot be read is an error, not a hang', async () => {
    const { error } = await drain(parseLinesInWorker({ path: join(dir, 'missing.ndjson') }));
    assert.match(String(error), /ENOENT/);
  });

  it('the worker stops when the reader stops early, however much of the file is left', async () => {
    const text = Array.from({ length: 10 * LINES_PER_BATCH }, () => lineOf()).join('\n');
    const reading = parseLinesInWorker({ path: fileOf(text) });
    const first = await reading.next();
    assert.equal(first.done, false);
    assert.equal((await reading.return(undefined)).done, true);
    // The worker is terminated by then: nothing keeps this test's process from ending.
  });
});
