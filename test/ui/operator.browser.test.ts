/**
 * The operator's minute (issue 26), in Chromium against one real listening server that has
 * served an hour of traffic: from a `requestId` in a log line, find the run, read its summary
 * card, and reach the changed text of a block against the previous run — at 1280 and at
 * 420 px — with every figure on the way (the minute compiled for, sizes, shares, tokens,
 * digests) the same in every view. One server and one browser for the file; each case opens
 * its own browser context (no token, storage or cache carried over).
 */
import { appendFile, cp, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { EXAMPLE_BRAIN, loadConfig } from '../../src/config.js';
import { buildDist } from '../helpers/build.js';
import { chromiumForTests, saveScreenshot } from '../helpers/chromium.js';

/** Found by the globalSetup (test/helpers/chromium.ts): CHROMIUM_PATH, Debian's, Playwright's or the npm package's. */
const chromiumBinary = chromiumForTests();
const WAIT_MS = 10_000;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

let browser: Browser;
let app: FastifyInstance;
let base: string;
let root: string;
const logLines: Array<Record<string, unknown>> = [];

/** The runs an hour of traffic left, by what the test needs of them. */
const runs = { previous: '', changed: '', failed: '', mars: '', venus: '', governed: '', repeated: 'mars-call-1' };
/** The request id the service logged for the compile that changed (read from its log line, as an operator would). */
let loggedRequestId = '';

async function send(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; runId: string; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, runId: response.headers.get('x-run-id') ?? '', body: (await response.json()) as Record<string, unknown> };
}

