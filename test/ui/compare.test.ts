import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { blockTextDiffs, brainPath, comparableEvent, compareRuns, comparisonLine, compileMinute, latestComparable, minuteChange, type RunComparison } from '../../ui/src/compare.js';
import { parseHash, compareHash, sessionJson, type RunTrace } from '../../ui/src/model.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

/** Real compiles through the app, their traces read back as the viewer reads them. */
async function service() {
  const brainRoot = await copyExampleBrain();
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
  const compile = async (body: Record<string, unknown>) => {
    const response = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', ...body } });
    expect(response.statusCode).toBe(200);
  };
  const trace = async (runId: string): Promise<RunTrace> => (await app.inject(`/runs/${runId}/trace`)).json();
  const compare = async (a: string, b: string): Promise<RunComparison> => compareRuns(comparableEvent(await trace(a))!, comparableEvent(await trace(b))!);
  return { app, brainRoot, compile, trace, compare };
}

const changes = (comparison: RunComparison) => comparison.blocks.map((block) => [block.kind, block.change, block.reasons.map((reason) => [reason.kind, ...reason.details])]);
const boundaries = (comparison: RunComparison) =>
  comparison.boundaries.map((boundary) => [boundary.class, boundary.change, boundary.cause ? [boundary.cause.kind, ...boundary.cause.reasons.map((reason) => reason.kind)] : null]);

