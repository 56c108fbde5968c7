/**
 * Where the browser tests find a Chromium: the one lookup every browser test uses (through
 * `chromiumForTests()`, fed by the globalSetup in chromium-setup.ts). In order:
 *
 * 1. `CHROMIUM_PATH`, when set: only there (`CHROMIUM_PATH=/nonexistent` makes a machine
 *    without Chromium);
 * 2. Debian's `chromium`: `/usr/bin/chromium`, or `chromium` on PATH;
 * 3. a Playwright-installed browser (`npx playwright install chromium`): playwright-core's
 *    own registry location, `~/.cache/ms-playwright` unless PLAYWRIGHT_BROWSERS_PATH says;
 * 4. the one the `@sparticuz/chromium` dev dependency ships brotli-packed, unpacked once
 *    into `node_modules/.cache/context-compiler/`.
 *
 * A candidate counts only if it runs and says it is Chrome or Chromium (`--version`), so a
 * binary this machine cannot load (a missing shared library, another architecture) is
 * passed over and named in the reason.
 */
import { execFile } from 'node:child_process';
import { constants, readFileSync } from 'node:fs';
import { access, mkdir, mkdtemp, realpath, rename, rm } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { chromium as playwright, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';

export type ChromiumLookup = { path: string; from: string } | { skipped: string };

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Chromium the browser tests drive, or why they are skipped. */
    chromium: ChromiumLookup;
  }
}

/** How to run the skipped browser tests: said in the skip line and in CI's failure. */
export const ENABLE_BROWSER_TESTS = 'apt-get install chromium, `npx playwright install chromium`, or set CHROMIUM_PATH to a Chromium or Chrome binary';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const PACKAGE = join(PROJECT_ROOT, 'node_modules/@sparticuz/chromium');
const run = promisify(execFile);

/** Null when `path` runs here and says it is Chrome or Chromium; otherwise what is wrong with it. */
async function check(path: string): Promise<string | null> {
  try {
    await access(path, constants.X_OK);
  } catch {
    return `${path} is not an executable file`;
  }
  try {
    const { stdout } = await run(path, ['--version'], { timeout: 15_000 });
    return /Chrom(?:e|ium)\b.*\d+\.\d+\.\d+/.test(stdout) ? null : `${path} --version does not name Chrome or Chromium`;
  } catch (error) {
    return `${path} does not run here (${firstLine(error)})`;
  }
}

/** What a failed command said: the first line it wrote to stderr, else the error's. */
function firstLine(error: unknown): string {
  const { stderr, message } = error as { stderr?: string; message: string };
  return (stderr?.trim() || message).split('\n')[0]!;
}

function onPath(name: string, env: NodeJS.ProcessEnv): string[] {
  return (env['PATH'] ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, name));
}

const exists = (path: string) => access(path).then(() => true, () => false);

/**
 * The npm package's Chromium, unpacked on first use. The package unpacks into os.tmpdir();
 * pointed at a private staging directory that is then renamed into place, a run that is
 * killed halfway, or two runs at once, never leave a half-written binary where it is used.
 */
async function packagedChromium(): Promise<string | null> {
  let version: string;
  try {
    version = (JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return null;
  }
  const cache = join(PROJECT_ROOT, 'node_modules/.cache/context-compiler');
  const dir = join(cache, `sparticuz-chromium-${version}`);
  const binary = join(dir, 'chromium');
  if (await exists(binary)) return binary;
  await mkdir(cache, { recursive: true });
  const staging = await mkdtemp(join(cache, 'unpacking-'));
  try {
    const script =
      "try { const { default: chromium } = await import('@sparticuz/chromium'); process.stdout.write(await chromium.executablePath()); } " +
      'catch (error) { process.stderr.write(String(error.message)); process.exit(1); }';
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: PROJECT_ROOT, env: { ...process.env, TMPDIR: staging }, timeout: 120_000 });
    if (stdout !== join(staging, 'chromium')) throw new Error(`@sparticuz/chromium unpacked to ${stdout}, not ${staging}`);
    await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another run unpacked it first: theirs is as good as ours.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return binary;
}

/** The first Chromium that runs here, in the order above, or why there is none. */
export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumLookup> {
  const explicit = env['CHROMIUM_PATH'];
  if (explicit !== undefined && explicit !== '') {
    const problem = await check(explicit);
    return problem === null ? { path: explicit, from: 'CHROMIUM_PATH' } : { skipped: `CHROMIUM_PATH is set and ${problem}` };
  }
  const places: Array<{ from: string; paths: () => Promise<string[]> }> = [
    { from: DEBIAN_CHROMIUM, paths: async () => [DEBIAN_CHROMIUM] },
    { from: 'chromium on PATH', paths: async () => onPath('chromium', env) },
    { from: "Playwright's browsers", paths: async () => [playwright.executablePath()] },
    { from: '@sparticuz/chromium', paths: async () => [await packagedChromium()].filter((path) => path !== null) },
  ];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const place of places) {
    let paths: string[];
    try {
      paths = await place.paths();
    } catch (error) {
      problems.push(`${place.from}: ${firstLine(error)}`);
      continue;
    }
    for (const path of paths) {
      if (!(await exists(path))) continue;
      // /bin is /usr/bin on Debian: one binary, one check.
      const real = await realpath(path);
      if (seen.has(real)) continue;
      seen.add(real);
      const problem = await check(path);
      if (problem === null) return { path, from: place.from };
      problems.push(problem);
    }
  }
  const none = `no Chromium (CHROMIUM_PATH is unset; looked at ${places.map((place) => place.from).join(', ')})`;
  return { skipped: [none, ...problems].join('; ') };
}

/** This run's Chromium (from the globalSetup), or null with the reason the browser tests are skipped. */
export function chromiumForTests(): { path: string; from: string; skipped: null } | { path: null; from: null; skipped: string } {
  const provided = inject('chromium');
  return 'path' in provided ? { ...provided, skipped: null } : { path: null, from: null, skipped: provided.skipped };
}

/**
 * Saves a PNG of the page as the browser tests reached it, for a person to look at, when
 * `UI_SCREENSHOTS_DIR` names a directory (made if missing), and does nothing otherwise: nothing
 * asserts on a screenshot, a full-page one costs Chromium about 0.7 s of CPU, and the run's
 * own temp directory, where they used to go, is removed when the run ends.
 */
export async function saveScreenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  const dir = process.env['UI_SCREENSHOTS_DIR'];
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: join(dir, name), fullPage: options.fullPage ?? true });
}
