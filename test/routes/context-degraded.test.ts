import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toAscii } from '../../src/core/text.js';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { instructionsOf } from '../helpers/answers.js';

const NOW = '2026-11-30T17:05:00Z';
const PROBLEM = /^application\/problem\+json/;

async function write(root: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
}

async function appOn(brainRoot: string, env: Record<string, string> = {}) {
  const built = await buildTestApp({ BRAIN_ROOT: brainRoot, ...env });
  return { ...built, get: (url: string) => built.app.inject({ method: 'GET', url }) };
}

/**
 * The persona prompt still arrives: identity first, the clock last of the system prompt,
 * and no live-context line says "unknown" (a source that is not there gives no line).
 */
function expectPrompt(body: Record<string, any>, persona: 'mars' | 'venus'): void {
  const name = persona === 'mars' ? 'Mars' : 'Venus';
  expect(body.systemPrompt.startsWith(`<<cc identity | trusted-directive | builtin:${persona}/identity>>\nYou are ${name}`)).toBe(true);
  expect(body.blocks.map((block: { kind: string }) => block.kind).slice(0, 7)).toEqual([
    'identity',
    'runtime-policy',
    'persona',
    'hard-rules',
    'tools',
    'runtime-scope',
    'clock',
  ]);
  expect(body.liveContext).not.toMatch(/unknown|not available/);
  // The session's instructions are the delivered ones, made realtime-safe ASCII.
  expect(body.session).toMatchObject({ type: 'realtime', instructions: toAscii(instructionsOf(body as { systemPrompt: string; inputPrompt: string | null })), audio: { output: { voice: body.voice } } });
}

