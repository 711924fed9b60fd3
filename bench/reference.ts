import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `npm run bench -- --against <ref>`: the release of record, built from the repository's own
 * history in a git worktree of its own (`git worktree add --detach`), with its own `npm ci` and
 * `npm run build` (unless its `npm ci` built it already, through `prepare`), so that it runs its
 * own code, its own dependencies and its own migrations.
 *
 * The worktree is kept as a cache, keyed by the full commit hash, in the OS temp folder (not under
 * the working tree, where eslint and tsc would see its sources): a second run against the same
 * commit starts at once. A marker file written after a successful build is what makes it reusable;
 * a folder without it (a build cut short) is removed and built again. BENCH_AGAINST_CACHE=0
 * removes the worktree at the end of the run (`git worktree remove`).
 */
export interface Reference {
  /** The ref as given on the command line. */
  ref: string;
  /** Its full commit hash. */
  commit: string;
  /** The commit's date (ISO 8601) and subject, for the report. */
  date: string;
  subject: string;
  /** The worktree, and the release's CLI in it. */
  dir: string;
  bin: string;
}

const MARKER = '.bench-reference-built';

/** The folder the reference of `commit` is built in. */
export function referenceDir(commit: string): string {
  return join(tmpdir(), `listings-api-reference-${commit}`);
}

/** `ref` as a commit of the repository at `root`: its full hash, date and subject; a plain error when it is none. */
export async function resolveRef(root: string, ref: string): Promise<Pick<Reference, 'ref' | 'commit' | 'date' | 'subject'>> {
  if (ref.trim() === '' || ref.startsWith('-')) throw new Error(`--against: expected a git ref (a commit, tag or branch), got "${ref}"`);
  const found = await run('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], root);
  if (found.code !== 0) throw new Error(`--against: "${ref}" is not a commit of the repository at ${root}`);
  const commit = found.stdout.trim();
  const [date = '', subject = ''] = (await mustRun('git', ['log', '-1', '--format=%cI%x00%s', commit], root)).trim().split('\0');
  return { ref, commit, date, subject };
}

/**
 * The reference built and ready: reused when its marker says it was built, else made afresh
 * (worktree, `npm ci`, `npm run build`). `log` gets a line per step; the build's own output goes
 * to a log file in the temp folder, whose tail is in the error when a step fails.
 */
export async function prepareReference(root: string, ref: string, log: (line: string) => void): Promise<Reference> {
  const resolved = await resolveRef(root, ref);
  const dir = referenceDir(resolved.commit);
  const reference: Reference = { ...resolved, dir, bin: join(dir, 'bin', 'listings-api.js') };
  const marker = join(dir, MARKER);
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === resolved.commit) {
    log(`Reference ${ref} = ${resolved.commit}: built already in ${dir} (cached).`);
    return reference;
  }
  if (existsSync(dir)) await removeReference(root, dir); // a build cut short: start again
  await mustRun('git', ['worktree', 'prune'], root); // registrations of worktrees whose folder is gone (a wiped temp folder)
  const buildLog = join(tmpdir(), `listings-api-reference-${resolved.commit}.log`);
  log(`Reference ${ref} = ${resolved.commit}: building in ${dir} (git worktree add, npm ci, npm run build; output in ${buildLog}). This takes a few minutes, once.`);
  const t0 = Date.now();
  try {
    await mustRun('git', ['worktree', 'add', '--detach', dir, resolved.commit], root);
    await runLogged('npm', ['ci', '--no-audit', '--no-fund'], dir, buildLog);
    // `npm ci` runs the package's `prepare` script, which builds it in the releases that have one:
    // `npm run build` only when the CLI does not start yet.
    if (!(await cliStarts(reference))) {
      await runLogged('npm', ['run', 'build'], dir, buildLog);
      if (!(await cliStarts(reference))) throw new Error(`the reference's CLI does not start after \`npm run build\` (\`node ${reference.bin} --help\`)`);
    }
  } catch (error) {
    await removeReference(root, dir);
    throw error;
  }
  writeFileSync(marker, `${resolved.commit}\n`);
  log(`Reference built in ${Math.round((Date.now() - t0) / 1000)} s.`);
  return reference;
}

/** Whether the release's CLI loads and answers `--help` (its build is there). */
async function cliStarts({ bin, dir }: Reference): Promise<boolean> {
  return existsSync(bin) && (await run(process.execPath, [bin, '--help'], dir)).code === 0;
}

/** The working tree's commit, and whether it has changes of its own ("abc123def456 with uncommitted changes"). */
export async function describeWorkingTree(root: string): Promise<string> {
  const head = (await mustRun('git', ['rev-parse', '--short=12', 'HEAD'], root)).trim();
  const changed = (await mustRun('git', ['status', '--porcelain'], root)).trim() !== '';
  return `${head}${changed ? ' with uncommitted changes' : ''}`;
}

/** `git worktree remove --force` (its node_modules and dist are untracked); a folder git does not know is deleted. */
export async function removeReference(root: string, dir: string): Promise<void> {
  const removed = await run('git', ['worktree', 'remove', '--force', dir], root);
  if (removed.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    await run('git', ['worktree', 'prune'], root);
  }
}

/**
 * The environment of the reference's npm commands: this one's without npm's own `npm_*` variables,
 * which `npm run bench` sets for the working tree's package and which would otherwise reach the
 * reference's npm (its package, its prefix).
 */
function npmFreeEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'INIT_CWD'));
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

async function mustRun(command: string, args: string[], cwd: string): Promise<string> {
  const ran = await run(command, args, cwd);
  if (ran.code !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${ran.code}): ${ran.stderr.trim().slice(-2000)}`);
  return ran.stdout;
}

/** A build step, its output appended to `logFile`; on failure, the error has the log's tail. */
async function runLogged(command: string, args: string[], cwd: string, logFile: string): Promise<void> {
  const out = openSync(logFile, 'a');
  let code: number;
  try {
    code = await new Promise<number>((resolve, reject) => {
      const child = spawn(command, args, { cwd, env: npmFreeEnv(), stdio: ['ignore', out, out] });
      child.once('error', reject);
      child.once('close', (exit) => resolve(exit ?? 1));
    });
  } finally {
    closeSync(out);
  }
  if (code !== 0) {
    const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-30).join('\n');
    throw new Error(`the reference's \`${command} ${args.join(' ')}\` failed (exit ${code}); the end of ${logFile}:\n${tail}`);
  }
}
