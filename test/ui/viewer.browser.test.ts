import { createHash, randomUUID } from 'node:crypto';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser as Chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, OTHER_TOKEN, TEST_TOKEN } from '../helpers/app.js';
import { buildDist } from '../helpers/build.js';
import { chromiumForTests, saveScreenshot } from '../helpers/chromium.js';
import { deliveredEvent, failedEvent } from '../helpers/trace-events.js';
import { IMG_LINE, prepareBrain, SCRIPT_LINE, traceCompile, traceFailure } from './fixtures.js';

/** Found by the globalSetup (test/helpers/chromium.ts): CHROMIUM_PATH, Debian's, Playwright's or the npm package's. */
const chromiumBinary = chromiumForTests();
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

/** One Chromium for the file (a launch costs about a second of CPU); each test gets its own context in it. */
let chromiumProcess: Chromium | undefined;
const contexts: BrowserContext[] = [];

interface Browser {
  context: BrowserContext;
  page: Page;
  /** Page errors and console errors, e.g. a Content-Security-Policy violation. */
  problems: string[];
  dialogs: string[];
}

async function openBrowser(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  if (chromiumProcess === undefined) throw new Error(`no Chromium: ${chromiumBinary.skipped}`);
  // A fresh context per test, as an incognito window is: no token, cookie, storage or cache survives from another test.
  const context = await chromiumProcess.newContext({ viewport });
  contexts.push(context);
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  const page = await context.newPage();
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

const title = chromiumBinary.skipped ? `trace viewer in chromium (SKIPPED: ${chromiumBinary.skipped})` : `trace viewer in chromium (${chromiumBinary.from})`;

describe.skipIf(chromiumBinary.skipped !== null)(title, () => {
  afterEach(async () => {
    while (contexts.length > 0) await contexts.pop()!.close();
  });

  beforeAll(async () => {
    await buildDist();
    chromiumProcess = await chromium.launch({ executablePath: chromiumBinary.path!, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
  }, 600_000);

  afterAll(async () => {
    await chromiumProcess?.close();
  });

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
    const boundaries = (event.cache as { boundaries: Array<{ class: string; tokens: number; belowMinimum: boolean }> }).boundaries;
    expect(boundaries.map((boundary) => boundary.class)).toEqual(['worker-stable', 'channel-stable', 'surface-stable', 'volatile']);
    expect(await page.locator('.boundary-label').count()).toBe(boundaries.length);
    expect(await page.locator('.bar .bar-boundary').count()).toBe(boundaries.length);
    const [workerStable, channelStable] = boundaries;
    expect([workerStable!.belowMinimum, channelStable!.belowMinimum]).toEqual([true, false]);
    const workerLabel = await text(page, '.boundary-label[data-boundary="worker-stable"]');
    // The count the plan judged the minimum by; ≈ because this compile had no tokenizer (`estimate`).
    expect(workerLabel).toContain(`≈${workerStable!.tokens.toLocaleString('en-US')} tokens`);
    expect(await page.locator('.boundary-label[data-boundary="worker-stable"]').getAttribute('class')).toContain('below-minimum');
    const channelLabel = await text(page, '.boundary-label[data-boundary="channel-stable"]');
    expect(channelLabel).toContain(`≈${channelStable!.tokens.toLocaleString('en-US')} tokens`);
    expect(await page.locator('.boundary-label[data-boundary="channel-stable"]').getAttribute('class')).not.toContain('below-minimum');
    // Regression: each boundary carried its own red flag; one line for the prompt says it now.
    expect(await page.locator('article.event .flag', { hasText: 'not cacheable' }).count()).toBe(1);
    expect(await text(page, 'article.event .below-minimum-line')).toContain('1 of 4 cache checkpoints (same every call) are below the 1,024-token minimum');

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

    await saveScreenshot(page, 'run-page.png');

    // A failed compile shows its error and no prompt.
    await page.locator('a', { hasText: '← Runs' }).click();
    await page.locator('a.run-link', { hasText: 'run-failed' }).click();
    const failure = page.locator('.run-card .failure');
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

  it('with named tokens: shows each caller only its own runs and names the caller, pages a long run, and shows bidi controls as markers', async () => {
    const { app, base } = await listen({ CONTEXT_COMPILER_TOKENS: `alice:${TEST_TOKEN},bob:${OTHER_TOKEN}` });
    const start = Date.now() - 60_000;
    for (let i = 0; i < 45; i++) await app.traces.append(failedEvent('run-long', { caller: 'alice', at: new Date(start + i * 100).toISOString(), request: { n: i } }));
    // An old trace may hold bidi overrides: "Pay the invoice of $1000 today" shown for other bytes.
    const spoofed = 'Pay the invoice of $\u202E0001\u202C today';
    const bidi = deliveredEvent('run-bidi', { caller: 'alice', warnings: [spoofed], input: [`{"block":"task","authority":"content","text":"${spoofed}"}`] });
    await app.traces.append(bidi);
    const { context, page, problems, dialogs } = await openBrowser();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.goto(`${base}/ui/`);
    await page.locator('form.token-form input[name="token"]').fill(TEST_TOKEN);
    await page.locator('form.token-form button[type="submit"]').click();
    const rows = page.locator('table.runs tbody tr');
    await rows.nth(1).waitFor();
    expect(await rows.locator('td.col-caller').allTextContents()).toEqual(['alice', 'alice']);
    // Whose runs these are is said above the list: a short list is not a mystery.
    expect(await text(page, '.results .visible-to')).toMatch(/^Showing alice’s runs only\. This token reads the runs it opened; another caller’s runs are not listed/);

    await page.goto(`${base}/ui/#/runs/run-long`);
    const events = page.locator('article.event');
    await events.first().waitFor();
    expect(await events.count()).toBe(20);
    expect(await text(page, 'article.event .caller')).toBe('alice');
    await page.locator('#later-events').click();
    await events.nth(39).waitFor();
    expect(await events.count()).toBe(40);
    await page.locator('#later-events').click();
    await events.nth(44).waitFor();
    expect(await events.count()).toBe(45);
    expect(await page.locator('#later-events').count()).toBe(0);
    expect(await events.nth(44).locator('h2').textContent()).toBe('Event 45');

    await page.goto(`${base}/ui/#/runs/run-bidi`);
    await page.locator('ol.blocks > li.block').first().waitFor();
    const shown = (await page.locator('main').textContent()) ?? '';
    expect(shown).toContain('Pay the invoice of $⟨U+202E⟩0001⟨U+202C⟩ today');
    expect(shown).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
    // What is copied is what was delivered, byte for byte.
    await page.locator('button.copy-input').click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(bidi.segments!.input.join(''));

    // Bob reads none of it: an empty list, and alice's run as an unknown one.
    await page.locator('#forget').click();
    await page.locator('form.token-form input[name="token"]').fill(OTHER_TOKEN);
    await page.locator('form.token-form button[type="submit"]').click();
    await page.goto(`${base}/ui/#/runs`);
    await page.locator('.results .empty').waitFor();
    expect(await text(page, '.results .visible-to')).toContain('Showing bob’s runs only.');
    // A search for alice's run: not "No runs match" alone, but why it may not be listed.
    await page.goto(`${base}/ui/#/runs?runId=run-long`);
    await page.locator('.results .empty').waitFor();
    expect(await text(page, '.results .empty')).toBe('No runs match. A run another caller opened is not listed here, even when it matches.');
    await page.goto(`${base}/ui/#/runs/run-long`);
    const problem = page.locator('.problem');
    await problem.waitFor();
    expect(await problem.textContent()).toContain('404');
    expect(await page.locator('article.event').count()).toBe(0);

    expect(dialogs).toEqual([]);
    expect(problems.filter((problem) => !/status of (401|404)/.test(problem))).toEqual([]);
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
    expect(await hud.locator('h3').textContent()).toMatch(/^Files read: \d+ looked for, \d+ found$/);
    const paths = await hud.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-path')!));
    expect(paths).toEqual([...paths].sort());
    const identityRow = (await hud.locator('tr[data-path="workers/scribe/identity.md"]').textContent()) ?? '';
    expect(identityRow).toContain('identity');
    expect(identityRow).toContain('whole');
    expect(await hud.locator('tr[data-path="workers/scribe/connections.json"]').textContent()).toContain('looked for, missing');

    await page.goto(`${base}/ui/#/runs/run-real-failed`);
    const failure = page.locator('.run-card .failure');
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

  it('shows what a persona answer gave beside the prompts: the voice, the tools and the realtime session, byte for byte', async () => {
    const { base } = await listen({});
    const response = await fetch(`${base}/context/mars?topicId=real-estate&runId=voice-call`);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { voice: string; session: { tools: Array<{ name: string; description: string }> } };

    const { context, page, problems, dialogs } = await openBrowser();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.goto(`${base}/ui/#/runs/voice-call`);
    const realtime = page.locator('article.event section.realtime');
    await realtime.waitFor();
    // Said once: the voice and the tools in the realtime section, not again among the event's facts.
    expect(await text(page, 'article.event section.summary')).not.toContain(`voice${answer.voice}`);
    expect(await text(page, '.realtime')).toContain(`tools${answer.session.tools.map((tool) => tool.name).join(', ')}`);
    expect(await text(page, '.realtime .session-voice')).toBe(answer.voice);
    expect(await realtime.locator('table.tools tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-tool')))).toEqual(answer.session.tools.map((tool) => tool.name));
    expect(await text(page, `.realtime tr[data-tool="${answer.session.tools[0]!.name}"]`)).toContain(answer.session.tools[0]!.description);
    expect(await text(page, '.realtime .tools-sha')).toBe(createHash('sha256').update(JSON.stringify(answer.session.tools)).digest('hex'));

    await page.locator('button.copy-session').click();
    await page.locator('button.copy-session', { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(JSON.stringify(answer.session));

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('compares two runs of one worker: the blocks that changed and the cache boundaries that moved, with why', async () => {
    const { base, brainRoot } = await listen({});
    const compile = async (runId: string, now: string, task: string) => {
      const response = await fetch(`${base}/compile`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', task, runId, now }),
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    };
    await compile('draft-1', '2026-11-30T17:30:00Z', 'Draft the launch post.');
    await appendFile(join(brainRoot, 'workers/scribe/identity.md'), '\nPrefer short paragraphs.\n');
    await compile('draft-2', '2026-11-30T17:31:00Z', 'Draft the launch email.');
    await compile('draft-3', '2026-11-30T17:32:00Z', 'Draft the launch email.');

    const { page, problems, dialogs } = await openBrowser();
    await page.goto(`${base}/ui/`);
    await page.locator('tr[data-run-id="draft-1"]').waitFor();
    const compareButton = page.locator('button.compare-picked');
    expect(await compareButton.isDisabled()).toBe(true);
    // Picked newest first; the page puts the older run first all the same.
    await page.locator('tr[data-run-id="draft-2"] input[name="compare"]').check();
    await page.locator('tr[data-run-id="draft-1"] input[name="compare"]').check();
    await compareButton.click();
    await page.waitForURL(/#\/compare\/draft-2\/draft-1$/);
    await page.locator('.comparison').waitFor();
    expect(await text(page, '.compared-runs [data-side="before"] .run-link')).toBe('draft-1');
    expect(await text(page, '.compared-runs [data-side="after"] .run-link')).toBe('draft-2');

    const identity = page.locator('.compare-blocks tr[data-kind="identity"]');
    expect(await identity.getAttribute('data-change')).toBe('changed');
    expect(await text(page, '.compare-blocks tr[data-kind="identity"] .reason[data-reason="sources"]')).toBe('sources changed: workers/scribe/identity.md');
    expect(await page.locator('.compare-blocks tr[data-kind="purpose"]').getAttribute('data-change')).toBe('unchanged');
    expect(await text(page, '.compare-blocks tr[data-kind="clock"] .reason[data-reason="minute"]')).toBe('minute changed: 17:30 → 17:31 UTC');
    expect(await text(page, '.compare-blocks tr[data-kind="task"] .reason[data-reason="request"]')).toBe('request differed: task');
    const workerStable = page.locator('.compare-boundaries tr[data-boundary="worker-stable"]');
    expect(await workerStable.getAttribute('data-change')).toBe('moved');
    expect(await workerStable.locator('.why').textContent()).toBe('#0 identity changed: sources changed: workers/scribe/identity.md');
    expect(await text(page, '.compare-summary')).toContain('the route key changed');

    // From a run page: the other runs of the worker, each a comparison; only the minute moved between these two.
    await page.goto(`${base}/ui/#/runs/draft-3`);
    await page.locator('button.compare-with').click();
    await page.locator('.compare-candidates li[data-run-id="draft-2"] a').click();
    await page.waitForURL(/#\/compare\/draft-2\/draft-3$/);
    await page.locator('.comparison').waitFor();
    const boundaries = page.locator('.compare-boundaries tbody tr');
    expect(await boundaries.evaluateAll((rows) => rows.map((row) => [row.getAttribute('data-boundary'), row.getAttribute('data-change')]))).toEqual([
      ['worker-stable', 'held'],
      ['channel-stable', 'held'],
      ['surface-stable', 'held'],
      ['volatile', 'moved'],
    ]);
    expect(await text(page, '.compare-boundaries tr[data-boundary="volatile"] .why')).toBe('#5 clock changed: minute changed: 17:31 → 17:32 UTC');
    expect(await text(page, '.compare-summary')).toContain('the route key held');
    await saveScreenshot(page, 'compare-page.png');
    // The comparison reads in a narrow window too.
    await page.setViewportSize({ width: 420, height: 800 });
    expect(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    await saveScreenshot(page, 'compare-page-420.png');

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('shows a governed worker run: exact token counts, tokenizer, tool tokens, engine, recall, receipts and the correlation ids, also at 420 px', async () => {
    const { base } = await listen({});
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const response = await fetch(`${base}/compile`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'voice-call-7', traceparent },
      body: JSON.stringify({ phase: 'start', surface: 'queued-task', worker: 'courier', task: 'Send the weekly digest', engine: 'gpt-4.1', runId: 'governed' }),
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      cache: { routeKey: string; tokenizer: string; toolTokens: number; minimumTokens: number; boundaries: Array<{ class: string; tokens: number; approxTokens: number }> };
      receipts: { role: { id: string; sha256: string }; blueprint: { revision: string } };
    };
    expect(answer.cache.tokenizer).toBe('o200k_base');

    const { page, problems, dialogs } = await openBrowser();
    await page.goto(`${base}/ui/#/runs/governed`);
    const cache = page.locator('article.event section.cache');
    await cache.waitFor();
    // The request id once, on the card; the traceparent, which the card does not say, among the event's facts.
    expect(await text(page, '.run-card .request-id')).toBe('voice-call-7');
    expect(await text(page, 'article.event section.summary')).toContain(`traceparent${traceparent}`);
    expect(await text(page, 'section.cache code.route-key')).toBe(answer.cache.routeKey);
    expect(await text(page, 'section.cache code.engine')).toBe('gpt-4.1');
    expect(await text(page, 'section.cache code.tokenizer')).toBe('o200k_base');
    expect(await text(page, 'section.cache')).toContain(`tool definitions${answer.cache.toolTokens.toLocaleString('en-US')} tokens, in every checkpoint`);
    // Exact counts, without the estimate's ≈, in the table, on the bar and between the blocks.
    const cells = await cache.locator('table.boundaries tbody tr td:nth-child(4)').allTextContents();
    expect(cells).toEqual(answer.cache.boundaries.map((boundary) => boundary.tokens.toLocaleString('en-US')));
    const [first] = answer.cache.boundaries;
    expect(await text(page, `.boundary-label[data-boundary="${first!.class}"]`)).toContain(` · ${first!.tokens.toLocaleString('en-US')} tokens, `);
    expect(await text(page, 'li.boundary-row')).toContain(`${first!.tokens.toLocaleString('en-US')} tokens`);

    const governance = await text(page, 'section.governance');
    expect(governance).toContain('suppressed: no memory notes read');
    expect(governance).toContain(`${answer.receipts.role.id} (the default)`);
    expect(governance).toContain(answer.receipts.blueprint.revision);
    expect(governance).toContain('experiencesnone');

    // Narrow: nothing scrolls sideways, and the long ids wrap inside the window.
    await page.setViewportSize({ width: 420, height: 800 });
    expect(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    for (const selector of ['code.traceparent', 'section.cache code.route-key', 'section.governance', 'section.cache table.boundaries']) {
      const box = await page.locator(selector).first().boundingBox();
      expect(box, selector).not.toBeNull();
      expect(box!.x + box!.width, selector).toBeLessThanOrEqual(420);
    }
    await saveScreenshot(page, 'governed-run-420.png');

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('keeps the runs table usable at 420 px: the search folded, each row at most three lines with the run id under the time, no sideways scrolling', async () => {
    const { app, base } = await listen({});
    const now = Date.now();
    for (let i = 0; i < 6; i++) await app.traces.append(deliveredEvent(randomUUID(), { at: new Date(now - 60_000 + i * 1000).toISOString() }));
    await app.traces.append(failedEvent(randomUUID(), { at: new Date(now).toISOString() }));
    await traceCompile(app, 'run-narrow-with-a-long-but-valid-run-id:0123456789abcdef', new Date(now + 1000));

    const { page, problems, dialogs } = await openBrowser({ width: 420, height: 800 });
    await page.goto(`${base}/ui/`);
    const rows = page.locator('table.runs tbody tr');
    await rows.nth(7).waitFor();
    const overflow = await page.evaluate(
      '({ page: document.documentElement.scrollWidth - window.innerWidth, table: document.querySelector(".table-wrap").scrollWidth - document.querySelector(".table-wrap").clientWidth })',
    );
    expect(overflow).toEqual({ page: 0, table: 0 });
    // The search form is folded: the first rows are on the first screen (it filled it before).
    expect(await page.locator('details.filters-fold').getAttribute('open')).toBeNull();
    expect(await page.locator('input[name="requestId"]').isVisible()).toBe(false);
    const third = await rows.nth(2).boundingBox();
    expect(third!.y + third!.height).toBeLessThanOrEqual(800);
    // Every row is at most three lines tall (a run id one character wide made rows of about 300 px).
    const heights = await rows.evaluateAll((items) =>
      items.map((row) => {
        const cell = row.querySelector('td.col-time')!;
        const style = cell.ownerDocument.defaultView!.getComputedStyle(cell);
        const lines = (row.getBoundingClientRect().height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom) - 1) / parseFloat(style.lineHeight);
        return Math.round(lines * 10) / 10;
      }),
    );
    expect(heights.every((lines) => lines <= 3), `lines per row: ${heights.join(', ')}`).toBe(true);
    for (const row of [0, 1, 7]) {
      for (const column of ['col-pick', 'col-time', 'col-status']) {
        const box = await rows.nth(row).locator(`td.${column}`).boundingBox();
        expect(box, `${column} of row ${row}`).not.toBeNull();
        expect(box!.width, `${column} of row ${row}`).toBeGreaterThan(10);
        expect(box!.x + box!.width, `${column} of row ${row}`).toBeLessThanOrEqual(420);
      }
      expect(await rows.nth(row).locator('td.col-optional').first().isVisible()).toBe(false);
      // The subject beside the minute, and the run id under them, in the same cell.
      expect(await rows.nth(row).locator('.subject-under').isVisible()).toBe(true);
      const minute = await rows.nth(row).locator('.compiled-for').boundingBox();
      const runId = await rows.nth(row).locator('.run-id-under').boundingBox();
      expect(runId!.y).toBeGreaterThanOrEqual(minute!.y + minute!.height - 1);
    }
    // The run id is a whole, readable link, and picking two runs still works.
    expect(await text(page, 'table.runs tbody tr:first-child .run-id-under a')).toBe('run-narrow-with-a-long-but-valid-run-id:0123456789abcdef');
    // Unfolded, the search form is all there.
    await page.locator('details.filters-fold > summary').click();
    await page.locator('input[name="requestId"]').fill('no-such-request');
    await page.locator('form.filters button[type="submit"]').click();
    await page.locator('.results .empty').waitFor();
    expect(await text(page, 'details.filters-fold > summary')).toContain('filtered by requestId no-such-request');
    await page.goto(`${base}/ui/`);
    await rows.nth(7).waitFor();
    // (The second row is the failed run: nothing to compare, so no box.)
    expect(await rows.nth(1).locator('input[name="compare"]').count()).toBe(0);
    await rows.nth(0).locator('input[name="compare"]').check();
    await rows.nth(2).locator('input[name="compare"]').check();
    expect(await page.locator('button.compare-picked').isEnabled()).toBe(true);
    expect(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    await saveScreenshot(page, 'runs-420.png');

    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  }, 60_000);
});