describe('every brain problem degrades one source, and the persona still gets its prompt', () => {
  it('an empty brain directory: every source is missing, said once each', async () => {
    const { get } = await appOn(await tempDir('cc-empty-brain-'), { DEFAULT_TIMEZONE: 'Europe/London' });
    const mars = await get(`/context/mars?now=${NOW}&topicId=garden`);
    expect(mars.statusCode).toBe(200);
    const marsBody = mars.json();
    expectPrompt(marsBody, 'mars');
    expect(marsBody.systemPrompt).toContain('(Europe/London, UTC+00:00)');
    expect(marsBody.warnings).toEqual([
      'memory/: no daily memory files on or before 2026-11-30',
      'SOUL.md: missing',
      'topic-missing: topics/garden.md does not exist; compiled without a topic',
    ]);
    // Nothing to say: no live-context block at all, and the prompt still arrives.
    expect(marsBody.liveContext).toBe('');
    expect(marsBody.blocks.map((block: { kind: string }) => block.kind)).not.toContain('live-context');
    expect(marsBody.sources).toEqual([]);
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expectPrompt(venus, 'venus');
    expect(venus.warnings).toEqual(['tasks/open.md: missing', 'calendar/today.md: missing', 'messages/inbox.md: missing', 'meetings/: no meeting notes']);
    expect(venus.liveContext).toBe('');
  });

  it('a brain root that does not exist: one warning, not one per file', async () => {
    const missing = join(await tempDir(), 'no-such-brain');
    const { get } = await appOn(missing);
    for (const persona of ['mars', 'venus'] as const) {
      const response = await get(`/context/${persona}?now=${NOW}&topicId=garden`);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expectPrompt(body, persona);
      expect(body.warnings.filter((warning: string) => warning.includes('brain root is not readable'))).toEqual([
        'brain root is not readable (BRAIN_ROOT); compiled without brain context',
        // The caller asked for a topic: it gets the coded reason it connected without one.
        'topic-unreadable: topics/garden.md could not be read (brain root is not readable); compiled without a topic',
      ]);
      expect(body.warnings.some((warning: string) => warning.endsWith(': missing'))).toBe(false);
    }
  });

  it('broken heartbeat JSON, invalid UTF-8, NUL bytes and a binary daily note', async () => {
    const brain = await copyExampleBrain();
    await write(brain, {
      'memory/heartbeat-state.json': '{"currentLocation": {"timezone": "America/Los_Angeles"',
      'tasks/open.md': Buffer.concat([Buffer.from('- [ ] Pay the rent P0\n- [ ] Caf'), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), Buffer.from(' order\n')]),
      'SOUL.md': Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x00, 0x01, 0x02]),
      'memory/2026-11-30.md': Buffer.from(Array.from({ length: 2000 }, (_, i) => (i % 3 === 0 ? 0xff : 0x80 + (i % 50)))),
      'topics/junk.md': Buffer.from(Array.from({ length: 500 }, (_, i) => 0x80 + (i % 60))),
    });
    const { get } = await appOn(brain, { DEFAULT_TIMEZONE: 'Asia/Kolkata' });
    const mars = (await get(`/context/mars?now=${NOW}&topicId=junk`)).json();
    expectPrompt(mars, 'mars');
    expect(mars.systemPrompt).toContain('(Asia/Kolkata, UTC+05:30)');
    expect(mars.topic).toEqual({ topicId: 'junk', found: false, chars: 0, truncated: false });
    expect(mars.warnings).toContain('topic-unreadable: topics/junk.md is not text (binary or invalid UTF-8); compiled without a topic');
    expect(mars.warnings).toEqual(
      expect.arrayContaining([
        'memory/heartbeat-state.json: not valid JSON; using Asia/Kolkata',
        'SOUL.md: could not be read (binary file (NUL bytes)); skipped',
        'memory/2026-11-30.md is not valid UTF-8; invalid bytes were replaced',
        'memory/2026-11-30.md: not text (binary or invalid UTF-8); skipped',
      ]),
    );
    expect(mars.warnings).not.toContain('SOUL.md: missing');
    expect(mars.liveContext).not.toContain('\ufffd');
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expectPrompt(venus, 'venus');
    expect(venus.warnings).toContain('tasks/open.md is not valid UTF-8; invalid bytes were replaced');
    expect(venus.liveContext).toContain('- P0: Pay the rent');
  });

  it('a 5 MB task file and a 5 MB daily note are read in part, with a warning, and still used', async () => {
    const brain = await copyExampleBrain();
    const filler = '- [ ] Sort the photo archive !low\n'.repeat(160_000);
    const daily = `${'- Walked to the shop and back.\n'.repeat(170_000)}- Anxious and tired about the lease; grateful for tea.\n`;
    await write(brain, { 'tasks/open.md': `- [ ] **Call the landlord** P0\n${filler}`, 'memory/2026-11-30.md': daily });
    const { get } = await appOn(brain);
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expectPrompt(venus, 'venus');
    expect(venus.warnings).toEqual([expect.stringMatching(/^tasks\/open\.md is \d{7} bytes; kept the first \d+$/)]);
    expect(venus.liveContext).toContain('- P0: Call the landlord');
    // Read in part: the count is a lower bound.
    expect(venus.liveContext).toMatch(/\nOpen tasks: at least \d{1,3},\d{3} \(the list was read only in part\)\. Most urgent of those first:\n/);
    expect(venus.sources.find((source: { path: string }) => source.path === 'tasks/open.md')).toMatchObject({ truncated: true });
    const mars = (await get(`/context/mars?now=${NOW}`)).json();
    expect(mars.warnings).toEqual([expect.stringMatching(/^memory\/2026-11-30\.md is \d{7} bytes; kept the last \d+$/)]);
    // Daily memory grows at the end: the tail is what is read.
    expect(mars.liveContext).toContain('Anxious and tired about the lease; grateful for tea.');
  });

  it('a file linked from outside the brain root and a directory where a file belongs are refused', async () => {
    const brain = await copyExampleBrain();
    const outside = await tempDir('cc-outside-');
    await writeFile(join(outside, 'secret.md'), '- [ ] Outside-secret-4f1c P0\n');
    await rename(join(brain, 'tasks/open.md'), join(brain, 'tasks/old.md'));
    await symlink(join(outside, 'secret.md'), join(brain, 'tasks/open.md'));
    await rename(join(brain, 'calendar/today.md'), join(brain, 'calendar/old.md'));
    await mkdir(join(brain, 'calendar/today.md'));
    const { get } = await appOn(brain);
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expectPrompt(venus, 'venus');
    expect(venus.warnings).toEqual([
      'tasks/open.md: refused (resolves outside the brain root); skipped',
      'calendar/today.md: refused (not a regular file); skipped',
    ]);
    expect(instructionsOf(venus)).not.toContain('Outside-secret-4f1c');
    expect(venus.liveContext).not.toContain('Open tasks');
    expect(venus.liveContext).toContain('Unread messages: 3');
  });

  it('a stale calendar and a meeting note without a summary', async () => {
    const brain = await copyExampleBrain();
    await write(brain, {
      'calendar/today.md': '# Today — 2026-11-29\n\n- 10:00 Old standup\n',
      'meetings/2026-11-29-budget-check.md': '# Budget check\n\n- Attendees: Alex, Priya\n- Decision: hold\n',
    });
    const { get } = await appOn(brain);
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expect(venus.warnings).toEqual(['calendar/today.md: dated 2026-11-29, not today (2026-11-30)']);
    expect(venus.liveContext).toContain('Calendar (file dated 2026-11-29; today is 2026-11-30, so it may be out of date):');
    expect(venus.liveContext).toContain('Latest meeting notes (2026-11-29, Budget check).');
  });

  it('the example brain\'s meeting without a summary gives its date and title alone (docs/brain-formats.md)', async () => {
    const brain = await copyExampleBrain();
    for (const name of ['2026-11-24-platform-sync.md', '2026-11-27-roadmap-review.md']) await rm(join(brain, 'meetings', name));
    const { get } = await appOn(brain);
    const venus = (await get(`/context/venus?now=${NOW}`)).json();
    expect(venus.liveContext.split('\n').at(-1)).toBe('Latest meeting notes (2026-11-20, Design critique).');
  });
});