describe('compareRuns', () => {
  it('marks the changed blocks and the boundaries they moved, each with why: a brain file, the minute, the request', async () => {
    const { brainRoot, compile, compare } = await service();
    await compile({ runId: 'a', task: 'Draft the launch post.', now: '2026-11-30T17:30:00Z' });
    await appendFile(join(brainRoot, 'workers/scribe/identity.md'), '\nPrefer short paragraphs.\n');
    await compile({ runId: 'b', task: 'Draft the launch email instead.', now: '2026-11-30T17:31:20Z' });
    await compile({ runId: 'c', task: 'Draft the launch email instead.', now: '2026-11-30T17:32:00Z' });
    await compile({ runId: 'd', task: 'Draft the launch email instead.', now: '2026-11-30T17:32:00Z', timezone: 'Asia/Kolkata' });

    // The identity file changed, the minute changed and the task differed: every boundary moved, because of the identity.
    const ab = await compare('b', 'a');
    expect([ab.before.runId, ab.after.runId]).toEqual(['a', 'b']);
    expect(ab.sameSubject).toBe(true);
    expect(ab.minute).toEqual({ before: '2026-11-30T17:30', after: '2026-11-30T17:31' });
    expect(ab.sources).toEqual([expect.objectContaining({ path: 'workers/scribe/identity.md', change: 'changed' })]);
    expect(ab.request).toEqual([]);
    expect(changes(ab)).toEqual([
      ['identity', 'changed', [['sources', 'workers/scribe/identity.md']]],
      ['runtime-policy', 'unchanged', []],
      ['blueprint', 'unchanged', []],
      ['purpose', 'unchanged', []],
      ['runtime-scope', 'unchanged', []],
      ['clock', 'changed', [['minute', '17:30 → 17:31 UTC']]],
      ['memory', 'unchanged', []],
      ['memory', 'unchanged', []],
      ['memory', 'unchanged', []],
      ['task', 'changed', [['request', 'task']]],
    ]);
    expect(boundaries(ab)).toEqual([
      ['worker-stable', 'moved', ['identity', 'sources']],
      ['channel-stable', 'moved', ['identity', 'sources']],
      ['surface-stable', 'moved', ['identity', 'sources']],
      ['volatile', 'moved', ['identity', 'sources']],
    ]);
    expect(ab.routeKey.before).not.toBe(ab.routeKey.after);

    // Only the minute: the stable boundaries hold, the volatile one moves because of the clock.
    const bc = await compare('b', 'c');
    expect(changes(bc).filter(([, change]) => change !== 'unchanged')).toEqual([['clock', 'changed', [['minute', '17:31 → 17:32 UTC']]]]);
    expect(boundaries(bc)).toEqual([
      ['worker-stable', 'held', null],
      ['channel-stable', 'held', null],
      ['surface-stable', 'held', null],
      ['volatile', 'moved', ['clock', 'minute']],
    ]);
    expect(bc.routeKey.before).toBe(bc.routeKey.after);

    // The same minute in another zone: the request differed.
    const cd = await compare('c', 'd');
    expect(cd.request).toEqual([{ field: 'timezone', before: 'null', after: 'Asia/Kolkata' }]);
    expect(boundaries(cd).at(-1)).toEqual(['volatile', 'moved', ['clock', 'request']]);
    expect(cd.blocks.find((block) => block.kind === 'clock')!.reasons).toEqual([{ kind: 'request', details: ['timezone'] }]);
  });

  it('pairs memory notes by their file: a note file that appeared is an added block, because the sources changed', async () => {
    const { brainRoot, compile, compare } = await service();
    await compile({ runId: 'before', task: 'Draft.', now: '2026-11-30T17:30:00Z' });
    await writeFile(join(brainRoot, 'workers/scribe/memory/later.md'), '## Later\nUse the Oxford comma.\n');
    await compile({ runId: 'after', task: 'Draft.', now: '2026-11-30T17:30:00Z' });
    const comparison = await compare('before', 'after');
    const added = comparison.blocks.filter((block) => block.change === 'added');
    expect(added.map((block) => [block.kind, block.after!.block.source])).toEqual([['memory', 'workers/scribe/memory/later.md#later']]);
    expect(added[0]!.reasons[0]!.kind).toBe('sources');
    expect(added[0]!.reasons[0]!.details).toContain('workers/scribe/memory/later.md');
    expect(comparison.sources.find((source) => source.path === 'workers/scribe/memory/')).toMatchObject({ change: 'changed', names: ['+later.md'] });
    expect(comparison.boundaries.every((boundary) => boundary.change === 'held')).toBe(true);
  });

  it('compares a persona’s realtime session: narrowed tools change the tools block and the session, because a brain file changed', async () => {
    const { app, brainRoot, trace } = await service();
    const before = await app.inject('/context/venus?now=2026-11-30T17:30:00Z&runId=v1');
    await writeFile(join(brainRoot, 'personas/tools.json'), JSON.stringify({ personas: { venus: { tools: ['search', 'get_page'] } } }));
    await app.inject('/context/venus?now=2026-11-30T17:30:00Z&runId=v2');
    const [v1, v2] = [await trace('v1'), await trace('v2')];
    expect(sessionJson(v1.events[0]!)).toBe(JSON.stringify(before.json().session));
    const comparison = compareRuns(comparableEvent(v1)!, comparableEvent(v2)!);
    expect(comparison.realtime).toEqual({ voice: { before: 'coral', after: 'coral' }, toolsChanged: true, added: [], removed: ['query', 'list_pages', 'find_experts', 'get_recent_salience', 'get_recent_transcripts', 'read_article'] });
    const tools = comparison.blocks.find((block) => block.kind === 'tools')!;
    expect(tools.change).toBe('changed');
    expect(tools.reasons).toEqual([{ kind: 'sources', details: ['personas/tools.json'] }]);
    expect(boundaries(comparison)[0]).toEqual(['worker-stable', 'moved', ['tools', 'sources']]);
  });

  it('diffs the delivered text of each block that differs, once each side matches its digest, and says why a text is not shown', async () => {
    const { brainRoot, compile, compare } = await service();
    await compile({ runId: 'a', task: 'Draft the launch post.', now: '2026-11-30T17:30:00Z' });
    await appendFile(join(brainRoot, 'workers/scribe/identity.md'), '\nPrefer short paragraphs.\n');
    await compile({ runId: 'b', task: 'Draft the launch email.', now: '2026-11-30T17:31:00Z' });
    const comparison = await compare('a', 'b');
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    const texts = await blockTextDiffs(comparison, sha);
    const byKind = (kind: string) => texts.get(comparison.blocks.findIndex((block) => block.kind === kind));
    // Only the blocks that differ: identity, clock and task.
    expect([...texts.keys()].map((index) => comparison.blocks[index]!.kind)).toEqual(['identity', 'clock', 'task']);
    expect(byKind('identity')).toMatchObject({ kind: 'diff', diff: { kind: 'lines', added: 2, removed: 0 } });
    expect(byKind('task')).toEqual({
      kind: 'diff',
      diff: { kind: 'lines', added: 1, removed: 1, lines: [{ op: 'removed', text: 'Draft the launch post.', changed: [17, 21] }, { op: 'added', text: 'Draft the launch email.', changed: [17, 22] }] },
    });
    // A text that does not hash to its block's digest is never shown.
    const lying = await blockTextDiffs(comparison, (text) => (text.includes('Prefer short') ? '0'.repeat(64) : sha(text)));
    expect(lying.get(0)).toEqual({ kind: 'not-shown', reason: "the after run's text does not match its recorded sha256" });
    expect(comparisonLine(comparison)).toBe('3 of 10 blocks differ: identity changed (sources changed workers/scribe/identity.md); 4 of 4 cache boundaries moved; the route key changed');
    // The request text itself differed: said once, as the task's block.
    expect(comparison.requestText).toEqual(['task']);
    expect(comparison.request).toEqual([]);
  });

  it('finds a run’s latest comparable event page by page, with its place among all its events', async () => {
    const pages: RunTrace[] = [
      { runId: 'r', events: [{ at: 'a', blocks: [{ kind: 'identity' }] }, { at: 'b', blocks: [{ kind: 'identity' }] }], chain: { status: 'linked', problems: [], notes: [] }, nextCursor: 'next' },
      { runId: 'r', events: [{ at: 'c', error: {} }], chain: { status: 'linked', problems: [], notes: [] }, nextCursor: null },
    ] as unknown as RunTrace[];
    const cursors: Array<string | null> = [];
    const found = await latestComparable('r', async (cursor) => {
      cursors.push(cursor);
      return pages[cursors.length - 1]!;
    });
    expect(cursors).toEqual([null, 'next']);
    expect(found).toMatchObject({ runId: 'r', index: 1, count: 3, event: { at: 'b' } });
    expect(await latestComparable('gone', async () => null)).toBeNull();
  });

  it('reads the latest event that delivered blocks, and none from a run that only failed', () => {
    const delivered = { runId: 'r', at: '2026-11-30T17:30:00.000Z', blocks: [{ kind: 'identity' }] };
    const trace = (events: object[]) => ({ runId: 'r', events, chain: { status: 'linked', problems: [], notes: [] } }) as unknown as RunTrace;
    expect(comparableEvent(trace([delivered, { ...delivered, outcome: 'not-modified' }, { runId: 'r', at: delivered.at }]))).toMatchObject({ index: 1, count: 3 });
    expect(comparableEvent(trace([{ runId: 'r', at: delivered.at, error: {} }]))).toBeNull();
  });

  it('takes the minute from the now a compile used, and brain paths from block sources', () => {
    const event = (request: Record<string, unknown>) => ({ at: '2026-11-30T17:45:59.000Z', request }) as Parameters<typeof compileMinute>[0];
    expect(compileMinute(event({ nowUsed: '2026-11-30T09:01:30+02:00' }))).toBe('2026-11-30T07:01');
    expect(compileMinute(event({ now: null }))).toBe('2026-11-30T17:45');
    expect(minuteChange({ before: '2026-11-30T23:59', after: '2026-12-01T00:00' })).toBe('2026-11-30 23:59 → 2026-12-01 00:00 UTC');
    expect(brainPath('workers/scribe/memory/style.md#sign-off')).toBe('workers/scribe/memory/style.md');
    expect(brainPath('builtin:clock')).toBeNull();
    expect(brainPath('request:task')).toBeNull();
  });

  it('routes #/compare/<a>/<b> and refuses anything that is not two run ids', () => {
    expect(parseHash(compareHash('run-a', 'b:2'))).toEqual({ name: 'compare', runIds: ['run-a', 'b:2'] });
    expect(parseHash('#/compare/run-a')).toEqual({ name: 'not-found', hash: '#/compare/run-a' });
    expect(parseHash('#/compare/run-a/..%2Fx').name).toBe('not-found');
    expect(parseHash('#/compare/%E0%A4%A/b').name).toBe('not-found');
  });
});
