import assert from 'node:assert/strict';
import { readFile } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { END_OF_TURN, sendAtEndOfTurn } from '../../src/http/v1/routes.js';
import { within } from '../support/until.js';

/** Answers ready in one turn go out together at its end (src/http/v1/routes.ts, issue 41). */
describe('sendAtEndOfTurn', () => {
  /** A reply as the queue uses it: only `send`, for an answer that could not be sent. */
  const replyRecording = (log: string[], name: string) => ({ send: (error: Error) => log.push(`${name}: error answer (${error.message})`) }) as unknown as FastifyReply;

  it('is on unless LISTINGS_END_OF_TURN=off', () => {
    assert.equal(END_OF_TURN, process.env.LISTINGS_END_OF_TURN !== 'off');
  });

  it('sends nothing during the turn, then every answer of the turn in order, once, before timers and the next turn\'s', async () => {
    const log: string[] = [];
    // As in the server, the answers are made in an I/O callback (a socket's data; here a file's):
    // from there the event loop's check phase (setImmediate) comes before its next timers. From
    // the main script or a timer the order of a 0 ms timer and setImmediate is not defined.
    await new Promise<void>((resolve, reject) => readFile(fileURLToPath(import.meta.url), (error) => {
      if (error) return reject(error);
      for (const name of ['a', 'b', 'c']) sendAtEndOfTurn(replyRecording(log, name), () => log.push(name));
      setTimeout(() => log.push('timer'), 0);
      assert.equal(log.length, 0, 'nothing sent in the turn that made the answers');
      setImmediate(resolve);
    }));
    assert.deepEqual(log.slice(0, 3), ['a', 'b', 'c']);
    // The next turn's answer: waited for itself, not for a guessed time.
    const sent = new Promise<void>((resolve) => sendAtEndOfTurn(replyRecording(log, 'd'), () => {
      log.push('d');
      resolve();
    }));
    await within(sent, 5000, "the next turn's answer to be sent");
    assert.deepEqual(log.filter((entry) => entry !== 'timer'), ['a', 'b', 'c', 'd']);
  });

  it('an answer that throws becomes its own error answer; the rest of the turn is still sent', async () => {
    const log: string[] = [];
    sendAtEndOfTurn(replyRecording(log, 'a'), () => log.push('a'));
    sendAtEndOfTurn(replyRecording(log, 'b'), () => {
      throw new Error('cannot send');
    });
    sendAtEndOfTurn(replyRecording(log, 'c'), () => log.push('c'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ['a', 'b: error answer (cannot send)', 'c']);
  });
});
