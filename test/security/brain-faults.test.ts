import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { answered, NOW, turn } from '../helpers/security-harness.js';

const FIVE_MB = 5 * 1024 * 1024;
const PERSONA_URLS = [`/context/mars?now=${NOW}&topicId=real-estate`, `/context/venus?now=${NOW}`, '/context/topic/real-estate'];

async function write(root: string, path: string, content: string | Buffer): Promise<void> {
  await mkdir(join(root, path, '..'), { recursive: true });
  await rm(join(root, path), { recursive: true, force: true });
  await writeFile(join(root, path), content);
}

/** Every persona route and a worker compile: all answered, none 5xx; returns the answers by URL. */
async function everyRoute(app: FastifyInstance, payload: Record<string, unknown> = turn()) {
  const answers = new Map<string, { status: number; body: Record<string, unknown> | undefined }>();
  for (const url of PERSONA_URLS) {
    const response = await answered(app, { url });
    answers.set(url, { status: response.statusCode, body: response.json() });
  }
  const compile = await answered(app, { method: 'POST', url: '/compile', payload });
  answers.set('/compile', { status: compile.statusCode, body: compile.json() });
  return answers;
}

const warningsOf = (body: Record<string, unknown> | undefined) => ((body?.['warnings'] as string[] | undefined) ?? []).join('\n');

