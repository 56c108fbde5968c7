/**
 * vitest globalSetup: finds the Chromium the browser tests drive, once per run (see
 * chromium.ts for where it looks). Without one the browser tests are skipped, and say so
 * and how to run them; under CI=true their absence fails the run instead, so CI can never
 * pass without having run them.
 */
import type { TestProject } from 'vitest/node';
import { ENABLE_BROWSER_TESTS, findChromium } from './chromium.js';

export default async function setup(project: TestProject): Promise<void> {
  const found = await findChromium();
  if ('skipped' in found) {
    if (process.env['CI'] === 'true') throw new Error(`CI=true requires the browser tests to run, but they would be skipped: ${found.skipped}`);
    process.stderr.write(`\nBrowser tests SKIPPED: ${found.skipped}. To run them: ${ENABLE_BROWSER_TESTS}.\n\n`);
  }
  project.provide('chromium', found);
}
