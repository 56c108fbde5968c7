/**
 * `?view=session` on the persona routes: the lean answer a realtime connect uses — the session
 * (or Gemini's setup), its run, persona, provider, warnings, refresh delivery and the digests
 * that match it to its trace — with its own ETag, traced like any delivery.
 */
import { describe, expect, it } from 'vitest';
import { PersonaSessionResponseSchema } from '../../schemas/context.js';
import { buildTestApp } from '../helpers/app.js';

const NOW = '2026-11-30T17:20:00Z';
const LEAN_MEMBERS = ['runId', 'persona', 'promptSha256', 'cacheBoundaries', 'provider', 'warnings', 'delivery'];

describe('GET /context/:persona?view=session', () => {
  it('answers exactly the members a connect uses, the prompt text only inside session or setup', async () => {
    const { app } = await buildTestApp();
    for (const persona of ['mars', 'venus']) {
      const full = (await app.inject(`/context/${persona}?now=${NOW}`)).json();
      const response = await app.inject(`/context/${persona}?now=${NOW}&view=session`);
      expect(response.statusCode).toBe(200);
      const lean = response.json();
      expect(Object.keys(lean)).toEqual([...LEAN_MEMBERS, 'session']);
      expect(PersonaSessionResponseSchema.strict().parse(lean)).toEqual(lean);
      expect(lean).toMatchObject({ persona, provider: 'openai', delivery: 'conversation-item', promptSha256: full.promptSha256, session: full.session });
      expect(lean.cacheBoundaries).toEqual(full.cache.boundaries.map(({ class: cacheClass, prefixChars, prefixSha256 }: Record<string, unknown>) => ({ class: cacheClass, prefixChars, prefixSha256 })));
      // Outside the session, no line of the prompt: what is left is a few hundred bytes of ids and digests.
      const { session: _session, ...rest } = lean;
      const outside = JSON.stringify(rest);
      for (const line of (full.systemPrompt as string).split('\n').filter((text) => text.length > 20)) expect(outside).not.toContain(JSON.stringify(line).slice(1, -1));
      expect(outside.length).toBeLessThan(1000);
      expect(response.body.length).toBeLessThan(JSON.stringify(full).length * 0.6);

      const gemini = (await app.inject(`/context/${persona}?now=${NOW}&view=session&provider=gemini&model=gemini-2.5-flash-native-audio-preview-09-2025`)).json();
      expect(Object.keys(gemini)).toEqual([...LEAN_MEMBERS, 'setup']);
      expect(gemini.provider).toBe('gemini');
    }
  });

  it('writes the same bytes as the schema serializer, also once the result’s lean part is kept', async () => {
    const { app } = await buildTestApp();
    const bodies: string[] = [];
    for (let i = 0; i < 3; i++) bodies.push((await app.inject(`/context/mars?now=${NOW}&view=session&runId=same-${i}`)).body.replace(/same-\d/, 'same-x'));
    expect(new Set(bodies).size).toBe(1);
    expect(bodies[0]).toBe(JSON.stringify(JSON.parse(bodies[0]!)));
    // The full answer of the same result keeps its own bytes beside the lean one's.
    const full = await app.inject(`/context/mars?now=${NOW}`);
    expect(Object.keys(full.json())).toContain('systemPrompt');
  });

  it('has an ETag of its own, and answers 304 per view', async () => {
    const { app } = await buildTestApp();
    const url = `/context/venus?now=${NOW}`;
    const full = await app.inject(url);
    const lean = await app.inject(`${url}&view=session`);
    const text = await app.inject(`${url}&format=text`);
    const [fullTag, leanTag, textTag] = [full, lean, text].map((response) => response.headers.etag as string);
    expect(new Set([fullTag, leanTag, textTag]).size).toBe(3);
    expect((await app.inject({ url: `${url}&view=session`, headers: { 'if-none-match': leanTag } })).statusCode).toBe(304);
    expect((await app.inject({ url: `${url}&view=full`, headers: { 'if-none-match': fullTag } })).statusCode).toBe(304);
    // One view's ETag is not the other's representation.
    expect((await app.inject({ url: `${url}&view=session`, headers: { 'if-none-match': fullTag } })).statusCode).toBe(200);
    expect((await app.inject({ url, headers: { 'if-none-match': leanTag } })).statusCode).toBe(200);
  });

  it('is traced like the full answer: the run rebuilt and verified, the view recorded', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject(`/context/mars?now=${NOW}&view=session&runId=lean-run`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-run-id']).toBe('lean-run');
    const lean = response.json();
    const [event] = (await app.inject('/runs/lean-run/trace')).json().events;
    expect(event).toMatchObject({ outcome: 'delivered', verified: true, promptSha256: lean.promptSha256, request: { view: 'session', format: 'json' } });
    expect(event.cache.boundaries.map((boundary: { prefixSha256: string }) => boundary.prefixSha256)).toEqual(lean.cacheBoundaries.map((boundary: { prefixSha256: string }) => boundary.prefixSha256));
    const instructions = event.inputPrompt === null ? event.systemPrompt : `${event.systemPrompt}\n\n${event.inputPrompt}`;
    expect(instructions).toBe(lean.session.instructions);
    const fullRun = await app.inject(`/context/mars?now=${NOW}&runId=full-run`);
    expect(fullRun.statusCode).toBe(200);
    expect((await app.inject('/runs/full-run/trace')).json().events[0].request.view).toBe('full');
  });

  it('is a 400 naming `view` with format=text or a HUD, which it cannot carry', async () => {
    const { app } = await buildTestApp();
    for (const query of ['view=session&format=text', 'view=session&hud=1', 'view=lean']) {
      const response = await app.inject(`/context/mars?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.body).toContain('view');
    }
    expect((await app.inject(`/context/mars?now=${NOW}&view=session&hud=0`)).statusCode).toBe(200);
  });
});

describe('GET /context/:persona, the full answer', () => {
  it('carries each text once: the prompt pair, no joined instructions, the tools only in session or setup', async () => {
    const { app } = await buildTestApp();
    for (const query of ['', '&provider=gemini']) {
      const response = await app.inject(`/context/mars?now=${NOW}${query}`);
      const body = response.json();
      expect(Object.keys(body)).not.toContain('instructions');
      expect(Object.keys(body)).not.toContain('tools');
      // The system prompt's text appears once in the bytes as delivered (the session's copy is its ASCII form, the same here).
      const identity = (body.systemPrompt as string).split('\n')[1]!;
      const realtime = body.session ?? body.setup;
      const copies = response.body.split(JSON.stringify(identity).slice(1, -1)).length - 1;
      expect(copies).toBe(2);
      expect(JSON.stringify(realtime)).toContain(JSON.stringify(identity).slice(1, -1));
      const tool = JSON.stringify((body.session?.tools ?? body.setup.tools[0].functionDeclarations)[0].name);
      expect(response.body.split(`"name":${tool}`).length - 1).toBe(1);
    }
    // format=text still gives the joined instructions, as they were delivered.
    const full = (await app.inject(`/context/mars?now=${NOW}`)).json();
    expect((await app.inject(`/context/mars?now=${NOW}&format=text`)).body).toBe(`${full.systemPrompt}\n\n${full.inputPrompt}`);
  });
});