describe('no email- or phone-shaped text leaves the service', () => {
  const EMAILS = ['jordan.lee@example.org', 'ALEX+brain@Example.COM', 'zoë@exämple.de', 'priya [at] example [dot] org', 'ops@mail.eu.example.co.uk'];
  const PHONES = ['+44 20 7946 0958', '(415) 555-0100', '415.555.0100', '+1-415-555-0199', '020 7946 0958', '+91 98765 43210', 'tel:+14155550123', '+33 1 23 45 67 89'];
  const line = (i: number) => `email ${EMAILS[i % EMAILS.length]} or call ${PHONES[i % PHONES.length]}`;

  async function piiBrain(): Promise<string> {
    const brain = await tempDir('cc-pii-brain-');
    const lines = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${line(i)}`).join('\n');
    await write(brain, {
      'SOUL.md': `# Soul\n\nI am anxious when people ${line(0)}. Reach me at ${PHONES[1]}.\n\n- ${line(2)}\n`,
      'memory/heartbeat-state.json': '{"currentLocation": {"timezone": "Europe/London"}}',
      'memory/2026-11-28.md': lines('- Grateful and tired: ', 8),
      'memory/2026-11-29.md': lines('- Anxious, sad and hopeful: ', 8),
      'memory/2026-11-30.md': lines('- Excited and nervous: ', 8),
      'tasks/open.md': lines('- [ ] P0 ', 8),
      'calendar/today.md': `# Today — 2026-11-30\n\n${Array.from({ length: 8 }, (_, i) => `- ${10 + i}:00 Call ${PHONES[i]} about ${EMAILS[i % EMAILS.length]}`).join('\n')}\n`,
      'messages/inbox.md': Array.from({ length: 8 }, (_, i) => `- [unread] ${EMAILS[i % EMAILS.length]}: ${line(i + 1)}`).join('\n'),
      'meetings/2026-11-30-call-jordan.md': `# Call ${PHONES[0]}\n\nSummary: ${line(3)} and ${line(4)}.\n`,
      'topics/contacts.md': lines('- ', 20),
      'personas/mars.md': `Warm and slow. The operator is ${EMAILS[0]}, ${PHONES[5]}.`,
      'people/jordan-lee.md': `# Jordan\n\n${line(0)}\n`,
    });
    return brain;
  }

  const emailShape = /[\p{L}\p{N}._%+-]+(?:@|＠|\s?[[(]at[\])]\s?)[\p{L}\p{N}-]+(?:\.|\s?[[(]dot[\])]\s?)[\p{L}]{2,}/iu;
  const phoneShapes = [/\+\d{1,3}[\s().-]*\d[\d\s().-]{6,}\d/, /\(\d{3}\)\s?\d{3}[-.\s]\d{4}/, /\b\d{3}[.-]\d{3}[.-]\d{4}\b/, /\b0\d{2,4}\s\d{3,4}\s\d{3,4}\b/];

  function strings(value: unknown, path = ''): Array<[string, string]> {
    if (typeof value === 'string') return [[path, value]];
    if (Array.isArray(value)) return value.flatMap((item, index) => strings(item, `${path}/${index}`));
    if (value && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => strings(item, `${path}/${key}`));
    return [];
  }

  it('holds for mars, venus and the topic route, in JSON, text and ASCII, and the redactions are counted', async () => {
    const { get } = await appOn(await piiBrain());
    const urls = [
      `/context/mars?now=${NOW}&topicId=contacts`,
      `/context/venus?now=${NOW}&topicId=contacts`,
      `/context/mars?now=${NOW}&topicId=contacts&sanitize=ascii`,
      `/context/venus?now=${NOW}&topicId=contacts&sanitize=ascii`,
      '/context/topic/contacts',
    ];
    for (const url of urls) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(200);
      const body = response.json();
      expect(body.redactions.email + body.redactions.phone, url).toBeGreaterThan(0);
      const text = await get(`${url}${url.includes('?') ? '&' : '?'}format=text`);
      for (const [path, value] of [...strings(body), ['format=text', text.body] as [string, string]]) {
        for (const planted of [...EMAILS, ...PHONES]) expect(value, `${url} ${path}`).not.toContain(planted);
        expect(value, `${url} ${path}`).not.toMatch(emailShape);
        for (const shape of phoneShapes) expect(value, `${url} ${path}`).not.toMatch(shape);
      }
      expect(body.sources.some((source: { path: string }) => source.path.startsWith('people/')), url).toBe(false);
    }
    const mars = (await get(`/context/mars?now=${NOW}`)).json();
    // The override is scrubbed too, and the live context's own redactions are in the count.
    expect(mars.systemPrompt).toContain('The operator is [email], [phone].');
    expect(mars.redactions.email).toBeGreaterThanOrEqual(4);
    expect(mars.redactions.phone).toBeGreaterThanOrEqual(4);
  });
});

