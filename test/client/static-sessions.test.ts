/**
 * The client's static sessions (and static Gemini setups, issue 24) are the service's own
 * answer for an empty brain (issue 22): generated from it (scripts/client-sessions.ts), and byte for byte what it
 * answers, clock line included, at any instant and zone. A persona, tool or rule changed in
 * the service and not regenerated fails here.
 */
import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient } from '../../packages/client/src/index.js';
import { clockLine as clientClockLine } from '../../packages/client/src/clock.js';
import { STATIC_SESSIONS } from '../../packages/client/src/static-sessions.js';
import { generateStaticSessions, STATIC_SESSIONS_PATH } from '../../scripts/client-sessions.js';
import { RealtimeSessionSchema } from '../../schemas/compiled.js';
import { GeminiSetupSchema } from '../../schemas/gemini.js';
import { PERSONAS } from '../../src/core/persona/personas.js';
import { clockLine } from '../../src/core/time.js';
import { buildTestApp, tempDir } from '../helpers/app.js';
import { downService } from '../helpers/ports.js';

/** Instants and zones a call may connect at: DST edges, half- and quarter-hour zones, a link, a pre-1900 local mean time. */
const MOMENTS: Array<{ now: string; timezone?: string }> = [
  { now: '2026-11-30T17:05:00Z' },
  { now: '2026-11-30T17:05:59Z', timezone: 'UTC' },
  { now: '2026-03-29T00:59:00Z', timezone: 'Europe/London' },
  { now: '2026-03-29T01:00:00Z', timezone: 'Europe/London' },
  { now: '2026-11-01T08:59:00Z', timezone: 'US/Pacific' },
  { now: '2026-11-01T09:30:00Z', timezone: 'America/Los_Angeles' },
  { now: '2027-01-01T00:00:00+05:30', timezone: 'Asia/Kolkata' },
  { now: '2026-06-15T12:00:00Z', timezone: 'Asia/Kathmandu' },
  { now: '2026-10-04T02:00:00+10:30', timezone: 'Australia/Lord_Howe' },
  { now: '1850-06-01T12:00:00Z', timezone: 'Asia/Kolkata' },
  { now: '2026-02-28T23:59:00-12:00', timezone: 'Pacific/Kiritimati' },
];

describe('static sessions', () => {
  it('are what the service generates (run `npm run client-sessions` after changing a persona, its tools or rules)', async () => {
    expect(await readFile(STATIC_SESSIONS_PATH, 'utf8')).toBe(await generateStaticSessions());
    expect(Object.keys(STATIC_SESSIONS)).toEqual(PERSONAS.map((persona) => persona.key));
  }, 60_000);

  it('equal, byte for byte, the service\'s session for an empty brain at the same instant and zone', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await tempDir('cc-empty-brain-') });
    const api = createClient({ baseUrl: await downService() });
    onTestFinished(() => api.close());
    for (const persona of PERSONAS.map(({ key }) => key)) {
      for (const moment of MOMENTS) {
        const query = new URLSearchParams({ now: moment.now, ...(moment.timezone === undefined ? {} : { timezone: moment.timezone }) });
        const served = await app.inject(`/context/${persona}?${query}`);
        expect(served.statusCode).toBe(200);
        const fallback = await api.realtimeSession(persona, moment);
        expect(fallback.source).toBe('static');
        // The bytes a voice server sends: the JSON of the session, the service's and the client's.
        expect(JSON.stringify(fallback.session), `${persona} ${JSON.stringify(moment)}`).toBe(JSON.stringify(served.json().session));
        expect(RealtimeSessionSchema.strict().parse(fallback.session)).toEqual(fallback.session);
      }
    }
  });

  it("equal, byte for byte, the service's Gemini setup (provider=gemini) for an empty brain at the same instant and zone", async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await tempDir('cc-empty-brain-') });
    const api = createClient({ baseUrl: await downService() });
    onTestFinished(() => api.close());
    for (const persona of PERSONAS.map(({ key }) => key)) {
      for (const moment of MOMENTS) {
        const query = new URLSearchParams({ now: moment.now, provider: 'gemini', ...(moment.timezone === undefined ? {} : { timezone: moment.timezone }) });
        const served = await app.inject(`/context/${persona}?${query}`);
        expect(served.statusCode).toBe(200);
        const fallback = await api.geminiSetup(persona, moment);
        expect(fallback.source).toBe('static');
        expect(JSON.stringify(fallback.setup), `${persona} ${JSON.stringify(moment)}`).toBe(JSON.stringify(served.json().setup));
        expect(GeminiSetupSchema.parse(fallback.setup)).toEqual(fallback.setup);
      }
    }
  });

  it('render the service\'s clock line for any instant and zone', () => {
    const zones = ['UTC', 'Europe/London', 'America/St_Johns', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham', 'America/Sao_Paulo', 'Africa/Monrovia', 'Etc/GMT+12', 'US/Pacific'];
    fc.assert(
      fc.property(fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9998-12-31T23:59:59Z'), noInvalidDate: true }), fc.constantFrom(...zones), (now, zone) => {
        expect(clientClockLine(now, zone)).toBe(clockLine(now, zone));
      }),
      { numRuns: 2000 },
    );
  });
});
