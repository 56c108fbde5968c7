import { describe, expect, it } from 'vitest';
import type { RunList as ApiRunList, RunTrace as ApiRunTrace } from '../../schemas/trace.js';
import { buildHud, loadedFile, sha256Hex } from '../../src/core/index.js';
import {
  callPartOf,
  decodeInputLine,
  groupCalls,
  eventMinute,
  formatShare,
  layoutEvent,
  prefixHeld,
  prefixTokens,
  shareOf,
  parseHash,
  percentOf,
  runHash,
  runListPath,
  runsHash,
  runTracePath,
  type RunList,
  type RunSummary,
  type RunTrace,
  type TraceEvent,
} from '../../ui/src/model.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { deliveredEvent, failedEvent, sha256 } from '../helpers/trace-events.js';
import { prepareBrain, traceCompile } from './fixtures.js';

// The viewer's own types must accept whatever the API schemas allow (checked by `npm run typecheck`).
const acceptsTrace = (trace: ApiRunTrace): RunTrace => trace;
const acceptsList = (list: ApiRunList): RunList => list;

async function tracedView(runId: string, append: (app: Awaited<ReturnType<typeof buildTestApp>>['app']) => Promise<unknown>): Promise<TraceEvent> {
  const brainRoot = await copyExampleBrain();
  await prepareBrain(brainRoot);
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
  await append(app);
  const response = await app.inject(`/runs/${runId}/trace`);
  expect(response.statusCode).toBe(200);
  return acceptsTrace(response.json()).events[0]!;
}

