import { appendFile, access, mkdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { deliveredEvent, failedEvent } from '../helpers/trace-events.js';
import { buildViewer, IMG_LINE, prepareBrain, SCRIPT_LINE, traceCompile, traceFailure } from './fixtures.js';

/** Debian's chromium; .ci/run installs it (`apt-get install chromium`). */
const CHROMIUM = '/usr/bin/chromium';
const WAIT_MS = 10_000;
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const contexts: BrowserContext[] = [];
afterEach(async () => {
  while (contexts.length > 0) await contexts.pop()!.close();
});

beforeAll(async () => {
  await access(CHROMIUM).catch(() => {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`);
  });
  await buildViewer();
}, 120_000);

interface Browser {
  context: BrowserContext;
  page: Page;
  /** Page errors and console errors, e.g. a Content-Security-Policy violation. */
  problems: string[];
  dialogs: string[];
}

async function openBrowser(): Promise<Browser> {
  // A fresh profile per test: no token, cookie or cache survives from another test.
  const profile = await tempDir('cc-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    timeout: 30_000,
  });
  contexts.push(context);
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  const dialogs: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return { context, page, problems, dialogs };
}

async function listen(env: Record<string, string>) {
  const brainRoot = await copyExampleBrain();
  await prepareBrain(brainRoot);
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot, ...env });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { app, brainRoot, base: `http://127.0.0.1:${port}` };
}

const text = async (page: Page, selector: string) => (await page.locator(selector).first().textContent({ timeout: WAIT_MS })) ?? '';

describe('trace viewer in chromium', () => {
  it('without tokens: lists runs newest first, and a run page shows blocks, boundaries, redactions and brain markup as text', async () => {
    const { app, brainRoot, base } = await listen({});
    await traceFailure(app, 'run-failed', new Date(Date.now() - 5000));
    const event = await traceCompile(app, 'run-launch');
    // Changed after the compile: the run page must mark it, a file that appeared and a new memory note too.
    await appendFile(join(brainRoot, 'topics/launch.md'), '- a later note\n');
    await mkdir(join(brainRoot, 'channels/drafts'));
    await writeFile(join(brainRoot, 'channels/drafts/purpose.md'), 'Drafts in progress.\n');
    await writeFile(join(brainRoot, 'workers/scribe/memory/later.md'), '## Later\nA note written after the run.\n');

    const { context, page, problems, dialogs } = await openBrowser();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.goto(`${base}/ui/`);

    const rows = page.locator('table.runs tbody tr');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).getAttribute('data-run-id')).toBe('run-launch');
    expect(await rows.nth(1).getAttribute('data-run-id')).toBe('run-failed');
    const newest = (await rows.nth(0).textContent()) ?? '';
    expect(newest).toContain('scribe');
    expect(newest).toContain('chat');
    expect(newest).toContain('200');
    expect(await text(page, 'table.runs tbody tr:nth-child(2)')).toContain('422');
    expect(await page.locator('.token-form').count()).toBe(0);

    await page.locator('a.run-link', { hasText: 'run-launch' }).click();
    await page.waitForURL(/#\/runs\/run-launch$/);
    const blocks = page.locator('ol.blocks > li.block');
    await blocks.first().waitFor();
    expect(await blocks.count()).toBe(event.blocks!.length);
    expect(await page.locator('.bar .bar-block').count()).toBe(event.blocks!.length);
    expect(await blocks.evaluateAll((items) => items.map((item) => item.getAttribute('data-kind')))).toEqual(event.blocks!.map((block) => block.kind));
    expect(await page.locator('.bar .bar-block.auth-trusted-directive').count()).toBeGreaterThan(0);
    expect(await page.locator('.bar .bar-block.auth-advisory').count()).toBe(1);
    expect(await page.locator('.bar .bar-block.auth-content').count()).toBe(1);

    // Boundaries: one per cache class, with token counts; the worker-stable prefix is under
    // the providers' minimum (flagged), the channel-stable one over it.
    const boundaries = (event.cache as { boundaries: Array<{ class: string; approxTokens: number; belowMinimum: boolean }> }).boundaries;
    expect(boundaries.map((boundary) => boundary.class)).toEqual(['worker-stable', 'channel-stable', 'surface-stable', 'volatile']);
    expect(await page.locator('.boundary-label').count()).toBe(boundaries.length);
    expect(await page.locator('.bar .bar-boundary').count()).toBe(boundaries.length);
    const [workerStable, channelStable] = boundaries;
    expect([workerStable!.belowMinimum, channelStable!.belowMinimum]).toEqual([true, false]);
    const workerLabel = await text(page, '.boundary-label[data-boundary="worker-stable"]');
    expect(workerLabel).toContain(`≈${workerStable!.approxTokens.toLocaleString('en-US')} tokens`);
    expect(workerLabel).toContain('below 1,024-token minimum');
    const channelLabel = await text(page, '.boundary-label[data-boundary="channel-stable"]');
    expect(channelLabel).toContain(`≈${channelStable!.approxTokens.toLocaleString('en-US')} tokens`);
    expect(channelLabel).not.toContain('below');

    expect(await text(page, '.redactions [data-kind="email"]')).toBe('1 email');
    expect(await text(page, '.redactions [data-kind="phone"]')).toBe('0 phone');
    expect(await text(page, '.warnings')).toContain('topic "launch" is a fixture');
    expect(await text(page, '.chain[data-chain="linked"]')).toContain('Chain linked, without a key');
    expect(await text(page, 'article.event .verified')).toContain('match');
    expect(await text(page, '.digests')).toContain(event.promptSha256!);
    expect(await text(page, 'tr[data-path="topics/launch.md"]')).toContain('changed since');
    expect(await text(page, 'tr[data-path="workers/scribe/identity.md"]')).toContain('unchanged');
    expect(await text(page, 'tr[data-path="channels/drafts/purpose.md"]')).toContain('appeared since');
    expect(await text(page, 'tr[data-path="workers/scribe/memory/"]')).toContain('files changed: +later.md');

    // Brain markup is shown as text, in a trusted block and in an input block, and never runs.
    await page.locator('li.block[data-kind="purpose"] summary').click();
    const purpose = page.locator('li.block[data-kind="purpose"] pre.block-text');
    expect(await purpose.innerText()).toContain(SCRIPT_LINE);
    expect(await text(page, 'li.block[data-kind="topic"] pre.block-text')).toContain(IMG_LINE);
    expect(await text(page, 'pre.system-prompt')).toContain(SCRIPT_LINE);
    expect(await page.evaluate('typeof window.__ccPwned')).toBe('undefined');
    expect(await page.evaluate('document.querySelectorAll("script").length')).toBe(1);
    expect(await page.evaluate('document.querySelectorAll("img, iframe, object, embed").length')).toBe(0);

    // The copy button copies exactly the delivered instructions.
    await page.locator('button.copy-instructions').click();
    await page.locator('button.copy-instructions', { hasText: 'Copied' }).waitFor();
    const instructions = `${event.segments!.system.join('')}\n\n${event.segments!.input.join('')}`;
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(instructions);

    await page.screenshot({ path: join(tmpdir(), 'run-page.png'), fullPage: true });
    const png = await readFile(join(tmpdir(), 'run-page.png'));
    expect(png.subarray(1, 4).toString()).toBe('PNG');

    // A failed compile shows its error and no prompt.
    await page.locator('a', { hasText: '← Runs' }).click();
    await page.locator('a.run-link', { hasText: 'run-failed' }).click();
    const failure = page.locator('.failure');
    await failure.waitFor();
    expect(await failure.textContent()).toContain('CC_BUDGET_EXCEEDED');
    expect(await failure.textContent()).toContain('its limit is 6000');
    expect(await page.locator('pre.system-prompt').count()).toBe(0);

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('with tokens: asks once, keeps the token in sessionStorage only, and sends it to the API', async () => {
    const { app, base } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    await traceCompile(app, 'run-guarded');
    const { context, page, problems, dialogs } = await openBrowser();
    await page.goto(`${base}/ui/`);

    const form = page.locator('form.token-form');
    await form.waitFor();
    expect(await page.locator('table.runs').count()).toBe(0);
    await form.locator('input[name="token"]').fill('wrong-token-0123456789');
    await form.locator('button[type="submit"]').click();
    await page.locator('form.token-form [role="alert"]').waitFor();
    expect(await text(page, 'form.token-form [role="alert"]')).toContain('not accepted');

    await page.locator('form.token-form input[name="token"]').fill(TEST_TOKEN);
    await page.locator('form.token-form button[type="submit"]').click();
    await page.locator('tr[data-run-id="run-guarded"]').waitFor();
    expect(await page.evaluate('sessionStorage.getItem("context-compiler.token")')).toBe(TEST_TOKEN);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await context.cookies()).toEqual([]);

    await page.locator('a.run-link', { hasText: 'run-guarded' }).click();
    await page.locator('ol.blocks > li.block').first().waitFor();
    expect(page.url()).not.toContain(TEST_TOKEN);

    // Same tab, reloaded: the token is still there and nothing asks again.
    await page.reload();
    await page.locator('ol.blocks > li.block').first().waitFor();
    expect(await page.locator('form.token-form').count()).toBe(0);

    // "Forget token" drops it, and the next API call asks again.
    await page.locator('#forget').click();
    await page.locator('form.token-form').waitFor();
    expect(await page.evaluate('sessionStorage.getItem("context-compiler.token")')).toBeNull();

    expect(dialogs).toEqual([]);
    // A refused fetch is logged by the browser itself; anything else (a CSP violation, a script error) is not expected.
    expect(problems.filter((problem) => !/status of 401/.test(problem))).toEqual([]);
  });

  it('filters the list, pages to older runs, and shows the API\'s problem for a bad filter', async () => {
    const { app, base } = await listen({});
    const start = Date.now() - 60_000;
    const at = (seconds: number) => new Date(start + seconds * 1000).toISOString();
    await Promise.all(Array.from({ length: 27 }, (_, i) => app.traces.append(deliveredEvent(`run-${String(i).padStart(2, '0')}`, { at: at(i) }))));
    await Promise.all(Array.from({ length: 3 }, (_, i) => app.traces.append(failedEvent(`run-failed-${i}`, { at: at(40 + i) }))));
    const { page, problems, dialogs } = await openBrowser();
    await page.goto(`${base}/ui/`);

    const rows = page.locator('table.runs tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(25);
    expect(await rows.first().getAttribute('data-run-id')).toBe('run-failed-2');
    await page.locator('#older').click();
    await page.locator('tr[data-run-id="run-00"]').waitFor();
    expect(await rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-run-id')))).toEqual(['run-04', 'run-03', 'run-02', 'run-01', 'run-00']);
    expect(page.url()).toMatch(/#\/runs\?cursor=/);
    expect(await page.locator('#older').count()).toBe(0);

    await page.locator('form.filters select[name="outcome"]').selectOption('failed');
    await page.locator('form.filters button[type="submit"]').click();
    await page.waitForURL(/#\/runs\?outcome=failed$/);
    await page.locator('tr[data-run-id="run-failed-0"]').waitFor();
    expect(await rows.count()).toBe(3);

    await page.goto(`${base}/ui/#/runs?persona=mars&status=200`);
    await page.locator('tr[data-run-id="run-26"]').waitFor();
    expect(await rows.count()).toBe(25);
    expect(await page.locator('form.filters input[name="persona"]').inputValue()).toBe('mars');

    await page.goto(`${base}/ui/#/runs?status=999`);
    const problem = page.locator('.results .problem');
    await problem.waitFor();
    expect(await problem.textContent()).toContain('400');
    expect(await page.locator('table.runs').count()).toBe(0);

    expect(dialogs).toEqual([]);
    expect(problems.filter((problem) => !/status of 400/.test(problem))).toEqual([]);
  });

  it('shows real POST /compile deliveries as delivered: 200 then 304 in one run, a failure with its error, and the HUD', async () => {
    const { app, base } = await listen({});
    const compile = (body: object, headers: Record<string, string> = {}) =>
      fetch(`${base}/compile`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const request = { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', task: 'Draft the launch post.', runId: 'run-real' };
    const first = await compile(request);
    expect(first.status).toBe(200);
    const delivered = (await first.json()) as { runId: string; systemPrompt: string; inputPrompt: string; blocks: Array<{ kind: string }> };
    const again = await compile(request, { 'if-none-match': first.headers.get('etag')! });
    expect(again.status).toBe(304);
    const failed = await compile({ ...request, worker: 'nobody', runId: 'run-real-failed' });
    expect(failed.status).toBe(404);
    await failed.arrayBuffer();

    const { page, problems, dialogs } = await openBrowser();
    await page.goto(`${base}/ui/#/runs/${delivered.runId}`);
    const events = page.locator('article.event');
    await events.nth(1).waitFor();
    expect(await events.evaluateAll((items) => items.map((item) => item.getAttribute('data-outcome')))).toEqual(['delivered', 'not-modified']);
    const firstEvent = events.nth(0);
    expect(await firstEvent.locator('ol.blocks > li.block').evaluateAll((items) => items.map((item) => item.getAttribute('data-kind')))).toEqual(
      delivered.blocks.map((block) => block.kind),
    );
    expect(await firstEvent.locator('pre.system-prompt').textContent()).toBe(delivered.systemPrompt);
    expect(await firstEvent.locator('pre.input-prompt').textContent()).toBe(delivered.inputPrompt);
    expect(await firstEvent.locator('li.block[data-kind="purpose"] pre.block-text').textContent()).toContain(SCRIPT_LINE);
    expect(await firstEvent.locator('.verified').textContent()).toContain('match');
    expect(await firstEvent.locator('.boundary-label').count()).toBeGreaterThan(0);
    expect(await page.evaluate('typeof window.__ccPwned')).toBe('undefined');

    // The HUD: every file looked for, sorted by path, with what the compile took from it.
    const hud = firstEvent.locator('section.hud');
    expect(await hud.locator('h3').textContent()).toMatch(/^HUD: \d+ files looked for, \d+ found$/);
    const paths = await hud.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-path')!));
    expect(paths).toEqual([...paths].sort());
    const identityRow = (await hud.locator('tr[data-path="workers/scribe/identity.md"]').textContent()) ?? '';
    expect(identityRow).toContain('identity');
    expect(identityRow).toContain('whole');
    expect(await hud.locator('tr[data-path="workers/scribe/connections.json"]').textContent()).toContain('looked for, missing');

    await page.goto(`${base}/ui/#/runs/run-real-failed`);
    const failure = page.locator('.failure');
    await failure.waitFor();
    expect(await failure.textContent()).toContain('CC_NOT_FOUND');
    expect(await failure.textContent()).toContain('nobody');

    // A HUD that does not hold up when read back is shown as rejected, with the reasons.
    const [recorded] = ((await (await fetch(`${base}/runs/run-real/trace`)).json()) as { events: Array<{ hud: { files: Array<{ path: string }> } }> }).events;
    const inverted = { ...recorded!.hud, files: recorded!.hud.files.map((file, i) => (i === 0 ? { ...file, lines: { from: 9, to: 3 } } : file)) };
    await app.traces.append(deliveredEvent('run-bad-hud', { hud: inverted as never }));
    await page.goto(`${base}/ui/#/runs/run-bad-hud`);
    const rejected = page.locator('section.hud[role="alert"]');
    await rejected.waitFor();
    expect(await rejected.textContent()).toContain('inverted line range (9 > 3)');

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });
});
