import { cliContext } from './context.js';

/** CLI results and failures (OPERATIONS: `--json`, one-line errors, exit 0 / 1 / 2). */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: 1 | 2 = 1) {
    super(message);
    this.name = 'CliError';
  }
}

/** Prints a result on the command's stdout: the JSON object alone with `--json`, else the human text. */
export function emit(json: boolean, result: object, human: () => string): void {
  cliContext().stdout(json ? `${JSON.stringify(result)}\n` : `${human()}\n`);
}

/** A plain table for people; columns padded to the widest cell. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