/** One server that served an hour of traffic, and one browser, for every case of the file. */
async function start(): Promise<void> {
  await buildDist();
  browser = await chromium.launch({ executablePath: chromiumBinary.path!, headless: true, args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  root = await mkdtemp(join(tmpdir(), 'cc-operator-'));
  const brainRoot = join(root, 'brain');
  await cp(EXAMPLE_BRAIN, brainRoot, { recursive: true });
  const config = loadConfig({ BRAIN_ROOT: brainRoot, TRACE_DIR: join(root, 'traces'), LOG_LEVEL: 'info', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' });
  const logs = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  app = await buildApp(config, { logger: createLogger(config, logs) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  // An hour of traffic: personas at several minutes and topics, a repeated call answered 304, a governed worker, a failure.
  const worker = (now: string, task: string) => ({ phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', task, now });
  runs.previous = (await send('/compile', { method: 'POST', body: worker('2026-11-30T17:30:00Z', 'Draft the launch post.') })).runId;
  runs.mars = (await send('/context/mars?topicId=garden&now=2026-11-30T09:00:00Z', { headers: { 'x-request-id': 'voice-0900' } })).runId;
  runs.venus = (await send('/context/venus?now=2026-11-30T09:01:00Z')).runId;
  const first = await fetch(`${base}/context/mars?now=2026-11-30T09:05:00Z&runId=${runs.repeated}`);
  const etag = first.headers.get('etag')!;
  await first.arrayBuffer();
  expect((await fetch(`${base}/context/mars?now=2026-11-30T09:05:00Z&runId=${runs.repeated}`, { headers: { 'if-none-match': etag } })).status).toBe(304);
  runs.governed = (await send('/compile', { method: 'POST', body: { phase: 'start', surface: 'queued-task', worker: 'courier', task: 'Send the weekly digest', engine: 'gpt-4.1' } })).runId;
  const failed = await send('/compile', { method: 'POST', body: { phase: 'start', surface: 'queued-task', worker: 'scribe', task: 'x'.repeat(9000), now: '2026-11-30T17:35:00Z' } });
  expect(failed.status).toBe(422);
  runs.failed = failed.runId;
  // Someone edits the worker's identity; the next compile of scribe is the one an operator is asked about.
  await appendFile(join(brainRoot, 'workers/scribe/identity.md'), '\nPrefer short paragraphs.\n');
  const changed = await send('/compile', { method: 'POST', body: worker('2026-11-30T17:31:00Z', 'Draft the launch post.'), headers: { traceparent: TRACEPARENT } });
  expect(changed.status).toBe(200);
  runs.changed = changed.runId;
  const line = logLines.find((entry) => entry['msg'] === 'request' && entry['runId'] === runs.changed);
  loggedRequestId = String(line?.['requestId'] ?? '');
  expect(loggedRequestId).not.toBe('');
}

interface Opened {
  page: Page;
  problems: string[];
  close(): Promise<void>;
}

async function open(width: number): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width, height: width > 500 ? 900 : 800 } });
  context.setDefaultTimeout(WAIT_MS);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return { page, problems, close: () => context.close() };
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
/** An operator's steps through a task: each page opened, click and keystroke counts one. */
class Steps {
  total = 0;
  constructor(private readonly page: Page) {}
  async open(url: string): Promise<void> {
    this.total += 1;
    await this.page.goto(url);
  }
  async click(target: Locator): Promise<void> {
    this.total += 1;
    await target.click();
  }
  async type(target: Locator, typed: string): Promise<void> {
    this.total += typed.length;
    await target.pressSequentially(typed);
  }
  async press(target: Locator, key: string): Promise<void> {
    this.total += 1;
    await target.press(key);
  }
}

const noSidewaysScroll = (page: Page) => page.evaluate('document.documentElement.scrollWidth - window.innerWidth');

/** The cells whose text takes more than one line: none, when no word or figure in them was broken across lines. */
const brokenCells = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((cells) =>
    cells
      .filter((cell) => {
        const range = cell.ownerDocument.createRange();
        range.selectNodeContents(cell);
        const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
        return tops.size > 1;
      })
      .map((cell) => cell.textContent),
  );

/**
 * What an accessibility check finds on the page as shown: text below the AA contrast of 4.5:1
 * against the background it is drawn on, a heading level skipped (h1 then h3), a control inside a
 * heading (read as part of it). Text in a disabled control is exempt, as AA exempts it.
 */
const accessibilityProblems = (page: Page) => page.evaluate(ACCESSIBILITY_SCRIPT) as Promise<string[]>;

/** Runs in the page (the tests are compiled without the DOM's types). */
const ACCESSIBILITY_SCRIPT = String.raw`(() => {
    const problems = [];
    const rgb = (value) => {
      const found = /rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)/.exec(value);
      return found ? [Number(found[1]), Number(found[2]), Number(found[3]), found[4] === undefined ? 1 : Number(found[4])] : null;
    };
    const luminance = ([r, g, b]) => {
      const linear = (c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
      return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    };
    const background = (element) => {
      for (let at = element; at; at = at.parentElement) {
        const color = rgb(getComputedStyle(at).backgroundColor);
        if (color && color[3] > 0.5) return color;
      }
      return [255, 255, 255];
    };
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const seen = new Set();
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const element = node.parentElement;
      if (!element || seen.has(element) || !(node.textContent || '').trim()) continue;
      seen.add(element);
      if (element.closest(':disabled, [hidden]') || element.getClientRects().length === 0) continue;
      const style = getComputedStyle(element);
      if (style.visibility === 'hidden' || style.display === 'none') continue;
      const color = rgb(style.color);
      if (!color) continue;
      const [fg, bg] = [luminance(color), luminance(background(element))];
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      if (ratio < 4.5) problems.push('contrast ' + ratio.toFixed(2) + ':1 for "' + node.textContent.trim().slice(0, 30) + '" (' + element.tagName.toLowerCase() + '.' + element.className + ')');
    }
    let previous = 0;
    for (const heading of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
      if (heading.getClientRects().length === 0 && !heading.closest('details')) continue;
      const level = Number(heading.tagName[1]);
      if (level > previous + 1) problems.push('h' + level + ' "' + (heading.textContent || '').trim().slice(0, 30) + '" after h' + previous);
      if (heading.querySelector('button, a, input, select')) problems.push('a control inside h' + level + ' "' + (heading.textContent || '').trim().slice(0, 30) + '"');
      previous = level;
    }
    return problems;
  })()`;

/**
 * Waits until the runs list shows exactly these runs. The list a search replaces may already
 * hold the searched-for row, so waiting for the row alone can catch the old list, or the moment
 * between the two, on a busy machine.
 */
async function listShows(page: Page, runIds: string[]): Promise<void> {
  // Read through a locator and polled here: a predicate string (page.waitForFunction) is code the
  // page evaluates, which the viewer's Content-Security-Policy (script-src 'self') refuses.
  const rows = page.locator('table.runs tbody tr');
  await expect.poll(() => rows.evaluateAll((found) => found.map((row) => row.getAttribute('data-run-id'))), { timeout: 60_000, interval: 50 }).toEqual(runIds);
}

/** The flow of the issue: log line → runs list → run card → what changed, collecting every figure shown on the way. */
async function fromLogLineToChangedText(page: Page, width: number): Promise<Record<string, string>> {
  const seen: Record<string, string> = {};
  await page.goto(`${base}/ui/`);
  // In a narrow window the search is folded under its summary: one more tap.
  if (width < 640) await page.locator('details.filters-fold > summary').click();
  await page.locator('input[name="requestId"]').fill(loggedRequestId);
  await page.locator('form.filters button[type="submit"]').click();
  await page.waitForURL(new RegExp(`requestId=${loggedRequestId}`));
  const row = page.locator(`tr[data-run-id="${runs.changed}"]`);
  await listShows(page, [runs.changed]);
  seen['list minute'] = await text(page, `tr[data-run-id="${runs.changed}"] .compiled-for`);
  expect(seen['list minute']).toBe('2026-11-30 17:31 UTC');
  seen['list chars'] = await text(page, `tr[data-run-id="${runs.changed}"] .col-chars`);
  expect(await noSidewaysScroll(page)).toBe(0);

  await row.locator('a.run-link:visible, .run-id-under a:visible').first().click();
  await page.waitForURL(new RegExp(`#/runs/${runs.changed}$`));
  const card = page.locator('section.run-card');
  await card.locator('.vs-line').waitFor();
  seen['card minute'] = await text(page, '.run-card .card-minute');
  expect(await text(page, '.run-card')).toContain('workerscribe');
  expect(await text(page, '.run-card .card-status')).toContain('200 delivered');
  expect(await text(page, '.run-card .request-id')).toBe(loggedRequestId);
  seen['card chars'] = (await text(page, '.run-card .card-delivered')).replace(' delivered', '');
  seen['card budget'] = await text(page, '.run-card .card-budget');
  // The previous run of scribe, and in one line what changed since it: the identity file.
  expect(await text(page, '.run-card .previous-run')).toBe(runs.previous);
  expect(await text(page, '.run-card .vs-line')).toMatch(/^2 of \d+ blocks differ: identity changed \(sources changed workers\/scribe\/identity\.md\); 4 of 4 cache boundaries moved; the route key changed\.$/);
  expect(await text(page, '.run-nav')).toContain('← Previous run of scribe');
  // The prompt comes before the blocks, and the raw request is folded.
  const order = await page.locator('article.event section').evaluateAll((sections) => sections.map((section) => section.className));
  expect(order.indexOf('delivered')).toBeLessThan(order.indexOf('blocks-section'));
  expect(await page.locator('details.raw-request').getAttribute('open')).toBeNull();

  // Shares: the block's, the bar's and the HUD's are one figure.
  seen['block share'] = await text(page, 'li.block[data-kind="identity"] .share');
  const barTitle = (await page.locator('.bar .bar-block[data-block="0"]').getAttribute('title')) ?? '';
  seen['bar share'] = /\(([\d.]+ %) of the prompt\)/.exec(barTitle)?.[1] ?? '';
  seen['hud share'] = (await text(page, 'section.hud tr[data-path="workers/scribe/identity.md"] td.share')).trim();
  // The budget bar is scaled to what was used: the blocks fill it, the limit is a marker with its figure.
  const cover = await page.locator('.bar').evaluate((bar) => [...bar.querySelectorAll('.bar-block')].reduce((sum, block) => sum + block.getBoundingClientRect().width, 0) / bar.getBoundingClientRect().width);
  expect(cover).toBeGreaterThan(0.9);
  expect(await page.locator('.bar .bar-limit').count()).toBe(1);
  expect(await text(page, 'section.budget')).toMatch(/limit 24,000 chars →/);
  seen['budget used'] = /^[\d,]+ chars delivered: ([\d.]+ % of the [\d,]+-char budget)/.exec(await text(page, 'section.budget p.budget-figures'))?.[1] ?? '';
  seen['event chars'] = /([\d,]+ chars) delivered/.exec(await text(page, 'article.event section.hud > p'))?.[1] ?? '';
  seen['budget chars'] = /^([\d,]+ chars) delivered/.exec(await text(page, 'section.budget p.budget-figures'))?.[1] ?? '';
  // Facts are said once: the card says the size and request id, the event does not say them again.
  expect(await page.locator('article.event .summary dt', { hasText: 'size' }).count()).toBe(0);
  expect(await page.locator('article.event .summary dt', { hasText: 'request id' }).count()).toBe(0);
  expect(await page.locator('.bar .bar-label', { hasText: 'identity' }).count()).toBe(1);
  // Tokens: the cache plan's figure for the volatile prefix, to hold against the comparison's.
  seen['run tokens'] = await text(page, 'section.cache table.boundaries tbody tr:last-child td:nth-child(4)');
  seen['content sha'] = await text(page, 'li.block[data-kind="identity"] .digest');
  // Exact per-block tokens beside exact checkpoints, not an estimate (≈).
  expect(await text(page, 'li.block[data-kind="identity"] .block-tokens')).toMatch(/^[\d,]+ tokens$/);
  expect(await noSidewaysScroll(page)).toBe(0);
  await saveScreenshot(page, `operator-run-${width}.png`);

  await page.locator('.run-card a.compare-previous').click();
  await page.waitForURL(new RegExp(`#/compare/${runs.previous}/${runs.changed}$`));
  await page.locator('tr.block-diff[data-diff-kind="identity"] .diff-text').waitFor();
  seen['compare minute'] = await text(page, '.compared-runs [data-side="after"] dd');
  const identity = page.locator('.compare-blocks tr[data-kind="identity"]');
  expect(await identity.getAttribute('data-change')).toBe('changed');
  const diff = await text(page, 'tr.block-diff[data-diff-kind="identity"]');
  expect(diff).toMatch(/2 lines added, 0 removed; each text checked against its sha256: content sha256 [0-9a-f]{12} → content sha256 [0-9a-f]{12}⋯/);
  expect(await page.locator('tr.block-diff[data-diff-kind="identity"] .diff-added', { hasText: 'Prefer short paragraphs.' }).count()).toBe(1);
  // Only the changed text and two lines around it: the rest of the identity is folded.
  expect(diff).toMatch(/⋯ \d+ unchanged lines/);
  // The digests the changed text was checked against are the run pages' content digests, labelled alike.
  seen['compare content sha'] = await text(page, 'tr.block-diff[data-diff-kind="identity"] .diff-sha[data-side="after"] .digest');
  seen['compare tokens'] = (await text(page, '.compare-boundaries tr[data-boundary="volatile"] td:nth-child(3)')).split(' · ')[1]?.replace(' tokens', '') ?? '';
  // The task text is the same: no "request differed" beside "the same request".
  expect(await text(page, '[data-difference="request"]')).toBe('The same request identifiers and options, and the same request text.');
  expect(await noSidewaysScroll(page)).toBe(0);
  expect(await brokenCells(page, '.compare-table td.nowrap, .compare-table .nowrap')).toEqual([]);
  await saveScreenshot(page, `operator-compare-${width}.png`);
  return seen;
}

const title = chromiumBinary.skipped ? `the operator’s minute in chromium (SKIPPED: ${chromiumBinary.skipped})` : `the operator’s minute in chromium (${chromiumBinary.from})`;

describe.skipIf(chromiumBinary.skipped !== null)(title, () => {
  beforeAll(start, 180_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  for (const width of [1280, 420]) {
    it(`at ${width} px: from a request id in a log line to the changed text of a block against the previous run, every figure equal across views`, async () => {
      const { page, problems, close } = await open(width);
      try {
        const seen = await fromLogLineToChangedText(page, width);
        expect(seen['card minute'], 'the minute compiled for').toBe(seen['list minute']);
        expect(seen['compare minute']).toBe(seen['list minute']);
        expect(seen['bar share'], 'shares').toBe(seen['block share']);
        expect(seen['hud share']).toBe(seen['block share']);
        expect(seen['compare tokens'], 'tokens').toBe(seen['run tokens']);
        expect(seen['card chars'], 'chars delivered').toBe(seen['list chars']);
        expect(seen['event chars']).toBe(seen['list chars']);
        expect(seen['budget chars']).toBe(seen['list chars']);
        expect(seen['card budget'], 'the budget used').toBe(seen['budget used']);
        expect(seen['compare content sha'], 'content digests').toBe(seen['content sha']);
        expect(seen['content sha']).toMatch(/^content sha256 [0-9a-f]{12}$/);
        expect(seen['block share']).toMatch(/^\d+\.\d %$/);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    });
  }

  it('at 420 px a failed run shows its error above the fold; a run answered 200 then 304 shows a timeline of whether its cached prefix held', async () => {
    const { page, problems, close } = await open(420);
    try {
      await page.goto(`${base}/ui/#/runs/${runs.failed}`);
      const failure = page.locator('.run-card .failure');
      await failure.waitFor();
      expect(await failure.textContent()).toContain('CC_BUDGET_EXCEEDED');
      const box = await failure.boundingBox();
      expect(box!.y + box!.height).toBeLessThanOrEqual(800);
      expect(await noSidewaysScroll(page)).toBe(0);
      await saveScreenshot(page, 'operator-failed-420.png', { fullPage: false });

      await page.goto(`${base}/ui/#/runs/${runs.repeated}`);
      const items = page.locator('section.timeline li');
      await items.nth(1).waitFor();
      expect(await items.count()).toBe(2);
      expect(await text(page, 'section.timeline li[data-event="1"]')).toContain('first delivery shown');
      expect(await text(page, 'section.timeline li[data-event="2"]')).toContain('not modified (nothing sent again); cached prefix held (all 3 boundaries)');
      expect(await text(page, 'section.timeline li[data-event="2"]')).toContain('compiled for 2026-11-30 09:05 UTC');
      // The latest event is open, the one before folded; the timeline opens it.
      expect(await page.locator('article.event details.event-details[open]').count()).toBe(1);
      await page.locator('section.timeline li[data-event="1"] button.timeline-jump').click();
      expect(await page.locator('article.event details.event-details[open]').count()).toBe(2);
      expect(await noSidewaysScroll(page)).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('credits SOUL.md and the memory files with the live context in the HUD, and names the digests it shows', async () => {
    const { page, problems, close } = await open(1280);
    try {
      await page.goto(`${base}/ui/#/runs/${runs.mars}`);
      const hud = page.locator('section.hud');
      await hud.waitFor();
      const liveShare = await text(page, 'li.block[data-kind="live-context"] .share');
      for (const path of ['SOUL.md', 'memory/2026-11-30.md']) {
        expect(await text(page, `section.hud tr[data-path="${path}"] .hud-blocks`), path).toBe('live-context (shared)');
        expect(await text(page, `section.hud tr[data-path="${path}"] td.share`), path).toBe(liveShare);
      }
      expect(await text(page, 'section.hud .shared-blocks')).toContain(`live-context ${liveShare} from `);
      // The card shows the topic asked for, and the runs list the same minute for this run.
      expect(await text(page, '.run-card')).toContain('topicgarden');
      expect(await text(page, '.run-card .card-minute')).toBe('2026-11-30 09:00 UTC');

      // A governed worker: its role receipt's digest is its block's content digest, labelled as such.
      await page.goto(`${base}/ui/#/runs/${runs.governed}`);
      await page.locator('section.governance').waitFor();
      const receipt = await text(page, 'section.governance .role .digest');
      const roleBlock = await text(page, 'li.block[data-kind="role"] .digest');
      expect(receipt).toMatch(/^content sha256 [0-9a-f]{12}$/);
      expect(receipt).toBe(roleBlock);
      expect(await text(page, 'section.governance .role')).toMatch(/\(block #\d+ role\)/);
      expect(await text(page, '.run-card')).toContain('engine gpt-4.1'.replace(' ', ''));

      // Finding runs by trace and by time: the traceparent of the call, and the minute range of the hour.
      await page.goto(`${base}/ui/#/runs?traceparent=${TRACEPARENT.slice(3, 35)}`);
      await listShows(page, [runs.changed]);
      await page.goto(`${base}/ui/#/runs?runId=${runs.failed}`);
      await page.locator(`tr[data-run-id="${runs.failed}"]`).waitFor();
      expect(await page.locator(`tr[data-run-id="${runs.failed}"] .warnings-flag`).count()).toBe(0);
      await page.goto(`${base}/ui/#/runs?worker=nobody`);
      await page.locator('.results .empty').waitFor();
      const future = new Date(Date.now() + 3_600_000).toISOString();
      await page.goto(`${base}/ui/#/runs?from=${future}`);
      await page.locator('.results .empty').waitFor();
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a call is one conversation: the refresh sits under its connect, the call page shows its timeline, and the next connect compares with the connect before it, not with its refresh (it said “the same prompt”)', async () => {
    // Traffic of its own, last in the file, so the listings the cases above count are unchanged:
    // two Gemini calls of mars, the first refreshed after a memory file changed between them.
    // On a Gemini 2.5 Live model, which takes the change as client content mid-session (3.1 reconnects with the whole setup).
    const first = await send('/context/mars?now=2026-11-30T09:10:00Z&provider=gemini&model=gemini-live-2.5-flash&runId=call-a');
    expect(first.status).toBe(200);
    expect(first.body['setup']).toBeDefined();
    await appendFile(join(root, 'brain/memory/2026-11-30.md'), '\n- Morning task: call the seed supplier about the late order.\n');
    const refreshed = await send('/context/mars/refresh?runId=call-a&now=2026-11-30T09:20:00Z');
    expect(refreshed.status).toBe(200);
    expect(refreshed.runId).toBe('call-a:refresh');
    expect(refreshed.body['delivery']).toBe('client-content');
    const second = await send('/context/mars?now=2026-11-30T09:30:00Z&provider=gemini&model=gemini-live-2.5-flash&runId=call-b');
    expect(second.status).toBe(200);

    for (const width of [1280, 420]) {
      const { page, problems, close } = await open(width);
      try {
        // The runs list: newest first, and the refresh right under its connect (it was listed above it, as a run of its own).
        await page.goto(`${base}/ui/#/runs?persona=mars`);
        await page.locator('tr[data-run-id="call-a:refresh"]').waitFor();
        const order = await page.locator('table.runs tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run-id')));
        expect(order.slice(0, 3)).toEqual(['call-b', 'call-a', 'call-a:refresh']);
        expect(await page.locator('tr[data-run-id="call-a:refresh"]').getAttribute('class')).toContain('nested');
        expect(await text(page, 'tr[data-run-id="call-a:refresh"] .call-part-tag')).toBe('↳ refresh');
        expect(await page.locator('tr[data-run-id="call-a:refresh"] input[name="compare"]').count()).toBe(0);
        expect(await noSidewaysScroll(page)).toBe(0);
        expect(await accessibilityProblems(page), `runs list at ${width} px`).toEqual([]);
        // Short labels stay whole: the caller column printed "worke / rs".
        if (width > 640) expect(await brokenCells(page, 'table.runs th, table.runs td.col-caller')).toEqual([]);

        // The newest call: compared with the call before it, whose memory differs — not with that call's refresh.
        await page.locator('tr[data-run-id="call-b"]').locator('a.run-link:visible, .run-id-under a:visible').first().click();
        await page.locator('.run-card .vs-line').waitFor();
        expect(await text(page, '.run-card .previous-run')).toBe('call-a');
        expect(await text(page, '.run-card .vs-previous')).toContain('vs previous call of mars');
        expect(await text(page, '.run-card .vs-line')).toMatch(/^\d+ of \d+ blocks differ/);
        expect(await text(page, '.run-nav')).toContain('← Previous call of mars');
        expect(await page.locator('.run-card a.compare-previous').getAttribute('href')).toBe('#/compare/call-a/call-b');
        // A call without refreshes says so, and links no run that does not exist.
        await page.locator('section.call-timeline .call-alone').waitFor();
        expect(await page.locator('section.call-timeline a').count()).toBe(0);
        expect(await page.locator('section.call-timeline li').count()).toBe(1);
        await page.locator('section.hud').waitFor();
        expect(await accessibilityProblems(page), `run page at ${width} px`).toEqual([]);
        await page.locator('.run-card a.compare-previous').click();
        await page.locator('.compare-blocks').waitFor();
        expect(await accessibilityProblems(page), `compare page at ${width} px`).toEqual([]);

        // The first call: its timeline, the connect and then the refresh with what it sent.
        await page.goto(`${base}/ui/#/runs/call-a`);
        await page.locator('section.call-timeline li[data-part="refresh"]').waitFor();
        expect(await page.locator('section.call-timeline li').evaluateAll((items) => items.map((item) => item.getAttribute('data-part')))).toEqual(['connect', 'refresh']);
        const step = await text(page, 'section.call-timeline li[data-part="refresh"]');
        expect(step).toMatch(/compiled for 2026-11-30 09:20 UTC · 200 sent [\d,]+ chars: live-context \+1 −\d+ lines · run call-a:refresh/);
        expect(await text(page, 'section.call-timeline li[data-part="connect"]')).toContain('this run, event 1');
        expect(await text(page, 'section.cache .cache-provider')).toBe('gemini: caches nothing');
        expect(await text(page, 'section.realtime h3')).toBe('Gemini Live setup');
        expect(await page.locator('section.realtime .copy-session').count()).toBe(0);

        // The refresh's own page says whose call it is part of, and goes back to the connect.
        await page.locator('section.call-timeline li[data-part="refresh"] a').click();
        await page.waitForURL(/#\/runs\/call-a%3Arefresh$/);
        await page.locator('.run-card a.connect-run').waitFor();
        expect(await text(page, '.run-card .vs-previous')).toContain('Part of the call connected in run call-a');
        expect(await text(page, 'section.call-timeline li[data-part="refresh"]')).toContain('this run, event 1');
        expect(await text(page, 'article.event .summary a.parent-run')).toBe('call-a');
        // What was sent is what is shown: the delta text itself and its own size, not the prompt it compared ("9,426 chars delivered").
        const sent = String(refreshed.body['text']);
        const sentSize = `${sent.length.toLocaleString('en-US')} chars delivered`;
        expect(await text(page, 'section.sent .sent-size')).toBe(sentSize);
        expect(await text(page, '.run-card .card-delivered')).toBe(sentSize);
        expect(await text(page, 'section.sent .verified')).toContain('equal to the digest recorded when it was sent');
        const shown = (await page.locator('section.sent pre.sent-text').textContent()) ?? '';
        expect(shown).toContain('Since we connected, the live context changed.');
        // Decoded, one readable line per line: not an escaped JSON line.
        // The memory line is no feeling: what changed in the live context is its themes line, which gained "order".
        expect(shown).toContain('[live-context]\nNew:\nRecurring themes across the last 3 daily notes: studio lease, call, grateful, garden, order, sam\nNo longer:\n');
        expect(shown).not.toContain('\\n');
        expect(await text(page, 'article.event section.delivered summary')).toMatch(/^The fresh compile it compared, byte for byte \([\d,]+ chars, not sent\)$/);
        expect(await accessibilityProblems(page), `refresh page at ${width} px`).toEqual([]);
        await saveScreenshot(page, `operator-refresh-${width}.png`);
        await page.locator('.run-nav a.connect-nav').click();
        await page.waitForURL(/#\/runs\/call-a$/);
        await page.locator('section.call-timeline li[data-part="refresh"]').waitFor();
        expect(await noSidewaysScroll(page)).toBe(0);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    }
  }, 90_000);

  it('the operator’s three tasks, at 1280 and 420 px, each counted in steps (clicks and keystrokes, not ms): find a call by request id and see whether a line was in its prompt; what changed between the last two connects; is the service healthy', async () => {
    // After the call above: call-b is the newest connect, call-a the one before it (refreshed once).
    const counted: Record<string, Record<string, number>> = {};
    for (const width of [1280, 420]) {
      const { page, problems, close } = await open(width);
      try {
        // 1. A request id from a voice server's log line: was "presenting the roadmap" in that call's prompt?
        const find = new Steps(page);
        await find.open(`${base}/ui/`);
        if (width < 640) await find.click(page.locator('details.filters-fold > summary'));
        await find.click(page.locator('input[name="requestId"]'));
        await find.type(page.locator('input[name="requestId"]'), 'voice-0900');
        await find.press(page.locator('input[name="requestId"]'), 'Enter');
        const row = page.locator(`tr[data-run-id="${runs.mars}"]`);
        await row.waitFor();
        await find.click(row.locator('a.run-link:visible, .run-id-under a:visible').first());
        // The page opens with what changes per call, readable, and a find box over the whole prompt.
        const box = page.locator('section.per-call input[name="find"]');
        await find.click(box);
        await find.type(box, 'presenting the roadmap');
        expect(await text(page, 'section.per-call .find-status')).toBe('1 match in 1 block');
        expect(await page.locator('section.per-call .per-call-block[data-kind="live-context"] mark').count()).toBe(1);
        const sections = await page.locator('main > div > section, main > div > details').evaluateAll((nodes) => nodes.map((node) => node.className));
        expect(sections.slice(0, 2)).toEqual(['run-card', 'per-call']);
        // Each line readable (not one escaped JSON line), the fixed blocks folded.
        const live = (await page.locator('.per-call-block[data-kind="live-context"] pre').textContent()) ?? '';
        expect(live.split('\n').length).toBeGreaterThan(5);
        expect(live).not.toContain('{"block"');
        expect(await page.locator('section.per-call details.fixed-block[data-kind="identity"]').getAttribute('open')).toBeNull();
        // Enter goes to the match; a line not in the prompt says so; a word in a fixed block opens it.
        await box.press('Enter');
        expect(await text(page, 'section.per-call .find-status')).toBe('1 of 1 match in 1 block');
        await box.fill('the late order');
        expect(await text(page, 'section.per-call .find-status')).toBe('Not in this prompt.');
        await box.fill('Mars');
        expect(await page.locator('section.per-call details.fixed-block[data-kind="identity"]').getAttribute('open')).not.toBeNull();
        expect(await noSidewaysScroll(page)).toBe(0);
        expect(await accessibilityProblems(page), `run page at ${width} px`).toEqual([]);
        await saveScreenshot(page, `task-find-${width}.png`, { fullPage: false });

        // 2. What changed between the last two connects (the refresh is under its connect, not compared).
        const changed = new Steps(page);
        await changed.open(`${base}/ui/`);
        await page.locator('tr[data-run-id="call-a:refresh"].nested').waitFor();
        await changed.click(page.locator('tr[data-run-id="call-b"]').locator('a.run-link:visible, .run-id-under a:visible').first());
        await page.locator('.run-card .vs-line').waitFor();
        expect(await text(page, '.run-card .previous-run')).toBe('call-a');
        await changed.click(page.locator('.run-card a.compare-previous'));
        await page.locator('tr.block-diff[data-diff-kind="live-context"] .diff-text').waitFor();
        expect(await text(page, 'tr.block-diff[data-diff-kind="live-context"]')).toContain('garden, order, sam');
        await saveScreenshot(page, `task-changed-${width}.png`, { fullPage: false });

        // 3. Is the service healthy? The strip on every page says so.
        const healthy = new Steps(page);
        await healthy.open(`${base}/ui/`);
        const strip = page.locator('#status[data-ready="true"]');
        await strip.waitFor();
        expect(await text(page, '#status .status-readiness')).toBe('● Ready');
        expect(await text(page, '#status .status-compiles')).toMatch(/^\d+ compiles, 1 failed \([\d.]+ %\): CC_BUDGET_EXCEEDED 1$/);
        expect(await text(page, '#status .status-fallbacks')).toBe('no call fell back');
        expect(await accessibilityProblems(page), `runs list at ${width} px`).toEqual([]);
        await saveScreenshot(page, `task-healthy-${width}.png`, { fullPage: false });

        counted[width] = { find: find.total, changed: changed.total, healthy: healthy.total };
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    }
    // The time each task takes, in steps: opening the viewer, clicks, keystrokes (a 10-character request id is 10).
    expect(counted).toEqual({ 1280: { find: 37, changed: 3, healthy: 1 }, 420: { find: 38, changed: 3, healthy: 1 } });
  }, 120_000);
});
