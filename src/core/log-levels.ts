/** The levels LOG_LEVEL accepts (config/index.ts checks it against these); no imports, so config stays light. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
