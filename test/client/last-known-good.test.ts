/**
 * The last known good session (issue 32): during an outage a call gets the last session the
 * service answered for the same persona and query — every byte as compiled, the clock line
 * made anew — while it is from the same local day and younger than `staleMaxAgeMs`, and the
 * static session only when there is none. A static session's clock is in the zone the service
 * last answered with. With `lastKnownGoodFile` it outlives the host. Real listening servers
 * on port 0; instants are the queries' own `now`, so nothing here depends on the wall clock.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient, LAST_KNOWN_GOOD_ENTRIES, type ClientOptions, type FallbackEvent } from '../../packages/client/src/index.js';
import { STATIC_SESSIONS } from '../../packages/client/src/static-sessions.js';
import { clockLine } from '../../src/core/time.js';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
/** Where no test is about the budget, a budget no loaded machine comes near. */
const GENEROUS = 60_000;
/** The example brain's operator zone (memory/heartbeat-state.json). */
const OPERATOR_ZONE = 'America/Los_Angeles';
// 09:00 in Los Angeles; later the same day; more than 6 h later the same day; the next day.
const T1 = '2026-12-02T17:00:00Z';
const T2 = '2026-12-02T19:30:00Z';
const SEVEN_HOURS_LATER = '2026-12-03T00:01:00Z';
const NEXT_DAY = '2026-12-03T08:30:00Z';

/** The service on a port of its own, and a way to take it down. */
async function service(env: Record<string, string> = {}) {
  const { app } = await buildTestApp(env);
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  return { baseUrl, down: () => app.close() };
}

function watched(baseUrl: string, options: Omit<ClientOptions, 'baseUrl'> = {}) {
  const fallbacks: FallbackEvent[] = [];
  const api = createClient({ timeoutMs: GENEROUS, ...options, baseUrl, realtime: { budgetMs: GENEROUS, ...options.realtime, onFallback: (event) => fallbacks.push(event) } });
  onTestFinished(() => api.close());
  return { api, fallbacks };
}

/** A server answering with `handler` (switchable), every socket destroyed after the test. */
async function fakeService(first: (request: IncomingMessage, response: ServerResponse) => void) {
  let handler = first;
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => handler(request, response));
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answer(next: typeof first) {
      handler = next;
    },
  };
}

const unavailable = (_request: IncomingMessage, response: ServerResponse) => {
  response.writeHead(503, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ status: 503, code: 'CC_OVERLOADED', detail: 'busy' }));
};

/** A real persona answer, replayed with the run the request asked for. */
async function replaying(persona: string) {
  const { app } = await buildTestApp();
  const body = (await app.inject({ url: `/context/${persona}?now=${T1}&view=session` })).json() as Record<string, unknown>;
  return (request: IncomingMessage, response: ServerResponse) => {
    const runId = new URL(request.url!, 'http://x').searchParams.get('runId') ?? 'replayed-run';
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...body, runId }));
  };
}

