import { ERROR_CODES } from '../core/api-error.js';

/**
 * What usage is counted by (issue 12): `200`, `304`, or the error code of the answer (D6). In this
 * API each error status has exactly one code, so the status says it.
 */
export const OUTCOMES = ['200', '304', ...ERROR_CODES] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Index in OUTCOMES of the first error code: outcomes from here on are failures. */
export const FIRST_ERROR = 2;

const INDEX = new Map<string, number>(OUTCOMES.map((o, i) => [o, i]));
const STATUS_OUTCOME = new Int8Array(600).fill(-1);
STATUS_OUTCOME[200] = 0;
STATUS_OUTCOME[304] = 1;
const byCode = (code: Outcome) => INDEX.get(code)!;
for (const status of [400, 413, 414, 431]) STATUS_OUTCOME[status] = byCode('bad_request');
STATUS_OUTCOME[401] = byCode('unauthorized');
STATUS_OUTCOME[403] = byCode('origin_not_allowed');
STATUS_OUTCOME[404] = byCode('not_found');
STATUS_OUTCOME[405] = byCode('method_not_allowed');
STATUS_OUTCOME[429] = byCode('rate_limited');
for (let status = 500; status < 600; status++) STATUS_OUTCOME[status] = byCode('internal_error');

/** The index in OUTCOMES of an answer's status, or -1 when it is none (a 204 preflight, say). */
export function outcomeOfStatus(status: number): number {
  return status >= 0 && status < 600 ? STATUS_OUTCOME[status]! : -1;
}

export function isOutcome(text: string): text is Outcome {
  return INDEX.has(text);
}
