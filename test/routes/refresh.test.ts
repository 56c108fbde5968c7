/**
 * `GET /context/:persona/refresh?runId=` (issue 24): a mid-call refresh compares a
 * fresh compile with the connect's run — 304 when the live context did not change, else the
 * changed lines as one short text and the provider's event — traced as `<runId>:refresh`,
 * each event naming its parent, and only for the caller that connected.
 */
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GeminiContextEventSchema, OpenAIContextEventSchema, RefreshResponseSchema } from '../../schemas/refresh.js';
import type { TraceEvent } from '../../schemas/trace.js';
import { rebuildRefreshText, type ReadRun } from '../../src/sources/persona/refresh.js';
import { buildTestApp, copyExampleBrain, OTHER_TOKEN, TEST_TOKEN } from '../helpers/app.js';

const NOW = '2026-11-30T17:05:00Z';
const LATER = '2026-11-30T17:25:00Z';
const NEW_LINE = 'Felt a quiet joy at the harbour lighthouse.';
/** Today's note with one line, so a new feeling is not one of six that pushes the weakest out, and its words recur nowhere (no new theme). */
const TODAY = '# 2026-11-30\n\n- Woke early and felt calm about the week.\n';

async function harness(env: Record<string, string> = {}) {
  const brainRoot = await copyExampleBrain();
  const built = await buildTestApp({ BRAIN_ROOT: brainRoot, ...env });
  const connect = async (url: string, headers: Record<string, string> = {}) => {
    const response = await built.app.inject({ url, headers });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    return response.json() as { runId: string; instructions: string; session?: { instructions: string } };
  };
  const events = async (runId: string, headers: Record<string, string> = {}) => {
    const response = await built.app.inject({ url: `/runs/${encodeURIComponent(runId)}/trace`, headers });
    return response.statusCode === 200 ? (response.json().events as Array<Record<string, any>>) : [];
  };
  return { ...built, brainRoot, connect, events };
}

