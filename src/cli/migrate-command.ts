import { emit } from './output.js';
import { withStore } from './store.js';

export async function migrateCommand(opts: { json: boolean }): Promise<void> {
  // Not migrated by withStore first, so that what this run applied is reported.
  const applied = await withStore((store) => store.migrate(), { migrate: false, create: true });
  emit(opts.json, { applied }, () => (applied.length === 0 ? 'Schema is up to date.' : `Applied: ${applied.join(', ')}`));
}