describe('brain faults: one bad file degrades one source, never the request', () => {
  it('tolerates invalid UTF-8 in every source (U+FFFD and a warning, on every route)', async () => {
    const root = await copyExampleBrain();
    const broken = Buffer.concat([Buffer.from('- [ ] **Fix the boiler** P0 caf'), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from(' ok\n')]);
    for (const path of ['SOUL.md', 'tasks/open.md', 'calendar/today.md', 'messages/inbox.md', 'memory/2026-11-30.md', 'topics/real-estate.md', 'workers/scribe/identity.md', 'channels/general/purpose.md']) {
      await write(root, path, broken);
    }
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    for (const [url, { status, body }] of await everyRoute(app)) {
      expect(JSON.stringify(body), url).not.toMatch(/\\ud[89ab]/i);
      // A topic holds conversation turns: one that is not text is dropped whole (a 404 for the topic alone).
      if (url === '/context/topic/real-estate' && status === 404) {
        expect(String(body!['detail'])).toMatch(/invalid UTF-8/);
        continue;
      }
      expect(status, url).toBe(200);
      expect(warningsOf(body), url).toMatch(/(not valid|invalid) UTF-8/);
    }
  });

  it('warns about invalid UTF-8 in a worker identity and channel purpose (it was silently replaced)', async () => {
    const root = await copyExampleBrain();
    const broken = Buffer.concat([Buffer.from('You are Scribe, caf'), Buffer.from([0xc3, 0x28]), Buffer.from('.\n')]);
    await write(root, 'workers/scribe/identity.md', broken);
    await write(root, 'channels/general/purpose.md', broken);
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const response = await answered(app, { method: 'POST', url: '/compile', payload: turn() });
    expect(response.statusCode).toBe(200);
    expect(warningsOf(response.json())).toContain('workers/scribe/identity.md is not valid UTF-8');
    expect(warningsOf(response.json())).toContain('channels/general/purpose.md is not valid UTF-8');
  });

  it('reads 5 MB files boundedly: persona sources are cut, a mandatory identity is a 422 naming the file', async () => {
    const root = await copyExampleBrain();
    const lines = (line: string) => line.repeat(Math.ceil(FIVE_MB / line.length));
    await write(root, 'SOUL.md', lines('I feel calm and grateful today.\n'));
    await write(root, 'tasks/open.md', lines('- [ ] **Call the bank** P1 about the lease\n'));
    await write(root, 'calendar/today.md', lines('- 09:30 standup\n'));
    await write(root, 'messages/inbox.md', lines('- [unread] Sam: ping\n'));
    await write(root, 'memory/2026-11-30.md', lines('- Excited and nervous.\n'));
    await write(root, 'topics/real-estate.md', `${lines('old turn\n')}NEWEST TURN\n`);
    await write(root, 'workers/scribe/memory/huge.md', `## Huge\n${lines('word ')}`);
    await write(root, 'channels/general/purpose.md', lines('Purpose. '));
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const answers = await everyRoute(app);
    for (const url of PERSONA_URLS) {
      const { status, body } = answers.get(url)!;
      expect(status, url).toBe(200);
      expect(JSON.stringify(body).length, url).toBeLessThan(200_000);
    }
    expect(String(answers.get(PERSONA_URLS[2]!)!.body!['inputPrompt'])).toContain('NEWEST TURN');
    expect((answers.get(PERSONA_URLS[0]!)!.body!['liveContext'] as string).length).toBeLessThanOrEqual(2500);
    // A purpose over its limit is mandatory content: a 422, never silently cut.
    expect(answers.get('/compile')!.status).toBe(422);

    await write(root, 'channels/general/purpose.md', 'Drafting in the open.\n');
    await write(root, 'workers/scribe/identity.md', lines('You are Scribe. '));
    const identity = await answered(app, { method: 'POST', url: '/compile', payload: turn() });
    expect(identity.statusCode).toBe(422);
    expect(identity.json().detail).toContain('workers/scribe/identity.md');
  });

  it('refuses binary files (NUL bytes) as sources, with a warning, and a binary identity with a 422', async () => {
    const root = await copyExampleBrain();
    const binary = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0xff, 0x00, 0x0a]);
    for (const path of ['SOUL.md', 'tasks/open.md', 'calendar/today.md', 'messages/inbox.md', 'memory/2026-11-30.md', 'topics/real-estate.md', 'channels/general/purpose.md', 'workers/scribe/memory/style.md']) {
      await write(root, path, binary);
    }
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const answers = await everyRoute(app);
    for (const url of PERSONA_URLS.slice(0, 2)) {
      expect(answers.get(url)!.status, url).toBe(200);
      expect(warningsOf(answers.get(url)!.body), url).toMatch(/binary/);
    }
    expect(answers.get('/compile')!.status).toBe(200);
    expect(warningsOf(answers.get('/compile')!.body)).toMatch(/purpose\.md.*binary/);
    await write(root, 'workers/scribe/identity.md', binary);
    expect((await answered(app, { method: 'POST', url: '/compile', payload: turn() })).statusCode).toBe(422);
  });

  it.each([
    ['truncated', '{"currentLocation": {"timezone": '],
    ['not an object', '[1, 2, 3]'],
    ['a null location', '{"currentLocation": null}'],
    ['a zone that is an object', '{"currentLocation": {"timezone": {"a": 1}}}'],
    ['an unknown zone', '{"currentLocation": {"timezone": "Mars/Olympus_Mons"}}'],
    ['prototype keys', '{"__proto__": {"currentLocation": {"timezone": "Asia/Kolkata"}}, "constructor": {"prototype": {"x": 1}}}'],
    ['NUL bytes', '\u0000\u0001{}'],
    ['empty', ''],
  ])('falls back to the default time zone when heartbeat-state.json is %s', async (_what, json) => {
    const root = await copyExampleBrain();
    await write(root, 'memory/heartbeat-state.json', json);
    const { app } = await buildTestApp({ BRAIN_ROOT: root, DEFAULT_TIMEZONE: 'Europe/Berlin' });
    const answers = await everyRoute(app, turn({ timezone: undefined }));
    for (const [url, { status, body }] of answers) {
      expect(status, url).toBe(200);
      if (url !== PERSONA_URLS[2]) expect(String(body!['systemPrompt']), url).toMatch(/Europe\/Berlin/);
    }
    expect(({} as Record<string, unknown>)['x']).toBeUndefined();
  });

  it.each([
    ['truncated', '{"limitChars": '],
    ['not an object', '"policy"'],
    ['negative limits', '{"limitChars": -1, "blocks": {"identity": -5}}'],
    ['absurd limits', '{"limitChars": 1e308, "blocks": {"identity": 1e308}}'],
    ['unknown keys', '{"allowTools": ["shell"], "role": "root"}'],
    ['prototype keys', '{"__proto__": {"limitChars": 1}, "constructor": {"prototype": {"limitChars": 1}}}'],
    ['a tiny budget', '{"limitChars": 10}'],
  ])('compiles or refuses cleanly when policy.json is %s', async (_what, json) => {
    const root = await copyExampleBrain();
    await write(root, 'workers/scribe/policy.json', json);
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const response = await answered(app, { method: 'POST', url: '/compile', payload: turn() });
    expect([200, 422]).toContain(response.statusCode);
    if (response.statusCode === 200) {
      const { budget, instructions } = response.json();
      expect(budget.usedChars).toBe(instructions.length);
      expect(budget.usedChars).toBeLessThanOrEqual(budget.limitChars);
      expect(budget.limitChars).toBeLessThanOrEqual(2_000_000);
    }
  });

  it('degrades around unreadable entries: a directory, a dangling link, a link loop and a socket where files should be', async () => {
    const root = await copyExampleBrain();
    const socketDir = await tempDir('cc-sock-');
    const replace = async (path: string, make: (full: string) => Promise<unknown>) => {
      await rm(join(root, path), { recursive: true, force: true });
      await mkdir(join(root, path, '..'), { recursive: true });
      await make(join(root, path));
    };
    await replace('SOUL.md', (full) => mkdir(full));
    await replace('tasks/open.md', (full) => symlink(join(root, 'no/such/file.md'), full));
    await replace('calendar/today.md', (full) => symlink(full, full));
    await replace('channels/general/purpose.md', (full) => mkdir(full));
    await replace('workers/scribe/memory/style.md', (full) => symlink(join(root, 'gone.md'), full));
    await replace('workers/scribe/policy.json', (full) => mkdir(full));
    // A Unix socket: open() fails at once (ENXIO); the brain is on the same file system.
    const server = createServer();
    server.listen(join(socketDir, 's.sock'));
    await once(server, 'listening');
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    await replace('messages/inbox.md', (full) => symlink(join(socketDir, 's.sock'), full));
    await replace('memory/2026-11-30.md', async (full) => {
      const inside = createServer();
      inside.listen(full);
      await once(inside, 'listening');
      onTestFinished(() => new Promise<void>((resolve) => inside.close(() => resolve())));
    });
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    for (const [url, { status }] of await everyRoute(app)) expect(status, url).toBe(200);

    await replace('workers/scribe/identity.md', (full) => mkdir(full));
    expect((await answered(app, { method: 'POST', url: '/compile', payload: turn() })).statusCode).toBe(422);
    await replace('workers/scribe/identity.md', (full) => symlink(full, full));
    expect((await answered(app, { method: 'POST', url: '/compile', payload: turn() })).statusCode).toBe(422);
    await replace('workers/scribe/identity.md', (full) => symlink(join(root, 'missing.md'), full));
    expect((await answered(app, { method: 'POST', url: '/compile', payload: turn() })).statusCode).toBe(404);
  });

  it('refuses a named pipe where a file should be instead of waiting for a writer forever', async () => {
    const root = await copyExampleBrain();
    for (const path of ['SOUL.md', 'memory/heartbeat-state.json', 'channels/general/purpose.md']) {
      await rm(join(root, path), { force: true });
      execFileSync('mkfifo', [join(root, path)]);
    }
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    // Five rounds: more stuck opens than libuv's four file threads would stall all file I/O.
    for (let round = 0; round < 5; round++) {
      const mars = await answered(app, { url: `/context/mars?now=${NOW}` });
      expect(mars.statusCode).toBe(200);
      expect(warningsOf(mars.json())).toContain('SOUL.md');
    }
    const compile = await answered(app, { method: 'POST', url: '/compile', payload: turn({ channelId: 'general' }) });
    expect(compile.statusCode).toBe(200);
    expect(warningsOf(compile.json())).toContain('channels/general/purpose.md');
  });

  it('answers an empty brain with generic persona context and a 404 for any worker', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await tempDir('cc-empty-brain-') });
    const answers = await everyRoute(app);
    expect(answers.get(PERSONA_URLS[0]!)!.status).toBe(200);
    expect(answers.get(PERSONA_URLS[1]!)!.status).toBe(200);
    expect(answers.get(PERSONA_URLS[2]!)!.status).toBe(404);
    expect(answers.get('/compile')!.status).toBe(404);
    expect((await app.inject('/readyz')).statusCode).toBe(200);
  });

  it.each([
    ['missing', async (parent: string) => join(parent, 'no-such-brain')],
    [
      'a file',
      async (parent: string) => {
        await writeFile(join(parent, 'brain'), 'not a directory');
        return join(parent, 'brain');
      },
    ],
  ])('answers without a 5xx when the brain root is %s, and /readyz says why', async (_what, make) => {
    const root = await make(await tempDir('cc-root-'));
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toMatch(/BRAIN_ROOT/);
    for (const [url, { status }] of await everyRoute(app)) expect([200, 404, 422], url).toContain(status);
  });

  it('keeps answering when the brain root disappears after files were cached, and recovers when it is back', async () => {
    const root = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    for (const [url, { status }] of await everyRoute(app)) expect(status, url).toBe(200);
    await rename(root, `${root}.away`);
    onTestFinished(() => rm(`${root}.away`, { recursive: true, force: true }));
    for (const [url, { status }] of await everyRoute(app)) expect([200, 404, 422], url).toContain(status);
    await rename(`${root}.away`, root);
    for (const [url, { status }] of await everyRoute(app)) expect(status, url).toBe(200);
  });
});

