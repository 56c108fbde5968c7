import { randomBytes } from 'node:crypto';
import { appendFile, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, OTHER_TOKEN, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { NOW, turn } from '../helpers/security-harness.js';

const canary = (where: string) => `Canary-${where}-${randomBytes(6).toString('hex')}`;

/** A brain whose every file the routes read carries its own canary, plus a broken file or two. */
async function canaryBrain(): Promise<{ root: string; canaries: string[] }> {
  const root = await copyExampleBrain();
  const canaries: string[] = [];
  const add = async (path: string, line: (text: string) => string) => {
    const text = canary(path.replace(/[^a-z]/gi, ''));
    canaries.push(text);
    await mkdir(join(root, path, '..'), { recursive: true });
    await appendFile(join(root, path), `\n${line(text)}\n`);
  };
  await add('workers/scribe/identity.md', (text) => `You also sign as ${text}.`);
  await add('workers/scribe/memory/style.md', (text) => `## Sign-off canary\nSign-off with ${text} please.`);
  await add('channels/general/purpose.md', (text) => `Purpose canary ${text}.`);
  await add('SOUL.md', (text) => `I am grateful and anxious about ${text}.`);
  await add('memory/2026-11-30.md', (text) => `- Excited and nervous about ${text}.`);
  await add('tasks/open.md', (text) => `- [ ] **${text}** P0`);
  await add('calendar/today.md', (text) => `- 16:00 ${text}`);
  await add('messages/inbox.md', (text) => `- [unread] Sam: ${text}`);
  await add('topics/real-estate.md', (text) => `- user: what about ${text}?`);
  await add('personas/venus.md', (text) => `You are Venus. ${text}.`);
  await add('platform/blueprint.md', (text) => `Every worker knows ${text}.`);
  await add('workers/courier/roles/editor.md', (text) => `As editor you also check ${text}.`);
  await add('workers/courier/memory/team.md', (text) => `## Canary note\nJordan said ${text}.`);
  const usage = canary('connections');
  canaries.push(usage);
  await writeFile(
    join(root, 'workers/courier/connections.json'),
    JSON.stringify([{ name: 'mail', hosts: ['smtp.mail.example.com'], methods: ['POST'], env: 'COURIER_MAIL_TOKEN', usage }]),
  );
  // Files that make the reader warn: their paths may be logged, never their bytes.
  await writeFile(join(root, 'workers/scribe/policy.json'), `{"broken": "${canary('policy')}`);
  await writeFile(join(root, 'meetings/2026-11-30-bad.md'), Buffer.concat([Buffer.from(`${canary('meeting')} `), Buffer.from([0xff, 0xfe, 0x0a])]));
  return { root, canaries };
}

describe('secrets never reach the logs', () => {
  it('logs no token, prompt, brain text or request text at LOG_LEVEL=trace: success, 304, 4xx, 401, 429 and 503 paths', async () => {
    const { root, canaries } = await canaryBrain();
    const traceDir = join(await tempDir('cc-log-traces-'), 'traces');
    const harness = await buildTestApp({
      BRAIN_ROOT: root,
      TRACE_DIR: traceDir,
      LOG_LEVEL: 'trace',
      CONTEXT_COMPILER_TOKENS: `${TEST_TOKEN},${OTHER_TOKEN}`,
      RATE_LIMIT_MAX: '60',
    });
    const { app, rawLogs } = harness;
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    const requestText = {
      message: canary('message'),
      task: canary('task'),
      evidence: canary('evidence'),
      briefing: canary('briefing'),
      capability: canary('capability'),
      topicName: canary('topicName'),
      experience: canary('experience'),
    };
    const compile = (payload: Record<string, unknown>, url = '/compile', headers: Record<string, string> = auth) =>
      app.inject({ method: 'POST', url, payload, headers });
    const full = turn({
      message: `${requestText.message} call +44 20 7946 0958`,
      evidence: [{ sourceRef: 'doc:1', content: requestText.evidence }],
      briefing: [{ kind: 'approval', id: 'a-1', intent: requestText.briefing, state: 'pending' }],
      capabilities: [{ id: 'search', description: requestText.capability }],
    });

    const ok = await compile(full);
    expect(ok.statusCode).toBe(200);
    const delivered: string[] = [ok.json().systemPrompt, ok.json().inputPrompt];
    expect((await compile(full, '/compile', { ...auth, 'if-none-match': ok.headers['etag'] as string })).statusCode).toBe(304);
    expect((await compile(full, '/compile?format=text')).statusCode).toBe(200);
    expect((await compile({ phase: 'start', surface: 'chat', worker: 'scribe', task: `${requestText.task} ${'x'.repeat(30_000)}`, now: NOW })).statusCode).toBe(422);
    expect((await compile({ ...full, worker: '../etc' })).statusCode).toBe(400);
    expect((await compile({ ...full, worker: 'ghost' })).statusCode).toBe(404);
    // A governed worker: blueprint, connections, role, recalled notes (a channel turn), experiences, the HUD; then a role it does not admit.
    const courier = { ...full, worker: 'courier', experiences: [{ sourceRef: 'host:lesson/1', content: requestText.experience }] };
    const governed = await compile(courier, '/compile?hud=1');
    expect(governed.statusCode).toBe(200);
    delivered.push(governed.json().systemPrompt, governed.json().inputPrompt);
    // Each new source reached the prompt, so its absence from the logs means something.
    const governedText = `${governed.json().systemPrompt}\n${governed.json().inputPrompt}`;
    for (const where of ['platformblueprintmd', 'workerscourierroleseditormd', 'connections', 'workerscouriermemoryteammd']) expect(governedText).toMatch(new RegExp(`Canary-${where}-`));
    expect(governedText).toContain(requestText.experience);
    expect((await compile({ ...courier, role: 'admin' })).statusCode).toBe(422);
    expect((await app.inject({ method: 'POST', url: '/compile', payload: `{"message":"${requestText.message}"`, headers: { ...auth, 'content-type': 'application/json' } })).statusCode).toBe(400);
    for (const url of [`/context/mars?topicId=real-estate&topicName=${requestText.topicName}`, '/context/venus?format=text', `/context/topic/real-estate?topicName=${requestText.topicName}`, '/personas']) {
      const response = await app.inject({ url, headers: auth });
      expect(response.statusCode, url).toBe(200);
      if (url.startsWith('/context/mars')) delivered.push(response.json().systemPrompt, response.json().inputPrompt, response.json().liveContext);
    }
    const trace = await app.inject({ url: `/runs/${ok.json().runId}/trace?verify=sources`, headers: auth });
    expect(trace.statusCode).toBe(200);
    expect((await app.inject({ url: '/runs', headers: auth })).statusCode).toBe(200);
    // Wrong, missing and malformed credentials.
    for (const authorization of [`Bearer ${TEST_TOKEN}x`, `Basic ${Buffer.from(`user:${OTHER_TOKEN}`).toString('base64')}`, OTHER_TOKEN, `Bearer ${OTHER_TOKEN} extra`]) {
      expect((await app.inject({ url: '/metrics', headers: { authorization } })).statusCode).toBe(401);
    }
    expect((await app.inject({ url: `/runs?access_token=${OTHER_TOKEN}`, headers: auth })).statusCode).toBeLessThan(500);

    // 503: the trace directory is replaced by a file, so nothing can be made durable.
    await rename(traceDir, `${traceDir}.moved`);
    await writeFile(traceDir, 'not a directory');
    const down = await compile(full);
    expect(down.statusCode).toBe(503);
    expect((await app.inject({ url: '/context/mars', headers: auth })).statusCode).toBe(503);
    expect((await app.inject('/readyz')).statusCode).toBe(503);

    // 429 once the allowance is spent (the rate-limit key is a digest of the token, never the token).
    let limited = 0;
    for (let i = 0; i < 80 && limited === 0; i++) if ((await app.inject({ url: '/personas', headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).statusCode === 429) limited++;
    expect(limited).toBe(1);

    const text = rawLogs();
    const { logs } = harness;
    expect(logs.filter((line) => line['msg'] === 'request').length).toBeGreaterThan(20);
    expect(logs.some((line) => line['level'] === 50)).toBe(true);
    const secrets = [
      TEST_TOKEN,
      OTHER_TOKEN,
      Buffer.from(`user:${OTHER_TOKEN}`).toString('base64'),
      ...canaries,
      ...Object.values(requestText),
      'You are Scribe',
      'jordan.lee@example.org',
      '7946 0958',
      ...delivered.filter((part): part is string => typeof part === 'string').map((part) => part.slice(0, 80)),
    ];
    for (const secret of secrets) expect(text, secret).not.toContain(secret);
    expect(text).not.toMatch(/Bearer|Canary-/);
  });
});
