/**
 * Whether a process is alive: signal 0 checks without sending anything. EPERM means it exists
 * under another user. Its own module so that database.ts (stale templates) and process.ts (the
 * servers the tests start) share it without an import cycle (process.ts imports server.ts, which
 * imports database.ts).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
