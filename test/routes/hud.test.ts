/**
 * The heads-up display (issue 18): per brain file a compile looked for — found or missing —
 * its bytes, tokens, the line range read when only part was taken and its share of the
 * budget, sorted by path; in the answer with `?hud=1`, and in the trace always.
 */
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approxTokens, serializeSnapshot, sha256Hex, type Hud } from '../../src/core/index.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { scribeTurn, TURN_NOW } from '../helpers/turns.js';
import { instructionsOf } from '../helpers/answers.js';

const NOW = TURN_NOW;

async function appOn() {
  const brainRoot = await copyExampleBrain();
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
  return { app, brainRoot };
}

type Block = { kind: string; source: string; chars: number };

describe('HUD: POST /compile', () => {
  it('with ?hud=1 lists every file looked for, found or missing, sorted by path, and the trace records the same HUD', async () => {
    const { app, brainRoot } = await appOn();
    const response = await app.inject({ method: 'POST', url: '/compile?hud=1', payload: scribeTurn({ runId: 'hud-run' }) });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    const hud = body.hud as Hud;
    const paths = hud.files.map((file) => file.path);
    expect(paths).toEqual([...paths].sort());
    expect(hud.files.filter((file) => !file.exists).map((file) => file.path)).toEqual(['workers/scribe/connections.json']);
    expect(paths).toEqual(
      expect.arrayContaining(['channels/general/purpose.md', 'platform/blueprint.md', 'workers/scribe/identity.md', 'workers/scribe/memory/style.md', 'workers/scribe/policy.json']),
    );
    const identityText = await readFile(join(brainRoot, 'workers/scribe/identity.md'), 'utf8');
    const identity = hud.files.find((file) => file.path === 'workers/scribe/identity.md')!;
    const identityBlock = body.blocks.find((block: Block) => block.kind === 'identity');
    expect(identity).toEqual({
      path: 'workers/scribe/identity.md',
      exists: true,
      sha256: sha256Hex(identityText),
      size: Buffer.byteLength(identityText),
      bytes: Buffer.byteLength(identityText),
      tokens: approxTokens(identityText),
      lines: null,
      blocks: ['identity'],
      chars: identityBlock.chars,
      share: Math.round((identityBlock.chars / body.budget.limitChars) * 10_000) / 10_000,
    });
    // The memory notes of one file count toward that file; policy.json feeds no block.
    const style = hud.files.find((file) => file.path === 'workers/scribe/memory/style.md')!;
    const notes = body.blocks.filter((block: Block) => block.source.startsWith('workers/scribe/memory/style.md#'));
    expect(style.blocks).toEqual(['memory']);
    expect(style.chars).toBe(notes.reduce((sum: number, block: Block) => sum + block.chars, 0));
    expect(hud.files.find((file) => file.path === 'workers/scribe/policy.json')!.blocks).toEqual([]);
    // Every delivered char is on a file's row or a derived one.
    const fromFiles = hud.files.reduce((sum, file) => sum + file.chars, 0);
    const derived = hud.derived.reduce((sum, row) => sum + row.chars, 0);
    expect(fromFiles + derived).toBe(body.blocks.reduce((sum: number, block: Block) => sum + block.chars, 0));
    expect(hud.derived.map((row) => row.source)).toEqual(expect.arrayContaining(['builtin:runtime-policy', 'builtin:clock', 'request:message']));
    expect(hud).toMatchObject({ limitChars: body.budget.limitChars, usedChars: body.budget.usedChars });
    expect(hud.snapshotSha256).toBe(sha256Hex(serializeSnapshot(hud.files)));

    const [event] = (await app.inject('/runs/hud-run/trace')).json().events;
    expect(event.hud).toEqual(hud);
    expect(event.hudRejected).toBeUndefined();
    expect(event.verified).toBe(true);
  });

  it('leaves hud out of the answer unless asked, and still traces it', async () => {
    const { app } = await appOn();
    const body = (await app.inject({ method: 'POST', url: '/compile', payload: scribeTurn({ runId: 'quiet-run' }) })).json();
    expect(body).not.toHaveProperty('hud');
    expect((await app.inject({ method: 'POST', url: '/compile?hud=0', payload: scribeTurn() })).json()).not.toHaveProperty('hud');
    const [event] = (await app.inject('/runs/quiet-run/trace')).json().events;
    expect(event.hud.files.length).toBeGreaterThan(3);
    const bad = await app.inject({ method: 'POST', url: '/compile?hud=yes', payload: scribeTurn() });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe('/query/hud');
  });

  it('gives the same snapshot digest for two turns that read the same files, and a new one when a file changes', async () => {
    const { app, brainRoot } = await appOn();
    const hudOf = async (payload: object) => (await app.inject({ method: 'POST', url: '/compile?hud=1', payload })).json().hud as Hud;
    const first = await hudOf(scribeTurn());
    const second = await hudOf(scribeTurn({ message: 'Something else entirely, about dates.' }));
    expect(second.snapshotSha256).toBe(first.snapshotSha256);
    await appendFile(join(brainRoot, 'workers/scribe/identity.md'), 'You like short words.\n');
    const third = await hudOf(scribeTurn());
    expect(third.snapshotSha256).not.toBe(first.snapshotSha256);
    expect(third.files.find((file) => file.path === 'workers/scribe/identity.md')!.sha256).not.toBe(first.files.find((file) => file.path === 'workers/scribe/identity.md')!.sha256);
  });
});