describe('layoutEvent', () => {
  it('gives every block of a traced compile its delivered text, whose digest is the block sha256', async () => {
    let recorded!: Awaited<ReturnType<typeof traceCompile>>;
    const event = await tracedView('run-layout', async (app) => {
      recorded = await traceCompile(app, 'run-layout');
    });
    const layout = layoutEvent(event);
    expect(layout.blocks.map((view) => view.block.kind)).toEqual(recorded.blocks!.map((block) => block.kind));
    const segments = [...recorded.segments!.system, ...recorded.segments!.input];
    layout.blocks.forEach((view, i) => {
      expect(view.delivered).toBe(segments[i]);
      expect(view.chars).toBe(segments[i]!.length);
      // The text under the label (system) or decoded from the JSON line (input) is exactly the block content.
      expect(sha256(view.text!)).toBe(view.block.sha256);
      expect(view.place).toBe(view.block.authority === 'trusted-directive' ? 'system' : 'input');
    });
    // Laid end to end with the blank line between the prompts, the blocks fill exactly the used budget.
    const last = layout.blocks.at(-1)!;
    expect(last.start + last.chars).toBe(layout.usedChars);
    const firstInput = layout.blocks.find((view) => view.place === 'input')!;
    expect(firstInput.start).toBe(event.systemPrompt!.length + 2);
    expect(layout.limitChars).toBe(16_000);
    expect(layout.scaleChars).toBe(16_000);
    expect(layout.boundaries.map((boundary) => [boundary.class, boundary.blockIndex, boundary.belowMinimum])).toEqual([
      ['worker-stable', 1, true],
      ['channel-stable', 2, false],
      ['surface-stable', 3, false],
      ['volatile', 4, false],
    ]);
    expect(layout.minimumTokens).toBe(1024);
    expect(layout.routeKey).toMatch(/^cc1-[0-9a-f]{32}$/);
    expect(layout.omitted).toEqual({ memory: 0, briefing: 0, experience: 0 });
  });

  it('leaves texts out rather than guessing when blocks and segments disagree', async () => {
    // Five trusted blocks for five system segments, but an input segment with no block.
    const event = await tracedView('run-odd', (app) => app.traces.append(deliveredEvent('run-odd')));
    const layout = layoutEvent(event);
    expect(layout.blocks).toHaveLength(5);
    expect(layout.blocks.every((view) => view.place === 'system' && view.delivered !== null)).toBe(true);

    const topic = { ...event.blocks![0]!, authority: 'advisory', kind: 'topic' };
    const matched = layoutEvent({ ...event, blocks: [...event.blocks!, topic] });
    expect(matched.blocks[5]).toMatchObject({ place: 'input', text: 'about run-odd' });
    const mismatched = layoutEvent({ ...event, blocks: [...event.blocks!, topic, { ...topic, kind: 'task', authority: 'content' }] });
    expect(mismatched.blocks.slice(5).map((view) => [view.place, view.delivered, view.text])).toEqual([
      [null, null, null],
      [null, null, null],
    ]);
    const noSegments = layoutEvent({ ...event, segments: undefined, systemPrompt: null, inputPrompt: null });
    expect(noSegments.blocks.every((view) => view.delivered === null)).toBe(true);
    // Without segments, blocks are laid end to end by their content length.
    const starts = event.blocks!.map((_, i) => event.blocks!.slice(0, i).reduce((sum, block) => sum + block.chars, 0));
    expect(noSegments.blocks.map((view) => view.start)).toEqual(starts);
  });

  it('lays out a failed compile as nothing but its budget-less facts', async () => {
    const event = await tracedView('run-failed', (app) => app.traces.append(failedEvent('run-failed')));
    const layout = layoutEvent(event);
    expect(layout).toMatchObject({ blocks: [], boundaries: [], limitChars: null, routeKey: null, minimumTokens: null });
  });

  it('tolerates recorded parts of another shape', () => {
    const event = {
      runId: 'r',
      at: 'not a date',
      route: '/x',
      subject: { kind: 'worker', id: 'w' },
      status: 200,
      outcome: 'delivered',
      request: {},
      chars: 10,
      systemPrompt: null,
      inputPrompt: null,
      verified: null,
      chain: 'linked',
      budget: { limitChars: '10', omitted: 3 },
      cache: { boundaries: [null, 'x', { class: 'worker-stable' }, { prefixChars: 4 }] },
    } satisfies TraceEvent;
    const layout = layoutEvent(event);
    expect(layout.limitChars).toBeNull();
    expect(layout.omitted).toEqual({ items: 3 });
    expect(layout.boundaries).toEqual([
      { class: '?', afterBlock: '?', blockIndex: null, prefixChars: 4, prefixSha256: '', approxTokens: null, tokens: null, belowMinimum: null },
    ]);
    expect(layout.scaleChars).toBe(10);
    expect(layout).toMatchObject({ engine: null, tokenizer: null, toolTokens: null });
  });

  it('reads the exact counts, the tokenizer, the tool tokens and the route key’s engine of a real compile’s plan', async () => {
    let answer!: { cache: { routeKey: string; toolTokens: number; boundaries: Array<{ class: string; tokens: number; approxTokens: number }> } };
    const event = await tracedView('run-engine', async (app) => {
      const response = await app.inject({
        method: 'POST',
        url: '/compile',
        payload: { phase: 'start', surface: 'queued-task', worker: 'courier', task: 'Send the weekly digest', engine: 'gpt-4.1', runId: 'run-engine' },
      });
      expect(response.statusCode).toBe(200);
      answer = response.json();
    });
    const layout = layoutEvent(event);
    expect(layout).toMatchObject({ routeKey: answer.cache.routeKey, engine: 'gpt-4.1', tokenizer: 'o200k_base', toolTokens: answer.cache.toolTokens });
    expect(layout.boundaries.map((boundary) => [boundary.class, boundary.tokens, boundary.approxTokens])).toEqual(
      answer.cache.boundaries.map((boundary) => [boundary.class, boundary.tokens, boundary.approxTokens]),
    );
  });
});

describe('decodeInputLine and percentOf', () => {
  it('decodes an input line back to its text, markup included', () => {
    const line = JSON.stringify({ block: 'topic', authority: 'advisory', source: 't', text: '<script>x</script>\nsecond line' });
    expect(decodeInputLine(line)).toBe('<script>x</script>\nsecond line');
    expect(decodeInputLine('<<cc identity | trusted-directive | x>>')).toBeNull();
    expect(decodeInputLine('{"block":"topic"}')).toBeNull();
  });

  it('clamps shares to the bar', () => {
    expect(percentOf(50, 200)).toBe(25);
    expect(percentOf(500, 200)).toBe(100);
    expect(percentOf(-1, 200)).toBe(0);
    expect(percentOf(5, 0)).toBe(0);
  });
});

