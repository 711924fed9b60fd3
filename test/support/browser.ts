import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';

/** Debian's Chromium (CI installs it), or the one BROWSER_TEST_CHROMIUM names. */
export const CHROMIUM = process.env.BROWSER_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Browser suites run whenever it exists and say plainly that they were skipped when not. */
export const chromiumAvailable = existsSync(CHROMIUM);

export interface Browser {
  context: BrowserContext;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Chromium through playwright-core, headless, in a fresh profile of its own (Playwright passes it
 * to Chromium as --user-data-dir) that `close` removes.
 */
export async function launchChromium(options: { viewport?: { width: number; height: number }; javaScriptEnabled?: boolean } = {}): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'listings-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      ...options,
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