describe('a fallback during an outage', () => {
  it('serves the stale session: a fresh clock line, an unchanged prefix digest, every other byte as compiled', async () => {
    const { baseUrl, down } = await service();
    const { api, fallbacks } = watched(baseUrl);
    const live = await api.realtimeSession('venus', { now: T1 });
    expect(live).toMatchObject({ source: 'service', fallback: null, stale: null });
    const plan = await api.context('venus', { now: T1 });
    const stable = plan.cache.boundaries.filter((boundary) => boundary.class !== 'volatile').at(-1)!;
    const oldLine = clockLine(new Date(T1), OPERATOR_ZONE);
    expect(live.session.instructions).toContain(oldLine);

    await down();
    const stale = await api.realtimeSession('venus', { now: T2 });
    expect(stale).toMatchObject({ persona: 'venus', source: 'stale', fallback: 'network', runId: expect.stringMatching(/^[0-9a-f-]{36}$/), stale: { runId: live.runId, at: T1.replace('Z', '.000Z') } });
    const { instructions } = stale.session;
    const newLine = clockLine(new Date(T2), OPERATOR_ZONE);
    expect(newLine).toBe('Current date and time: Wednesday 2 December 2026, 11:30 (America/Los_Angeles, UTC-08:00)');
    // The stable prefix, byte for byte what the cache plan names.
    expect(sha256(instructions.slice(0, stable.prefixChars))).toBe(stable.prefixSha256);
    // Only the clock line changed, where the volatile tail starts, and venus says under it what she cannot see now:
    // its live context is the same.
    expect(instructions).toBe(live.session.instructions.replace(oldLine, `${newLine}\n${STATIC_SESSIONS.venus.staleNote}`));
    expect(STATIC_SESSIONS.venus.staleNote).toMatch(/cannot see the operator's calendar, tasks or messages/);
    expect(instructions.indexOf(newLine)).toBe(live.session.instructions.indexOf(oldLine));
    expect(instructions.indexOf(newLine)).toBeGreaterThan(stable.prefixChars);
    expect(instructions).toContain('Live context (advisory)');
    expect({ ...stale.session, instructions: '' }).toEqual({ ...live.session, instructions: '' });
    expect(stale.instructionsSha256).toBe(sha256(instructions));
    expect(stale.warnings).toEqual([expect.stringMatching(new RegExp(`^stale-session: network \\(CC_CLIENT_NETWORK: .*\\); venus connected on its last live session \\(run ${live.runId}, 150 min old\\), with the clock line of now$`))]);
    expect(fallbacks).toMatchObject([{ persona: 'venus', servedAs: 'venus', source: 'stale', reason: 'network' }]);

    // Gemini's setup is kept the same way, under its own provider.
    expect(await api.geminiSetup('venus', { now: T2 })).toMatchObject({ source: 'static' });
  });

  it('keeps a session whose stable blocks the ASCII form changed: its own bytes, the clock line found by its line', async () => {
    const brain = await copyExampleBrain();
    await writeFile(join(brain, 'personas/venus.md'), 'You are Venus \u2014 warm, brief and curious. You say \u201cI don\u2019t know\u201d plainly when you do not.\n');
    const { baseUrl, down } = await service({ BRAIN_ROOT: brain });
    const { api } = watched(baseUrl);
    const live = await api.realtimeSession('venus', { now: T1 });
    const answer = await api.context('venus', { now: T1 });
    expect(answer.systemPrompt).toContain('You are Venus \u2014 warm');
    expect(live.session.instructions).toContain('You are Venus -- warm');
    await down();
    const stale = await api.realtimeSession('venus', { now: T2 });
    expect(stale).toMatchObject({ source: 'stale', stale: { runId: live.runId } });
    expect(stale.session.instructions).toBe(live.session.instructions.replace(clockLine(new Date(T1), OPERATOR_ZONE), `${clockLine(new Date(T2), OPERATOR_ZONE)}\n${STATIC_SESSIONS.venus.staleNote}`));
  });

  it('serves a stale Gemini setup for Gemini, and keeps each persona and query apart', async () => {
    const { baseUrl, down } = await service();
    const { api } = watched(baseUrl);
    const live = await api.geminiSetup('mars', { now: T1, topicId: 'real-estate' });
    await down();
    const stale = await api.geminiSetup('mars', { now: T2, topicId: 'real-estate' });
    expect(stale).toMatchObject({ source: 'stale', stale: { runId: live.runId } });
    const [text, liveText] = [stale.setup.systemInstruction.parts[0]!.text, live.setup.systemInstruction.parts[0]!.text];
    expect(text).toBe(liveText.replace(clockLine(new Date(T1), OPERATOR_ZONE), `${clockLine(new Date(T2), OPERATOR_ZONE)}\n${STATIC_SESSIONS.mars.staleNote}`));
    // Another topic, another persona, another provider: nothing kept for them.
    expect(await api.geminiSetup('mars', { now: T2 })).toMatchObject({ source: 'static' });
    expect(await api.geminiSetup('venus', { now: T2, topicId: 'real-estate' })).toMatchObject({ source: 'static' });
    expect(await api.realtimeSession('mars', { now: T2, topicId: 'real-estate' })).toMatchObject({ source: 'static' });
  });

  it('falls back to the static session once the stale one is older than staleMaxAgeMs or from another day, in the zone the service answered with', async () => {
    const fake = await fakeService(await replaying('mars'));
    const { api, fallbacks } = watched(fake.baseUrl);
    // Before any answer, a static clock is in fallbackTimezone (UTC).
    fake.answer(unavailable);
    expect((await api.realtimeSession('mars', { now: T1 })).session.instructions.endsWith('(UTC, UTC+00:00)')).toBe(true);
    fake.answer(await replaying('mars'));
    const live = await api.realtimeSession('mars', { now: T1 });
    expect(live).toMatchObject({ source: 'service' });
    fake.answer(unavailable);

    expect(await api.realtimeSession('mars', { now: T2 })).toMatchObject({ source: 'stale', fallback: 'server-error' });
    const old = await api.realtimeSession('mars', { now: SEVEN_HOURS_LATER });
    expect(old).toMatchObject({ source: 'static', fallback: 'server-error', stale: null });
    expect(old.warnings[0]).toBe(`stale-expired: mars's last live session (run ${live.runId}) is older than 360 min`);
    // The static clock: the operator's zone, as the service last answered (16:01 in Los Angeles), not UTC.
    expect(old.session.instructions.endsWith('Wednesday 2 December 2026, 16:01 (America/Los_Angeles, UTC-08:00)')).toBe(true);
    const tomorrow = await api.realtimeSession('mars', { now: NEXT_DAY }, { staleMaxAgeMs: 24 * 3600_000 });
    expect(tomorrow).toMatchObject({ source: 'static' });
    expect(tomorrow.warnings[0]).toBe(`stale-expired: mars's last live session (run ${live.runId}) is from another day in America/Los_Angeles`);
    // staleMaxAgeMs is the caller's: a minute is too old for 2.5 hours.
    expect(await api.realtimeSession('mars', { now: T2 }, { staleMaxAgeMs: 60_000 })).toMatchObject({ source: 'static' });
    // A zone the query names is the one a static clock uses.
    const london = await api.realtimeSession('venus', { now: T2, timezone: 'Europe/London' });
    expect(london.session.instructions.endsWith('Wednesday 2 December 2026, 19:30 (Europe/London, UTC+00:00)')).toBe(true);
    expect(fallbacks.map((event) => event.source)).toEqual(['static', 'stale', 'static', 'static', 'static', 'static']);
  });

  it('keeps no answer whose clock line it cannot find by the clock block\'s label: such a session is served, never served stale', async () => {
    const { app } = await buildTestApp();
    const body = (await app.inject({ url: `/context/mars?now=${T1}&view=session` })).json() as Record<string, any>;
    const text = body['session'].instructions as string;
    const line = clockLine(new Date(T1), OPERATOR_ZONE);
    const withText = (instructions: string) => ({ ...body, session: { ...body['session'], instructions } });
    const broken: Array<[string, Record<string, unknown>]> = [
      ['no cache plan', { ...body, cacheBoundaries: undefined }],
      ['a clock line that is not one', withText(text.replace(line, 'Current date and time: soon'))],
      ['a second clock label', withText(`${text}\n\n<<cc clock | trusted-directive | builtin:clock>>\n${line}`)],
      ['no clock label', withText(text.replace('<<cc clock |', '<<cc klock |'))],
      ['a plan that holds for the text but does not end at the clock', { ...body, cacheBoundaries: [{ class: 'worker-stable', prefixChars: 100, prefixSha256: sha256(text.slice(0, 100)) }] }],
    ];
    for (const [label, answer] of broken) {
      // Each answer is for the run the client asked (it names one on every connect).
      const fake = await fakeService((request, response) =>
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...answer, runId: new URL(request.url!, 'http://x').searchParams.get('runId') })),
      );
      const { api } = watched(fake.baseUrl);
      expect(await api.realtimeSession('mars', { now: T1 }), label).toMatchObject({ source: 'service' });
      fake.answer(unavailable);
      expect(await api.realtimeSession('mars', { now: T2 }), label).toMatchObject({ source: 'static' });
    }
  });

  it('keeps the text\'s own stable prefix when the plan\'s digest is not the text\'s (the ASCII form changed a stable block)', async () => {
    const { app } = await buildTestApp();
    const body = (await app.inject({ url: `/context/mars?now=${T1}&view=session` })).json() as Record<string, any>;
    const text = body['session'].instructions as string;
    const clockAt = text.indexOf('\n\n<<cc clock |');
    const answer = { ...body, cacheBoundaries: (body['cacheBoundaries'] as Array<Record<string, unknown>>).map((boundary) => ({ ...boundary, prefixSha256: '0'.repeat(64) })) };
    const fake = await fakeService((request, response) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...answer, runId: new URL(request.url!, 'http://x').searchParams.get('runId') })),
    );
    const { api } = watched(fake.baseUrl);
    expect(await api.realtimeSession('mars', { now: T1 })).toMatchObject({ source: 'service' });
    fake.answer(unavailable);
    const stale = await api.realtimeSession('mars', { now: T2 });
    expect(stale).toMatchObject({ source: 'stale' });
    expect(stale.session.instructions.slice(0, clockAt)).toBe(text.slice(0, clockAt));
  });

  it('hands out a fresh stale session each time: a caller that changes one changes no later one', async () => {
    const fake = await fakeService(await replaying('mars'));
    const { api } = watched(fake.baseUrl);
    const live = await api.realtimeSession('mars', { now: T1 });
    live.session.tools[0]!.name = 'changed-by-the-caller';
    fake.answer(unavailable);
    const first = await api.realtimeSession('mars', { now: T2 });
    first.session.tools[0]!.name = 'changed-again';
    const second = await api.realtimeSession('mars', { now: T2 });
    expect(second.session.tools[0]!.name).toBe('search');
  });

  it(`keeps at most ${LAST_KNOWN_GOOD_ENTRIES} sessions, the least recently answered going first`, async () => {
    const fake = await fakeService(await replaying('mars'));
    const { api } = watched(fake.baseUrl);
    const topics = Array.from({ length: LAST_KNOWN_GOOD_ENTRIES + 8 }, (_, index) => `topic-${index}`);
    for (const topicId of topics) expect(await api.realtimeSession('mars', { now: T1, topicId })).toMatchObject({ source: 'service' });
    fake.answer(unavailable);
    const sources = [];
    for (const topicId of topics) sources.push((await api.realtimeSession('mars', { now: T2, topicId })).source);
    expect(sources).toEqual([...Array(8).fill('static'), ...Array(LAST_KNOWN_GOOD_ENTRIES).fill('stale')]);
  });
});

