/**
 * Loaded into the process of every test file (scripts/run-tests.js passes `--import` with this
 * module): an uncaught exception or an unhandled rejection anywhere in a suite fails the run
 * (issue 40). Node's test runner fails the test an error belongs to, but one raised by a resource
 * made in a hook or in a test that has ended (a connection opened in `before`) reaches it only
 * as a diagnostic line; this makes the file exit 1 whatever the runner decides, and names it.
 */
const EVENTS = ['uncaughtException', 'unhandledRejection'] as const;

let seen = 0;
for (const event of EVENTS) {
  process.on(event, (error: unknown) => {
    seen++;
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`\nno-uncaught: ${event} in ${process.argv[1] ?? 'a test file'}: ${text}\n`);
    process.exitCode = 1;
  });
}

// Whatever the runner set meanwhile, the run fails.
process.on('exit', () => {
  if (seen > 0) process.exitCode = 1;
});
