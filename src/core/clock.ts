/**
 * Milliseconds since the Unix epoch. Everything that depends on time (rate limits, visibility
 * by expiry, last-used) takes a Clock so that tests can move time instead of sleeping.
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
