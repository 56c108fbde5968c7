import { appendFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { scribeTurn } from '../helpers/turns.js';

interface Compiled {
  systemPrompt: string;
  inputPrompt: string;
  warnings: string[];
  sources: Array<{ path: string }>;
  recall: { suppressed: boolean };
  receipts: { role?: { id: string } };
}

async function workerApp() {
  const brainRoot = await copyExampleBrain();
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
  const compile = async (payload: Record<string, unknown>) => {
    const response = await app.inject({ method: 'POST', url: '/compile', payload });
    return { status: response.statusCode, body: response.json() as Compiled };
  };
  return { brainRoot, compile };
}

const paths = (body: Compiled) => body.sources.map((source) => source.path);

/**
 * A worker's files are kept with the record of the reads that found them and replayed for a
 * later request of the same kind (issue 23: one snapshot helper for persona and worker). A
 * replay must see every change completed before the request, like reading again would.
 */
describe('POST /compile serves a worker’s files again only while they are unchanged', () => {
  it('sees each file changed between two requests: a memory note, a new memory file, the policy, the identity, the zone', async () => {
    const { brainRoot, compile } = await workerApp();
    const first = await compile(scribeTurn());
    expect(first.status).toBe(200);
    expect((await compile(scribeTurn())).body.systemPrompt).toBe(first.body.systemPrompt);

    await appendFile(join(brainRoot, 'workers/scribe/memory/style.md'), '\n## Sign-off colour\nThe sign-off line is set in a quiet grey.\n');
    const appended = await compile(scribeTurn());
    expect(appended.body.inputPrompt).toContain('The sign-off line is set in a quiet grey.');

    await writeFile(join(brainRoot, 'workers/scribe/memory/zz-later.md'), '## Sign-off for tightening\nTighten the sign-off to one line.\n');
    const listed = await compile(scribeTurn());
    expect(paths(listed.body)).toContain('workers/scribe/memory/zz-later.md');

    await writeFile(join(brainRoot, 'workers/scribe/policy.json'), JSON.stringify({ recall: 'clean-room' }));
    const cleanRoom = await compile(scribeTurn({ phase: 'start', surface: 'queued-task', message: undefined, channelId: undefined, task: 'Tidy the sign-off.' }));
    expect(cleanRoom.status).toBe(200);
    expect(cleanRoom.body.recall.suppressed).toBe(true);
    expect(paths(cleanRoom.body).filter((path) => path.includes('/memory/'))).toEqual([]);

    await writeFile(join(brainRoot, 'workers/scribe/identity.md'), 'You are Scribe, rewritten: terse and exact.\n');
    const renamed = await compile(scribeTurn());
    expect(renamed.body.systemPrompt).toContain('You are Scribe, rewritten: terse and exact.');

    await writeFile(join(brainRoot, 'memory/heartbeat-state.json'), JSON.stringify({ currentLocation: { timezone: 'Asia/Tokyo', city: 'Tokyo' } }));
    const moved = await compile(scribeTurn());
    expect(moved.body.systemPrompt).toContain('(Asia/Tokyo, UTC+09:00)');
  });

  it('refuses an identity swapped for a link out of the brain after it was served', async () => {
    const { brainRoot, compile } = await workerApp();
    expect((await compile(scribeTurn())).status).toBe(200);
    const outside = await tempDir('cc-outside-');
    await writeFile(join(outside, 'identity.md'), 'OUTSIDE-MARKER\n');
    await rm(join(brainRoot, 'workers/scribe/identity.md'));
    await symlink(join(outside, 'identity.md'), join(brainRoot, 'workers/scribe/identity.md'));
    const swapped = await compile(scribeTurn());
    expect(swapped.status).toBe(422);
    expect(JSON.stringify(swapped.body)).not.toContain('OUTSIDE-MARKER');
  });

  it('keeps a clean-room worker’s clean run apart from its interaction run: memory is read for one, never for the other', async () => {
    const { compile } = await workerApp();
    const courier = { phase: 'start', surface: 'queued-task', worker: 'courier', task: "Assemble and send this week's digest.", now: '2026-11-30T17:20:00Z' };
    const clean = await compile(courier);
    const interaction = await compile({ ...courier, evidence: [{ sourceRef: 'chat#9', content: 'Jordan: slipped items first, please.' }] });
    const cleanAgain = await compile(courier);
    expect([clean.status, interaction.status, cleanAgain.status]).toEqual([200, 200, 200]);
    expect(clean.body.recall.suppressed).toBe(true);
    expect(interaction.body.recall.suppressed).toBe(false);
    expect(paths(interaction.body)).toContain('workers/courier/memory/team.md');
    expect(paths(cleanAgain.body)).not.toContain('workers/courier/memory/team.md');
    expect(cleanAgain.body.systemPrompt).toBe(clean.body.systemPrompt);
  });

  it('reports the warnings of the reads it replays, on every request', async () => {
    const { brainRoot, compile } = await workerApp();
    await writeFile(join(brainRoot, 'workers/scribe/connections.json'), '{ not json');
    const first = await compile(scribeTurn());
    const second = await compile(scribeTurn());
    expect(first.body.warnings).toContain('workers/scribe/connections.json is not valid JSON; no connections block');
    expect(second.body.warnings).toEqual(first.body.warnings);
  });
});