describe('one set of numbers', () => {
  it('computes a share as the service’s HUD does, so the block list, the bar and the HUD print the same figure', () => {
    for (const [chars, limit] of [[1450, 48_000], [1, 3], [2895, 16_000], [0, 100], [48_000, 48_000], [12_345, 48_001]] as const) {
      const hud = buildHud({
        loaded: [loadedFile({ path: 'a.md', size: 1, sha256: sha256Hex('a'), bytes: 1, truncated: false, keep: 'head', text: 'a' })],
        missing: [],
        blocks: [{ kind: 'identity', source: 'a.md', chars }],
        budget: { limitChars: limit, usedChars: chars },
      });
      expect(shareOf(chars, limit), `${chars} of ${limit}`).toBe(hud.files[0]!.share);
      expect(formatShare(shareOf(chars, limit))).toBe(formatShare(hud.files[0]!.share));
    }
    expect(formatShare(0.0302)).toBe('3.0 %');
    expect(formatShare(shareOf(5, null))).toBe('—');
  });

  it('says a token count is exact only when a real tokenizer counted it, else marks the estimate', () => {
    const boundary = { tokens: 1934, approxTokens: 1855 };
    expect(prefixTokens(boundary, 'o200k_base')).toBe('1,934');
    expect(prefixTokens(boundary, 'estimate')).toBe('≈1,934');
    expect(prefixTokens({ tokens: null, approxTokens: 1855 }, null)).toBe('≈1,855');
    expect(prefixTokens({ tokens: null, approxTokens: null }, null)).toBeNull();
  });

  it('names the minute compiled for in UTC, from nowUsed, then now, then the trace time', () => {
    expect(eventMinute({ at: '2026-11-30T17:45:59.000Z', request: { nowUsed: '2026-11-30T09:01:30+02:00' } })).toBe('2026-11-30 07:01 UTC');
    expect(eventMinute({ at: '2026-11-30T17:45:59.000Z', request: { now: '2026-11-30T10:00:00Z' } })).toBe('2026-11-30 10:00 UTC');
    expect(eventMinute({ at: '2026-11-30T17:45:59.000Z', request: {} })).toBe('2026-11-30 17:45 UTC');
  });

  it('tells which cache boundaries of an event kept the prefix of the delivered event before it', () => {
    const first = deliveredEvent('r', { cache: { boundaries: [{ class: 'worker-stable', prefixChars: 9, prefixSha256: 'a' }, { class: 'volatile', prefixChars: 20, prefixSha256: 'b' }] } });
    const second = deliveredEvent('r', { cache: { boundaries: [{ class: 'worker-stable', prefixChars: 9, prefixSha256: 'a' }, { class: 'volatile', prefixChars: 20, prefixSha256: 'c' }] } });
    const view = (event: typeof first) => ({ ...event, chars: 0, systemPrompt: null, inputPrompt: null, verified: null, chain: 'linked' }) as unknown as TraceEvent;
    expect(prefixHeld(view(first), view(second))).toEqual({ held: ['worker-stable'], moved: ['volatile'] });
    expect(prefixHeld(null, view(second))).toBeNull();
    expect(prefixHeld(view(first), view(failedEvent('r') as never))).toBeNull();
  });
});