describe('HUD: persona routes', () => {
  it('gives the line range of a file read only in part: the last lines of a daily memory file (tail), the first lines of tasks (head)', async () => {
    const { app, brainRoot } = await appOn();
    const daily = join(brainRoot, 'memory/2026-11-30.md');
    const line = 'Walked by the river and felt calm again, thinking about the week ahead and what matters.\n';
    await writeFile(daily, `# 2026-11-30\n${line.repeat(2000)}`);
    const mars = (await app.inject(`/context/mars?now=${NOW}&hud=1`)).json();
    const file = (mars.hud as Hud).files.find((candidate) => candidate.path === 'memory/2026-11-30.md')!;
    const size = Buffer.byteLength(`# 2026-11-30\n${line.repeat(2000)}`);
    expect(file).toMatchObject({ exists: true, size });
    expect(file.bytes).toBeLessThanOrEqual(128 * 1024);
    const kept = Math.floor(file.bytes / Buffer.byteLength(line));
    expect(file.lines).toEqual({ from: -kept, to: -1 });
    // Regression: SOUL.md and the memory files showed no block and a 0.0 % share, though they make up the live context.
    const live = mars.blocks.find((block: Block) => block.kind === 'live-context');
    const liveShare = Math.round((live.chars / mars.budget.limitChars) * 10_000) / 10_000;
    expect(liveShare).toBeGreaterThan(0);
    for (const path of ['SOUL.md', 'memory/2026-11-30.md']) {
      expect((mars.hud as Hud).files.find((candidate) => candidate.path === path), path).toMatchObject({ blocks: ['live-context'], chars: live.chars, share: liveShare });
    }
    expect((mars.hud as Hud).derived.map((row) => row.source)).not.toContain('builtin:mars/live-context');
    const shared = (mars.hud as Hud).shared!;
    expect(shared).toEqual([{ kind: 'live-context', source: 'builtin:mars/live-context', chars: live.chars, share: liveShare, files: expect.arrayContaining(['SOUL.md', 'memory/2026-11-30.md']) }]);
    // The file that chose the zone, a listing, a missing override: no part of the live context.
    expect(shared[0]!.files).not.toContain('memory/heartbeat-state.json');
    // The override the persona looked for and did not find.
    expect((mars.hud as Hud).files.find((candidate) => candidate.path === 'personas/mars.md')).toMatchObject({ exists: false, sha256: null, lines: null });

    const tasks = join(brainRoot, 'tasks/open.md');
    const task = '- [ ] P2: Sort the receipts from the garden shop into the right folder\n';
    await writeFile(tasks, `# Open tasks\n${task.repeat(5000)}`);
    const venus = (await app.inject(`/context/venus?now=${NOW}&hud=1`)).json();
    const open = (venus.hud as Hud).files.find((candidate) => candidate.path === 'tasks/open.md')!;
    expect(open.bytes).toBeLessThan(open.size);
    expect(open.lines).toEqual({ from: 1, to: Math.floor((open.bytes - '# Open tasks\n'.length) / task.length) + 1 });
    // Venus's live context is the tasks, the calendar, the inbox and the newest meeting note.
    const venusShared = (venus.hud as Hud).shared!;
    expect(venusShared.map((row) => row.source)).toEqual(['builtin:venus/live-context']);
    expect(venusShared[0]!.files).toEqual(expect.arrayContaining(['calendar/today.md', 'messages/inbox.md', 'tasks/open.md']));
    expect(venusShared[0]!.files.some((path) => path.startsWith('meetings/'))).toBe(true);
    expect(open.blocks).toEqual(['live-context']);
  });

  it('describes the files this request read even when the compiled result is shared with an earlier request', async () => {
    const { app, brainRoot } = await appOn();
    const url = `/context/mars?now=${NOW}&hud=1`;
    const heartbeat = join(brainRoot, 'memory/heartbeat-state.json');
    const first = (await app.inject(url)).json();
    // Same zone, other bytes: the prompt (and the shared result) stay the same, the file does not.
    const state = JSON.parse(await readFile(heartbeat, 'utf8'));
    await writeFile(heartbeat, JSON.stringify({ ...state, note: 'moved desks' }));
    const second = (await app.inject(url)).json();
    expect(instructionsOf(second)).toBe(instructionsOf(first));
    const digestOf = (body: { hud: Hud }) => body.hud.files.find((file) => file.path === 'memory/heartbeat-state.json')!.sha256;
    expect(digestOf(second)).not.toBe(digestOf(first));
    expect(second.hud.snapshotSha256).not.toBe(first.hud.snapshotSha256);
    // And back to a repeat: the same files give the same HUD.
    expect((await app.inject(url)).json().hud).toEqual(second.hud);
  });

  it('attributes the topic block to its file on the topic route', async () => {
    const { app } = await appOn();
    const body = (await app.inject('/context/topic/garden?hud=1')).json();
    const topic = (body.hud as Hud).files.find((file) => file.path === 'topics/garden.md')!;
    expect(topic.blocks).toEqual(['topic']);
    expect(topic.chars).toBe(body.blocks.find((block: Block) => block.kind === 'topic').chars);
    expect((await app.inject('/context/topic/garden')).json()).not.toHaveProperty('hud');
  });
});
