import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../src/config.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * Issue 27's reproductions, each against a real server process: one brain line (a calendar
 * invite, an inbox sender, a memory note heading, blueprint front matter) froze the old
 * service for seconds to minutes. Each request here must answer, and `/healthz` must answer
 * every probe while it runs. The server is a child process, so a regression makes these
 * tests fail on their deadlines (the probes and the request time out) instead of hanging
 * the test runner.
 */

const NOW = '2026-11-30T17:05:00Z';
/**
 * A probe that waits longer than this means the event loop was blocked. The regressions held
 * it for seconds to minutes; the parsers' growth itself is guarded on CPU time by
 * test/security/complexity.test.ts, so this end-to-end deadline only tells blocked from
 * answering, with room for a busy machine's scheduling (a probe on a quiet one takes ms).
 */
const PROBE_DEADLINE_MS = 10_000;
const REQUEST_DEADLINE_MS = 30_000;

let server: ServerProcess;
let port: number;
let dir: string;
let brain: string;

// One server and one brain for the file (the helpers' temp dirs go after each test).
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cc-untrusted-'));
  brain = join(dir, 'brain');
  await cp(EXAMPLE_BRAIN, brain, { recursive: true });
  const traces = join(dir, 'traces');
  server = startServer({ PORT: '0', HOST: '127.0.0.1', BRAIN_ROOT: brain, TRACE_DIR: traces, RATE_LIMIT_MAX: '100000' });
  port = await server.listening();
});

afterAll(async () => {
  server.child.kill('SIGKILL');
  await server.exited;
  await rm(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * Sends `send` while probing `/healthz` every 100 ms, each probe with its own deadline;
 * returns the answer and the probes that failed (a status other than 200, or no answer in time).
 */
async function whileProbing(send: () => Promise<Answer>): Promise<{ answer: Answer; failedProbes: string[] }> {
  const failedProbes: string[] = [];
  let done = false;
  const probing = (async () => {
    while (!done) {
      const started = Date.now();
      try {
        const response = await request(`http://127.0.0.1:${port}/healthz`, { headersTimeout: PROBE_DEADLINE_MS, bodyTimeout: PROBE_DEADLINE_MS });
        await response.body.dump();
        if (response.statusCode !== 200) failedProbes.push(`status ${response.statusCode}`);
      } catch (error) {
        failedProbes.push(`no answer within ${PROBE_DEADLINE_MS} ms (${(error as Error).name}) after ${Date.now() - started} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    return { answer: await send(), failedProbes };
  } finally {
    done = true;
    await probing;
  }
}

async function get(path: string): Promise<Answer> {
  const response = await request(`http://127.0.0.1:${port}${path}`, { headersTimeout: REQUEST_DEADLINE_MS, bodyTimeout: REQUEST_DEADLINE_MS });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

async function post(path: string, payload: unknown): Promise<Answer> {
  const response = await request(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    headersTimeout: REQUEST_DEADLINE_MS,
    bodyTimeout: REQUEST_DEADLINE_MS,
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

describe('one brain line cannot freeze the service (issue 27)', () => {
  it('a realistic 211-byte calendar invite (a Zoom link, a long title clamped to 200 chars) answers GET /context/venus while /healthz answers throughout', async () => {
    const invite =
      '- 10:00 Q1 planning with the platform, data and infra teams https://us02web.zoom.us/j/85012345678?pwd=Zk1xN2RrM3B5d0V4dWZ1Ym9uZ1dyQT09 agenda: roadmap, hiring, budget, offsite travel, and the new expenses policy';
    expect(Buffer.byteLength(invite)).toBe(211);
    await writeFile(join(brain, 'calendar/today.md'), `# Today — 2026-11-30\n\n${invite}\n`);
    const { answer, failedProbes } = await whileProbing(() => get(`/context/venus?now=${NOW}`));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(failedProbes).toEqual([]);
    const event = String(answer.body['liveContext'])
      .split('\n')
      .find((line) => line.startsWith('- 10:00 '));
    // Clamped, with the cut fragment of the link dropped before the ellipsis: no partial number survives.
    expect(event).toMatch(/^- 10:00 Q1 planning with the platform, data and infra teams.*…$/);
  });

  it('an inbox sender "- [unread] 11111111111111111111 a…: hi" answers GET /context/venus while /healthz answers throughout', async () => {
    await writeFile(join(brain, 'messages/inbox.md'), '# Inbox\n\n- [unread] 11111111111111111111 a…: hi\n');
    const { answer, failedProbes } = await whileProbing(() => get(`/context/venus?now=${NOW}`));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(failedProbes).toEqual([]);
    expect(String(answer.body['liveContext'])).toContain('Unread messages: 1 (from');
  });

  it('a memory note heading "## a" + 60,000 spaces + "b" answers POST /compile while /healthz answers throughout', async () => {
    await writeFile(join(brain, 'workers/scribe/memory/spaces.md'), `## a${' '.repeat(60_000)}b\nthe spaced note\n`);
    const { answer, failedProbes } = await whileProbing(() => post('/compile', { phase: 'start', surface: 'queued-task', worker: 'scribe', task: 'the spaced note', now: NOW }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(failedProbes).toEqual([]);
    // The note was parsed and weighed: at 60 KB it is over scribe's 2,000-char memory budget.
    expect((answer.body['budget'] as { omitted: { memory: number } }).omitted.memory).toBeGreaterThanOrEqual(1);
  });

  it('blueprint front matter "revision: a" + 150k spaces answers POST /compile while /healthz answers throughout', async () => {
    await mkdir(join(brain, 'platform'), { recursive: true });
    await writeFile(join(brain, 'platform/blueprint.md'), `---\nrevision: a${' '.repeat(150_000)}b\n---\nEvery worker leaves a trail.\n`);
    const { answer, failedProbes } = await whileProbing(() => post('/compile', { phase: 'start', surface: 'queued-task', worker: 'scribe', task: 'write the digest', now: NOW }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(failedProbes).toEqual([]);
    // Not a bounded token: the revision is the file's digest, with a warning.
    expect((answer.body['receipts'] as { blueprint: { revision: string } }).blueprint.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(answer.body['warnings']).toContain(
      'platform/blueprint.md: front matter revision is not a token ([A-Za-z0-9._:+-], at most 64); the revision is its digest',
    );
  });
});