describe('hash routes and API paths', () => {
  it('reads the runs list with its filters, and a run by id', () => {
    expect(parseHash('')).toEqual({ name: 'runs', filter: {} });
    expect(parseHash('#/runs')).toEqual({ name: 'runs', filter: {} });
    expect(parseHash('#/runs?persona=mars&status=200&cursor=abc_1&bogus=1&worker=')).toEqual({
      name: 'runs',
      filter: { persona: 'mars', status: '200', cursor: 'abc_1' },
    });
    expect(parseHash('#/runs/run-1%3Aa')).toEqual({ name: 'run', runId: 'run-1:a' });
  });

  it('refuses run ids the API would refuse, and unknown pages', () => {
    for (const hash of ['#/runs/..%2Fetc', '#/runs/a%ZZ', `#/runs/${'a'.repeat(129)}`, '#/runs/a/b', '#/other', '#/runs/%3Cscript%3E']) {
      expect(parseHash(hash).name, hash).toBe('not-found');
    }
  });

  it('writes hashes that read back the same', () => {
    const filter = { persona: 'mars', outcome: 'failed', cursor: 'c-1' };
    expect(parseHash(runsHash(filter))).toEqual({ name: 'runs', filter });
    expect(runsHash()).toBe('#/runs');
    expect(parseHash(runHash('run:1'))).toEqual({ name: 'run', runId: 'run:1' });
  });

  it('builds API paths relative to /ui/, with the filters encoded', () => {
    expect(runListPath({ worker: 'a&b', status: '200' }, 25)).toBe('../runs?limit=25&worker=a%26b&status=200');
    expect(runListPath({ requestId: 'req-1', traceparent: '4bf9', from: '2026-11-30T09:00Z', to: '2026-11-30T10:00Z' }, 25)).toBe(
      '../runs?limit=25&requestId=req-1&traceparent=4bf9&from=2026-11-30T09%3A00Z&to=2026-11-30T10%3A00Z',
    );
    expect(parseHash(runsHash({ requestId: 'req-1', runId: 'r' }))).toEqual({ name: 'runs', filter: { runId: 'r', requestId: 'req-1' } });
    expect(new URL(runListPath({}, 25), 'http://h/ui/#/runs').href).toBe('http://h/runs?limit=25');
    expect(new URL(runTracePath('run:1'), 'http://h/prefix/ui/').href).toBe('http://h/prefix/runs/run%3A1/trace?limit=20&verify=sources');
    expect(runTracePath('r', { verifySources: false, cursor: 'abc_-1', limit: 100 })).toBe('../runs/r/trace?limit=100&cursor=abc_-1');
  });

  it('accepts the list the API returns', async () => {
    const { app } = await buildTestApp();
    await app.traces.append(deliveredEvent('run-listed'));
    const list = acceptsList((await app.inject('/runs')).json());
    expect(list.runs.map((run) => run.runId)).toEqual(['run-listed']);
  });
});

describe('a call is one conversation', () => {
  const run = (runId: string, route: string, at: string): RunSummary => ({
    runId, route, at, subject: { kind: 'persona', id: 'mars' }, status: 200, outcome: 'delivered', chars: 1, promptSha256: null,
    events: 1, compiledFor: null, topicId: null, role: null, engine: null, warnings: 0,
  });

  it('knows a refresh run by its id and the route that traced it, never by its id alone', () => {
    expect(callPartOf(run('c1:refresh', 'GET /context/mars/refresh', 'x'))).toEqual({ connect: 'c1', part: 'refresh' });
    expect(callPartOf(run('c1:reconnect', 'GET /context/mars/reconnect', 'x'))).toEqual({ connect: 'c1', part: 'reconnect' });
    // A caller may name its own connect so; only the refresh route traces into such a run.
    expect(callPartOf(run('c1:refresh', 'GET /context/mars', 'x'))).toBeNull();
    expect(callPartOf(run(':refresh', 'GET /context/mars/refresh', 'x'))).toBeNull();
    expect(callPartOf(run('c1', 'GET /context/mars', 'x'))).toBeNull();
  });

  it('lists a refresh right under its connect, and one whose connect is on another page where it is', () => {
    const rows = groupCalls([
      run('c3', 'GET /context/mars', '2026-11-30T11:00:00Z'),
      run('c2:refresh', 'GET /context/mars/refresh', '2026-11-30T10:05:00Z'),
      run('c2', 'GET /context/mars', '2026-11-30T10:00:00Z'),
      run('c0:refresh', 'GET /context/mars/refresh', '2026-11-30T09:30:00Z'),
      run('c1', 'GET /context/mars', '2026-11-30T09:00:00Z'),
    ]);
    expect(rows.map((row) => [row.run.runId, row.nested])).toEqual([
      ['c3', false],
      ['c2', false],
      ['c2:refresh', true],
      ['c0:refresh', false],
      ['c1', false],
    ]);
    expect(rows[3]!.callPart).toEqual({ connect: 'c0', part: 'refresh' });
  });
});