describe('when the trace store cannot make an event durable', () => {
  it('answers 503 with no prompt for the persona and topic routes', async () => {
    const dir = join(await tempDir('cc-trace-down-'), 'traces');
    const { get } = await appOn(await copyExampleBrain(), { TRACE_DIR: dir });
    const ok = await get(`/context/mars?now=${NOW}`);
    expect(ok.statusCode).toBe(200);
    const { promptSha256, liveContext } = ok.json();
    await rename(dir, `${dir}.moved`);
    await writeFile(dir, 'not a directory');
    for (const url of [`/context/mars?now=${NOW}&runId=down-1`, `/context/venus?now=${NOW}&format=text&runId=down-2`, '/context/topic/garden?runId=down-3']) {
      const down = await get(url);
      expect(down.statusCode, url).toBe(503);
      expect(down.headers['content-type']).toMatch(PROBLEM);
      expect(down.headers['x-run-id']).toMatch(/^down-\d$/);
      expect(down.headers['etag']).toBeUndefined();
      expect(down.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', detail: expect.stringMatching(/^No prompt was delivered\./) });
      for (const leak of ['You are Mars', 'You are Venus', 'Live context', 'raised beds', promptSha256, liveContext.slice(0, 60)]) {
        expect(down.body, url).not.toContain(leak);
      }
    }
  });
});
