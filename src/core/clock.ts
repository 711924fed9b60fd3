/**
 * Milliseconds since the Unix epoch. Everything that depends on time (rate limits, visibility
 * by expiry, last-used) takes a Clock so that tests can move time instead of sleeping.
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/**
 * Resolves once `ms` have passed: a timer, so the event loop goes on meanwhile. What waits takes
 * a Sleep beside its Clock, so that tests move both together (test/support/server.ts TestClock).
 */
export type Sleep = (ms: number) => Promise<void>;

export const systemSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