describe('the answer first and one set of numbers (issue 39)', () => {
  it('finds every occurrence of a query case-insensitively, left to right and not overlapping, in a plain scan', async () => {
    const { findMatches } = await import('../../ui/src/model.js');
    expect(findMatches('Roadmap, ROADMAP and roadmaps', 'roadmap')).toEqual([
      [0, 7],
      [9, 16],
      [21, 28],
    ]);
    expect(findMatches('aaaa', 'aa')).toEqual([
      [0, 2],
      [2, 4],
    ]);
    expect(findMatches('anything', '')).toEqual([]);
    expect(findMatches('x'.repeat(5000), 'x', 10)).toHaveLength(10);
    // Lower-casing that changes the length (İ) keeps positions in the text as shown.
    expect(findMatches('İstanbul Istanbul', 'Istanbul')).toEqual([[9, 17]]);
  });

  it('decodes a refresh text’s JSON lines into readable lines, and leaves its first line as it is', async () => {
    const { readableRefreshText } = await import('../../ui/src/model.js');
    const sent = `Since we connected, the live context changed. Current date and time: Monday\n${JSON.stringify({ block: 'live-context', authority: 'advisory', source: 'builtin:mars/live-context', text: 'New:\n- a "quoted" line' })}`;
    expect(readableRefreshText(sent)).toBe('Since we connected, the live context changed. Current date and time: Monday\n[live-context]\nNew:\n- a "quoted" line');
  });

  it('says a part of the prompt in percent of what was delivered, and an event’s size as what reached the model', async () => {
    const { promptPercent, formatPercent, eventSize } = await import('../../ui/src/model.js');
    expect(formatPercent(promptPercent(130, 8201))).toBe('1.6 %');
    expect(promptPercent(1, 0)).toBeNull();
    const refresh = { provider: 'openai' as const, changes: [], textSha256: 'a'.repeat(64), chars: 432 };
    expect(eventSize({ chars: 9426, outcome: 'delivered', refresh: { ...refresh, delivery: 'conversation-item' } })).toBe('432 chars delivered');
    expect(eventSize({ chars: 9426, outcome: 'delivered', refresh: { ...refresh, delivery: 'reconnect' } })).toBe('9,426 chars delivered');
    expect(eventSize({ chars: 9426, outcome: 'not-modified', refresh: { ...refresh, textSha256: null, chars: 0 } })).toBe('nothing sent');
    expect(eventSize({ chars: 8201, outcome: 'delivered' })).toBe('8,201 chars delivered');
  });

  it('words the status strip from GET /status: readiness and why not, the failure rate with its codes, the fallbacks', async () => {
    const { statusWords } = await import('../../ui/src/model.js');
    const ready = statusWords({
      status: 'ready',
      checks: [{ name: 'brain', ok: true }],
      since: '2026-12-02T09:00:00.000Z',
      compiles: { total: 412, failed: 3, failureRate: 0.0073, byCode: { CC_INTERNAL: 1, CC_BUDGET_EXCEEDED: 2 } },
      fallbacks: { total: 1, static: 1, stale: 0 },
    });
    expect(ready).toEqual({ ready: true, readiness: 'Ready', compiles: '412 compiles, 3 failed (0.7 %): CC_BUDGET_EXCEEDED 2, CC_INTERNAL 1', fallbacks: '1 call fell back (1 static, 0 stale)' });
    const down = statusWords({
      status: 'not-ready',
      checks: [{ name: 'brain', ok: false, reason: 'BRAIN_ROOT is not readable' }, { name: 'warm', ok: true }],
      since: '2026-12-02T09:00:00.000Z',
      compiles: { total: 0, failed: 0, failureRate: null, byCode: {} },
      fallbacks: { total: 0, static: 0, stale: 0 },
    });
    expect(down).toEqual({ ready: false, readiness: 'Not ready: brain (BRAIN_ROOT is not readable)', compiles: 'no compiles yet', fallbacks: 'no call fell back' });
  });
});
