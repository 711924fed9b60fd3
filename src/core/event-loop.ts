/**
 * One turn of the event loop (resolves in the check phase, after the I/O that was ready). Work
 * that runs in slices awaits it between them: SQLite's driver is synchronous and promise chains
 * never leave the turn they run in, so without it a loop of queries or a long pass holds every
 * request and timer until it ends.
 */
export const yieldToEventLoop = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