describe('GET /context/:persona/refresh', () => {
  it('answers 304 when nothing in the live context changed, even minutes later, and traces it under <runId>:refresh naming its parent', async () => {
    const { app, connect, events } = await harness();
    for (const persona of ['mars', 'venus']) {
      const { runId } = await connect(`/context/${persona}?now=${NOW}&topicId=real-estate`);
      const refresh = await app.inject(`/context/${persona}/refresh?runId=${runId}&now=${LATER}`);
      expect(refresh.statusCode, `${persona}: ${refresh.body}`).toBe(304);
      expect(refresh.body).toBe('');
      expect(refresh.headers['x-run-id']).toBe(`${runId}:refresh`);
      expect(refresh.headers['etag']).toMatch(/^"[0-9a-f]{40}\.refresh"$/);
      const [event] = await events(`${runId}:refresh`);
      expect(event).toMatchObject({
        runId: `${runId}:refresh`,
        parentRunId: runId,
        route: `GET /context/${persona}/refresh`,
        status: 304,
        outcome: 'not-modified',
        refresh: { provider: 'openai', changes: [], textSha256: null, chars: 0 },
        request: { topicId: 'real-estate', provider: 'openai' },
      });
      // The refresh compiled the persona again with the connect's options: its topic block is there.
      expect(event!.blocks.map((block: { kind: string }) => block.kind)).toContain('topic');
    }
  });

  it('regression: a memory line appended mid-call is a one-line delta, delivered as a system message item, and both runs are traced and linked', async () => {
    const { app, brainRoot, connect, events } = await harness();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), TODAY);
    const connected = await connect(`/context/mars?now=${NOW}`);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- ${NEW_LINE}\n`);
    const response = await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}`);
    expect(response.statusCode, response.body).toBe(200);
    const body = RefreshResponseSchema.parse(response.json());
    expect(body).toMatchObject({ runId: `${connected.runId}:refresh`, parentRunId: connected.runId, persona: 'mars', provider: 'openai' });
    expect(body.changes).toEqual([{ block: 'live-context', source: 'builtin:mars/live-context', added: 1, removed: 0 }]);
    const [heading, block, ...rest] = body.text.split('\n');
    expect(rest).toEqual([]);
    expect(heading).toBe('Since we connected, the live context changed. Current date and time: Monday 30 November 2026, 09:25 (America/Los_Angeles, UTC-08:00)');
    expect(JSON.parse(block!)).toEqual({ block: 'live-context', authority: 'advisory', source: 'builtin:mars/live-context', text: `New:\n- 2026-11-30: ${NEW_LINE}` });
    // Only the changed line: never the instructions again.
    expect(body.text.length).toBeLessThan(400);
    expect(body.text).not.toContain('<<cc');
    expect(body.text).toMatch(/^[\x00-\x7f]*$/);
    expect(OpenAIContextEventSchema.parse(body.event)).toEqual({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'system', content: [{ type: 'input_text', text: body.text }] },
    });
    // The connect's run, untouched, and the refresh run naming it.
    const [connectEvent] = await events(connected.runId);
    expect(connectEvent).toMatchObject({ route: 'GET /context/mars', status: 200 });
    expect(connectEvent!.parentRunId).toBeUndefined();
    const [refreshEvent] = await events(`${connected.runId}:refresh`);
    expect(refreshEvent).toMatchObject({ parentRunId: connected.runId, status: 200, outcome: 'delivered', verified: true });
    expect(refreshEvent!.refresh).toMatchObject({ changes: body.changes, chars: body.text.length });
    expect(refreshEvent!.inputPrompt).toContain(NEW_LINE);
    // What was sent is what the trace shows: the delta text itself, rebuilt and held to its digest (it kept only the digest).
    expect(refreshEvent!.refreshText).toEqual({ text: body.text });
    // A digest the rebuilt text does not match shows no text, and says why.
    const forged = { ...refreshEvent, refresh: { ...refreshEvent!.refresh, textSha256: '0'.repeat(64) } } as unknown as TraceEvent;
    const readRun: ReadRun = async (runId) => ({ events: await events(runId) as unknown as TraceEvent[] });
    expect(await rebuildRefreshText(readRun, forged, null)).toEqual({ text: null, reason: 'the text rebuilt from the trace does not match its recorded sha256' });
    expect(await rebuildRefreshText(async () => null, refreshEvent as unknown as TraceEvent, null)).toEqual({ text: null, reason: `its connect (run ${connected.runId}) is not in the trace` });

    // The same answer again is a 304 to a caller that sends its ETag, a 200 to one that does not.
    const etag = String(response.headers['etag']);
    const again = await app.inject({ url: `/context/mars/refresh?runId=${connected.runId}&now=${LATER}`, headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.headers['etag']).toBe(etag);
    const unconditional = await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}`);
    expect(unconditional.statusCode).toBe(200);
    expect((await events(`${connected.runId}:refresh`)).map((event) => event.status)).toEqual([200, 304, 200]);
  });

  it('for a Gemini 2.5 Live model, delivers the change as client content that does not end the turn (the connect’s provider and model by default)', async () => {
    const { app, brainRoot, connect } = await harness();
    const connected = await connect(`/context/mars?now=${NOW}&provider=gemini&model=gemini-2.5-flash-native-audio-preview-12-2025`);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- ${NEW_LINE}\n`);
    const body = (await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}`)).json();
    expect(body).toMatchObject({ provider: 'gemini', delivery: 'client-content' });
    expect(body.setup).toBeUndefined();
    expect(GeminiContextEventSchema.parse(body.event)).toEqual({ clientContent: { turns: [{ role: 'user', parts: [{ text: body.text }] }], turnComplete: false } });
    expect(body.warnings).toEqual([]);
    // Asked for another form than the connect's: answered, with a warning saying so.
    const openai = (await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}&provider=openai`)).json();
    expect(openai.delivery).toBe('conversation-item');
    expect(openai.event.type).toBe('conversation.item.create');
    expect(openai.warnings).toEqual(["refresh-provider: the connect was answered for gemini; this refresh's event is openai's"]);
  });

  it('for Gemini 3.1 Live, which refuses mid-session client content, answers a reconnect: the whole updated setup, traced as one more compile of the run with its parent', async () => {
    const { app, brainRoot, connect, events } = await harness();
    const connected = await connect(`/context/mars?now=${NOW}&provider=gemini&model=gemini-3.1-flash-live-preview`);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- ${NEW_LINE}\n`);
    const response = await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}`);
    expect(response.statusCode, response.body).toBe(200);
    const body = RefreshResponseSchema.parse(response.json());
    expect(body).toMatchObject({ provider: 'gemini', delivery: 'reconnect', event: null, warnings: [] });
    // The setup a connect at this minute would get: its instructions hold the new line, the connect's did not.
    const fresh = (await app.inject(`/context/mars?now=${LATER}&provider=gemini`)).json();
    expect(body.setup).toEqual(fresh.setup);
    expect(body.setup!.systemInstruction.parts[0]!.text).toContain(NEW_LINE);
    expect((connected as unknown as { setup: { systemInstruction: { parts: Array<{ text: string }> } } }).setup.systemInstruction.parts[0]!.text).not.toContain(NEW_LINE);
    const [event] = await events(`${connected.runId}:refresh`);
    expect(event).toMatchObject({ parentRunId: connected.runId, status: 200, refresh: { provider: 'gemini', delivery: 'reconnect' }, request: { model: 'gemini-3.1-flash-live-preview', delivery: 'reconnect' } });
    // A model named on the refresh overrides the connect's; an unknown one is a reconnect, with a warning.
    const named = (await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}&model=gemini-live-2.5-flash-preview`)).json();
    expect(named.delivery).toBe('client-content');
    const unknown = (await app.inject(`/context/mars/refresh?runId=${connected.runId}&now=${LATER}&model=gemini-3-pro-live`)).json();
    expect(unknown.delivery).toBe('reconnect');
    expect(unknown.warnings).toEqual([expect.stringMatching(/^delivery-model-unknown: gemini-3-pro-live /)]);
    expect((await app.inject(`/context/mars/refresh?runId=${connected.runId}&model=Not%20A%20Model`)).statusCode).toBe(400);
  });

  it('says what is no longer there: a venus task done mid-call', async () => {
    const { app, brainRoot, connect } = await harness();
    const connected = await connect(`/context/venus?now=${NOW}`);
    const path = join(brainRoot, 'tasks/open.md');
    const tasks = await readFile(path, 'utf8');
    await writeFile(path, tasks.replace('- [ ] **Answer the landlord about the studio lease**', '- [x] **Answer the landlord about the studio lease**'));
    const body = (await app.inject(`/context/venus/refresh?runId=${connected.runId}&now=${LATER}`)).json();
    expect(body.changes).toHaveLength(1);
    const text = JSON.parse(body.text.split('\n')[1]).text as string;
    expect(text).toContain('No longer:\n');
    expect(text).toContain('Answer the landlord about the studio lease');
  });

  it('unknown runId, a run without this persona’s connect, a run id too long to refresh: problems, and nothing traced', async () => {
    const { app, connect } = await harness();
    const unknown = await app.inject('/context/mars/refresh?runId=no-such-run');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unknown.json()).toMatchObject({ code: 'CC_NOT_FOUND', detail: expect.stringContaining('No connect of mars to refresh in run no-such-run') });
    const { runId: venusRun } = await connect(`/context/venus?now=${NOW}`);
    expect((await app.inject(`/context/mars/refresh?runId=${venusRun}`)).statusCode).toBe(404);
    const long = await app.inject(`/context/mars/refresh?runId=${'r'.repeat(121)}`);
    expect(long.statusCode).toBe(400);
    expect(JSON.stringify(long.json().errors)).toContain('runId');
    expect((await app.inject('/context/mars/refresh')).statusCode).toBe(400);
    expect((await app.inject('/context/jupiter/refresh?runId=x')).statusCode).toBe(404);
    const runs = (await app.inject('/runs')).json().runs.map((run: { runId: string }) => run.runId);
    expect(runs).toEqual([venusRun]);
  });

  it('regression: a refresh of another caller’s run is a 404, as an unknown run, and opens no refresh run for it', async () => {
    const { app, connect, events } = await harness({ CONTEXT_COMPILER_TOKENS: `alice:${TEST_TOKEN},bob:${OTHER_TOKEN}` });
    const alice = { authorization: `Bearer ${TEST_TOKEN}` };
    const bob = { authorization: `Bearer ${OTHER_TOKEN}` };
    const { runId } = await connect(`/context/mars?now=${NOW}`, alice);
    const stolen = await app.inject({ url: `/context/mars/refresh?runId=${runId}`, headers: bob });
    expect(stolen.statusCode).toBe(404);
    expect(stolen.json().code).toBe('CC_NOT_FOUND');
    // Alice's own refresh still works: Bob's attempt did not open `<runId>:refresh`.
    const own = await app.inject({ url: `/context/mars/refresh?runId=${runId}&now=${NOW}`, headers: alice });
    expect(own.statusCode).toBe(304);
    expect((await events(`${runId}:refresh`, alice)).map((event) => event.caller)).toEqual(['alice']);
  });

  it('regression: a caller granted read-all still refreshes only its own connects', async () => {
    const { app, connect } = await harness({ CONTEXT_COMPILER_TOKENS: `alice:${TEST_TOKEN},bob:${OTHER_TOKEN}`, CONTEXT_COMPILER_READ_ALL: 'bob' });
    const { runId } = await connect(`/context/mars?now=${NOW}`, { authorization: `Bearer ${TEST_TOKEN}` });
    // Alice's refresh first: the connect it remembers is hers alone.
    expect((await app.inject({ url: `/context/mars/refresh?runId=${runId}&now=${NOW}`, headers: { authorization: `Bearer ${TEST_TOKEN}` } })).statusCode).toBe(304);
    expect((await app.inject({ url: `/runs/${runId}/trace`, headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).statusCode).toBe(200);
    expect((await app.inject({ url: `/context/mars/refresh?runId=${runId}`, headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).statusCode).toBe(404);
  });

  it('regression: a refresh without the connect’s topicName keeps the connect’s topic and reports no change; the run keeps a digest of the name, never the text', async () => {
    const { app, connect, events } = await harness();
    const { runId } = await connect(`/context/mars?now=${NOW}&topicId=real-estate&topicName=Flat%20hunt`);
    const [connectEvent] = await events(runId);
    expect(connectEvent!.request).toMatchObject({ topicName: true, topicNameSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(JSON.stringify(connectEvent!.request)).not.toContain('Flat hunt');
    // Before: a 200 telling the model the topic was "no longer" there.
    expect((await app.inject(`/context/mars/refresh?runId=${runId}&now=${NOW}`)).statusCode).toBe(304);
    expect((await app.inject(`/context/mars/refresh?runId=${runId}&now=${NOW}&topicName=Flat%20hunt`)).statusCode).toBe(304);
    const other = await app.inject(`/context/mars/refresh?runId=${runId}&now=${NOW}&topicName=Boat%20hunt`);
    expect(other.statusCode).toBe(200);
    expect(other.json().warnings).toContain("refresh-topic-name: this refresh's topicName is not the connect's; its topic block differs by the name");
  });

  it('catch-up: a call that connected on its static session (no connect in its run) gets its whole live context on its first refresh, which opens the call’s run; later refreshes compare with what it delivered', async () => {
    const { app, brainRoot, events } = await harness();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), TODAY);
    // Without a baseline, a run with no connect is still a 404.
    expect((await app.inject(`/context/mars/refresh?runId=call-1&now=${NOW}`)).statusCode).toBe(404);
    const first = await app.inject(`/context/mars/refresh?runId=call-1&now=${NOW}&baseline=static&topicId=real-estate&timezone=Europe/London`);
    expect(first.statusCode, first.body).toBe(200);
    const body = RefreshResponseSchema.parse(first.json());
    expect(body).toMatchObject({ runId: 'call-1', parentRunId: 'call-1', delivery: 'conversation-item' });
    // Everything the static session lacks: the live context and the topic, all of it new.
    expect(body.changes.map(({ block, removed }) => ({ block, removed }))).toEqual([
      { block: 'live-context', removed: 0 },
      { block: 'topic', removed: 0 },
    ]);
    const live = (await app.inject(`/context/mars?now=${NOW}&topicId=real-estate&timezone=Europe/London`)).json();
    expect(body.changes[0]!.added).toBe(live.liveContext.split('\n').filter((line: string) => line.trim() !== '').length);
    expect(body.text).toContain('Woke early and felt calm about the week.');
    expect(body.text).toContain('(Europe/London,');
    const [opened] = await events('call-1');
    expect(opened).toMatchObject({ runId: 'call-1', route: 'GET /context/mars/refresh', status: 200, request: { baseline: 'static', topicId: 'real-estate', timezone: 'Europe/London' } });
    expect(opened!.parentRunId).toBeUndefined();
    expect(opened!.refreshText).toEqual({ text: body.text });
    // The next refresh compares with what the catch-up delivered: nothing new is a 304, beside the call's run.
    const second = await app.inject(`/context/mars/refresh?runId=call-1&now=${LATER}`);
    expect(second.statusCode).toBe(304);
    expect(second.headers['x-run-id']).toBe('call-1:refresh');
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- ${NEW_LINE}\n`);
    const third = (await app.inject(`/context/mars/refresh?runId=call-1&now=${LATER}&baseline=static`)).json();
    expect(third.changes).toEqual([{ block: 'live-context', source: 'builtin:mars/live-context', added: 1, removed: 0 }]);
    expect(third.warnings).toEqual(['refresh-catch-up-ignored: run call-1 holds its connect; baseline ignored (the connect\'s are used)']);
    // Compared with the catch-up, and rebuilt against it.
    expect((await events('call-1:refresh'))[1]!.refreshText).toEqual({ text: third.text });
    expect((await events('call-1:refresh')).map((event) => [event.status, event.parentRunId])).toEqual([
      [304, 'call-1'],
      [200, 'call-1'],
    ]);
  });

  it('regression: a catch-up with an unusable timezone compiles in the operator\'s zone and traces only the zone\'s length and digest, as a connect does (it traced the caller\'s text)', async () => {
    const { app, brainRoot, events } = await harness();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), TODAY);
    const given = 'call me at +44 20 7946 0958';
    const caught = await app.inject(`/context/mars/refresh?runId=call-9&now=${NOW}&baseline=static&timezone=${encodeURIComponent(given)}`);
    expect(caught.statusCode, caught.body).toBe(200);
    expect(caught.json().warnings).toContainEqual(expect.stringMatching(/^timezone-invalid: /));
    const [opened] = await events('call-9');
    expect(opened!.request).toMatchObject({ baseline: 'static', timezone: null, timezoneRejected: { reason: 'invalid', chars: given.length } });
    expect(JSON.stringify(opened)).not.toContain('7946');
  });

  it('catch-up from a stale session: compared with the connect it came from, so only what changed since is delivered', async () => {
    const { app, brainRoot, connect, events } = await harness();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), TODAY);
    const { runId: earlier } = await connect(`/context/mars?now=${NOW}`);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- ${NEW_LINE}\n`);
    const caught = (await app.inject(`/context/mars/refresh?runId=call-2&now=${LATER}&baseline=stale&baselineRunId=${earlier}`)).json();
    expect(caught.runId).toBe('call-2');
    expect(caught.changes).toEqual([{ block: 'live-context', source: 'builtin:mars/live-context', added: 1, removed: 0 }]);
    expect((await events('call-2'))[0]!.refreshText).toEqual({ text: caught.text });
    expect((await app.inject(`/context/mars/refresh?runId=call-3&baseline=stale`)).statusCode).toBe(400);
    // A stale session whose run is not found here (past retention, another replica's files): the whole live context, as to a static one.
    const lost = await app.inject(`/context/mars/refresh?runId=call-3&now=${LATER}&baseline=stale&baselineRunId=no-such-run`);
    expect(lost.statusCode).toBe(200);
    expect(lost.json().runId).toBe('call-3');
    expect(lost.json().changes).toEqual([expect.objectContaining({ block: 'live-context', removed: 0 })]);
    expect(lost.json().changes[0].added).toBeGreaterThan(1);
    expect((await events('call-3'))[0]!.refreshText).toEqual({ text: lost.json().text });
    expect(lost.json().warnings).toContain('refresh-baseline-missing: no connect of mars in run no-such-run (the stale session\'s); the whole live context is delivered, as to a static session');
    expect((await app.inject(`/context/mars/refresh?runId=call-3:refresh&baseline=static`)).statusCode).toBe(404);
  });
});