/** Rounds of renames, unlinks and rewrites the storm makes while requests run: the test ends on this count, not at a time. */
const STORM_ROUNDS = 25;

describe('brain files vanishing and changing while requests run', () => {
  it('answers every request during a rename/unlink/rewrite storm with a whole version of each file, never a 5xx', async () => {
    const root = await copyExampleBrain();
    const identity = join(root, 'workers/scribe/identity.md');
    const versions = ['You are Scribe, version A. Write plainly.', 'You are Scribe, version B. Write warmly.'];
    await writeFile(identity, versions[0]!);
    const { app } = await buildTestApp({ BRAIN_ROOT: root, RATE_LIMIT_MAX: '100000000' });

    let stop = false;
    let rounds = 0;
    const storm = (async () => {
      while (!stop) {
        const i = rounds++;
        // Atomic replacement: every reader sees one whole version.
        await writeFile(`${identity}.tmp`, versions[i % 2]!);
        await rename(`${identity}.tmp`, identity);
        // Vanishing and reappearing optional files.
        if (i % 2) await rm(join(root, 'channels/general/purpose.md'), { force: true });
        else await writeFile(join(root, 'channels/general/purpose.md'), `Purpose round ${i}.`);
        if (i % 3 === 0) await rm(join(root, 'topics/real-estate.md'), { force: true });
        else await writeFile(join(root, 'topics/real-estate.md'), `- user: round ${i}\n- assistant: noted\n`);
        await writeFile(join(root, 'workers/scribe/memory/churn.md'), `## Churn ${i}\nRound ${i} note about the sign-off.\n`);
        if (i % 4 === 0) await rm(join(root, 'workers/scribe/memory/churn.md'), { force: true });
        // In-place rewrites (truncate, then write): a reader may see any prefix.
        await writeFile(join(root, 'SOUL.md'), `I feel calm. ${'Round. '.repeat(i % 300)}`);
        await writeFile(join(root, 'tasks/open.md'), `- [ ] **Task ${i}** P${i % 4}\n`.repeat((i % 20) + 1));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();

    const statuses = new Map<string, number[]>();
    const record = (key: string, status: number) => statuses.set(key, [...(statuses.get(key) ?? []), status]);
    // Until the storm has made STORM_ROUNDS rounds and each caller has sent a few requests among them: counts, not a time.
    await Promise.all(
      Array.from({ length: 8 }, async (_, caller) => {
        for (let n = 0; rounds < STORM_ROUNDS || n < 4; n++) {
          if ((caller + n) % 2 === 0) {
            const response = await answered(app, { method: 'POST', url: '/compile', payload: turn({ runId: `storm-${caller}-${n}` }) });
            record('/compile', response.statusCode);
            if (response.statusCode === 200) {
              const prompt: string = response.json().systemPrompt;
              expect(versions.filter((version) => prompt.includes(version))).toHaveLength(1);
            }
          } else {
            const url = PERSONA_URLS[n % PERSONA_URLS.length]!;
            record(url, (await answered(app, { url })).statusCode);
          }
        }
      }),
    );
    stop = true;
    await storm;
    expect(rounds).toBeGreaterThanOrEqual(STORM_ROUNDS);
    expect(new Set(statuses.get('/compile'))).toEqual(new Set([200]));
    expect(new Set(statuses.get(PERSONA_URLS[0]!))).toEqual(new Set([200]));
    expect(new Set(statuses.get(PERSONA_URLS[1]!))).toEqual(new Set([200]));
    for (const status of statuses.get(PERSONA_URLS[2]!) ?? []) expect([200, 404]).toContain(status);

    // What was traced is what was delivered, even though the files have changed since.
    const runs = (await app.inject('/runs?limit=20&worker=scribe')).json().runs as Array<{ runId: string }>;
    expect(runs.length).toBeGreaterThan(0);
    for (const { runId } of runs) expect((await app.inject(`/runs/${runId}/trace`)).json().events[0].verified, runId).toBe(true);
  }, 90_000);
});
