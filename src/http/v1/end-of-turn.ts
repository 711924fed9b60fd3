import type { FastifyReply } from 'fastify';

/**
 * Answers that are ready in the same turn of the event loop are sent together at its end, through
 * Fastify's public `reply.send`, from one `setImmediate` per turn: the turn's answers reach the
 * kernel back to back, so the clients' side is woken once for the batch rather than once per
 * answer as each is made (issue 41; docs/design/end-of-turn-answers.md has the invariant and the
 * A/B). Only answers ready at once are deferred; one that waited for I/O is sent when it is ready.
 *
 * `LISTINGS_END_OF_TURN=off` (read once, at start) sends each answer at once: the switch of the
 * design record's A/B, not an operator setting.
 */
export const END_OF_TURN = process.env.LISTINGS_END_OF_TURN !== 'off';

const ready: Array<{ reply: FastifyReply; send: () => void }> = [];
let scheduled = false;

function sendAll(): void {
  scheduled = false;
  const batch = ready.splice(0);
  for (const { reply, send } of batch) {
    try {
      send();
    } catch (error) {
      // One answer that cannot be sent must not hold back the rest of the turn's: it becomes the
      // error answer of its own request (the app's error handler).
      reply.send(error as Error);
    }
  }
}

/** Sends `reply` (by `send`, which calls `reply.send`) at the end of this turn. */
export function sendAtEndOfTurn(reply: FastifyReply, send: () => void): void {
  ready.push({ reply, send });
  if (!scheduled) {
    scheduled = true;
    setImmediate(sendAll);
  }
}