describe('lastKnownGoodFile', () => {
  it('keeps the last live sessions across a restart of the host: written atomically, mode 0600', async () => {
    const fake = await fakeService(await replaying('venus'));
    const dir = await tempDir('cc-lkg-');
    const file = join(dir, 'last-known-good.json');
    const first = createClient({ baseUrl: fake.baseUrl, timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS, lastKnownGoodFile: file } });
    const live = await first.realtimeSession('venus', { now: T1, runId: 'call-1' });
    expect(live.runId).toBe('call-1');
    await first.close();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['last-known-good.json']);

    fake.answer(unavailable);
    const { api } = watched(fake.baseUrl, { realtime: { lastKnownGoodFile: file } });
    const stale = await api.realtimeSession('venus', { now: T2, runId: 'call-2' });
    expect(stale).toMatchObject({ source: 'stale', stale: { runId: 'call-1' } });
    expect(stale.session.instructions).toBe(
      live.session.instructions.replace(clockLine(new Date(T1), OPERATOR_ZONE), `${clockLine(new Date(T2), OPERATOR_ZONE)}\n${STATIC_SESSIONS.venus.staleNote}`),
    );
    // The operator's zone came back with it.
    const other = await api.realtimeSession('mars', { now: T2 });
    expect(other.session.instructions.endsWith('(America/Los_Angeles, UTC-08:00)')).toBe(true);
  });

  it('writes every session kept while a write was under way: one write at a time, none lost', async () => {
    const fake = await fakeService(await replaying('mars'));
    const file = join(await tempDir('cc-lkg-'), 'last-known-good.json');
    const first = createClient({ baseUrl: fake.baseUrl, timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS, lastKnownGoodFile: file } });
    const topics = Array.from({ length: 12 }, (_, index) => `topic-${index}`);
    for (const topicId of topics) await first.realtimeSession('mars', { now: T1, topicId });
    await Promise.all(topics.map((topicId) => first.realtimeSession('mars', { now: T1, topicId: `${topicId}-again` })));
    await first.close();
    fake.answer(unavailable);
    const { api } = watched(fake.baseUrl, { realtime: { lastKnownGoodFile: file } });
    for (const topicId of topics.flatMap((topic) => [topic, `${topic}-again`])) {
      expect(await api.realtimeSession('mars', { now: T2, topicId }), topicId).toMatchObject({ source: 'stale' });
    }
  });

  it('ignores a corrupt, foreign, tampered or oversized file with a warning, and never throws', async () => {
    const fake = await fakeService(await replaying('venus'));
    const dir = await tempDir('cc-lkg-');
    const file = join(dir, 'last-known-good.json');
    const writer = createClient({ baseUrl: fake.baseUrl, timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS, lastKnownGoodFile: file } });
    await writer.realtimeSession('venus', { now: T1 });
    await writer.close();
    const good = await readFile(file, 'utf8');
    fake.answer(unavailable);

    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === 'CC_CLIENT_LAST_KNOWN_GOOD') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    onTestFinished(() => void process.off('warning', onWarning));
    const tampered = good.replace('You are Venus', 'You are Vexus');
    expect(tampered).not.toBe(good);
    const contents: Array<[string, string]> = [
      ['not JSON', '{"version":1,"entries":[['],
      ['foreign', JSON.stringify({ hello: 'world' })],
      ['tampered', tampered],
      ['oversized', ' '.repeat(8 * 1024 * 1024 + 1)],
    ];
    for (const [label, content] of contents) {
      await writeFile(file, content);
      const { api } = watched(fake.baseUrl, { realtime: { lastKnownGoodFile: file } });
      expect(await api.realtimeSession('venus', { now: T2 }), label).toMatchObject({ source: 'static', fallback: 'server-error' });
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([
      `context-compiler client: last-known-good file ${file} ignored: not JSON`,
      `context-compiler client: last-known-good file ${file} ignored: not a last-known-good file of this client`,
      `context-compiler client: last-known-good file ${file} read without 1 of its 1 entries: not sessions this client kept`,
      `context-compiler client: last-known-good file ${file} ignored: ${8 * 1024 * 1024 + 1} bytes, over ${8 * 1024 * 1024}`,
    ]);
    // Nothing of the prompts in a warning.
    expect(warnings.join('\n')).not.toContain('Venus');
  });
});
