import type { SyncStateStore } from './client.js';

/** Variable specifiers: bundlers leave them alone, so browser builds never see node:fs. */
const NODE_FS = 'node:fs/promises';
const NODE_PATH = 'node:path';
type NodeFs = typeof import('node:fs/promises');
type NodePath = typeof import('node:path');

/**
 * A SyncStateStore in one JSON file (Node.js), for a `sync` run by cron: each run reads the cursor
 * and the ETag the last one left, so a run with nothing new is one free 304. Writes replace the file
 * at once (a temporary file renamed over it), so a run killed mid-write leaves the previous state.
 * Runs that overlap should not share a file: the last one to write wins.
 */
export class FileStateStore implements SyncStateStore {
  constructor(readonly path: string) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.#read())[key];
  }

  async set(key: string, value: string): Promise<void> {
    const fs = (await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_FS)) as NodeFs;
    const { dirname, basename, join } = (await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_PATH)) as NodePath;
    const all = await this.#read();
    all[key] = value;
    const temporary = join(dirname(this.path), `.${basename(this.path)}.${process.pid}.${Date.now()}.tmp`);
    await fs.writeFile(temporary, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    await fs.rename(temporary, this.path);
  }

  async #read(): Promise<Record<string, string>> {
    const fs = (await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_FS)) as NodeFs;
    let text: string;
    try {
      text = await fs.readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw error;
    }
    const all = JSON.parse(text) as unknown;
    if (all === null || typeof all !== 'object' || Array.isArray(all)) throw new TypeError(`${this.path} is not a sync state file (a JSON object).`);
    return all as Record<string, string>;
  }
}
