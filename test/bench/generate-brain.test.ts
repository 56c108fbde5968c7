import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBrain, MANIFEST_FILE, planBrain, type BrainPlan } from '../../bench/generate-brain.js';
import { isSafeId, isSlug } from '../../schemas/ids.js';

const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length > 0) await rm(dirs.pop()!, { recursive: true, force: true });
});
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cc-bench-test-'));
  dirs.push(dir);
  return dir;
}

describe('planBrain (the full 10,000-file brain, in memory)', () => {
  let plan: BrainPlan;
  const file = (path: string) => plan.files.find((f) => f.path === path)?.content ?? '';
  const under = (prefix: string) => plan.files.filter((f) => f.path.startsWith(prefix));

  beforeAll(() => {
    plan = planBrain();
  });

  it('is deterministic: the same seed gives the same paths and bytes, another seed does not', () => {
    const again = planBrain();
    expect(again.manifest.sha256).toBe(plan.manifest.sha256);
    expect(again.files.map((f) => f.path)).toEqual(plan.files.map((f) => f.path));
    expect(again.files.find((f) => f.path === 'tasks/open.md')?.content).toBe(file('tasks/open.md'));
    expect(planBrain({ seed: 'another-seed', scale: 0.05 }).manifest.sha256).not.toBe(planBrain({ scale: 0.05 }).manifest.sha256);
  });

  it('has 10,000 unique files across every directory of the brain layout', () => {
    expect(plan.manifest.totalFiles).toBe(10_000);
    expect(plan.files.length + 1).toBe(10_000); // plus the manifest
    expect(new Set(plan.files.map((f) => f.path)).size).toBe(plan.files.length);
    const counts = plan.manifest.counts;
    expect(counts['memory']).toBe(731);
    expect(counts['meetings']).toBeGreaterThanOrEqual(800);
    expect(counts['topics']).toBeGreaterThanOrEqual(500);
    expect(counts['people']).toBeGreaterThanOrEqual(5_000);
    expect(counts['companies']).toBeGreaterThanOrEqual(2_000);
    for (const path of ['SOUL.md', 'memory/heartbeat-state.json', 'tasks/open.md', 'calendar/today.md', 'messages/inbox.md', 'personas/README.md']) {
      expect(file(path).length, path).toBeGreaterThan(0);
    }
    for (const worker of plan.manifest.workers) {
      expect(isSafeId(worker)).toBe(true);
      expect(file(`workers/${worker}/identity.md`)).toMatch(/^You are /);
      expect(JSON.parse(file(`workers/${worker}/policy.json`))).toHaveProperty('limitChars');
      expect(under(`workers/${worker}/memory/`).some((f) => /^## /m.test(f.content))).toBe(true);
    }
    for (const channel of plan.manifest.channels) {
      expect(isSafeId(channel)).toBe(true);
      expect(file(`channels/${channel}/purpose.md`).length).toBeGreaterThan(20);
    }
  });

  it('names files the way the service reads them', () => {
    for (const f of under('memory/')) expect(f.path).toMatch(/^memory\/(\d{4}-\d{2}-\d{2}\.md|heartbeat-state\.json)$/);
    for (const f of under('meetings/')) expect(f.path).toMatch(/^meetings\/\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$/);
    for (const prefix of ['topics/', 'people/', 'companies/']) {
      for (const f of under(prefix)) expect(isSlug(f.path.slice(prefix.length, -'.md'.length)), f.path).toBe(true);
    }
    expect(file(`topics/${plan.manifest.topics.typical}.md`)).toMatch(/^# Topic: /);
    expect(plan.manifest.topics.largestBytes).toBe(Buffer.byteLength(file(`topics/${plan.manifest.topics.largest}.md`)));
    const days = under('memory/2').map((f) => f.path);
    expect(days.at(-1)).toBe(`memory/${plan.manifest.endDate}.md`);
    expect(JSON.parse(file('memory/heartbeat-state.json')).currentLocation.timezone).toBe(plan.manifest.timezone);
    expect(plan.files.every((f) => f.content.endsWith('\n'))).toBe(true);
  });

  it('has realistic sizes', () => {
    expect(Buffer.byteLength(file('SOUL.md'))).toBeGreaterThan(2_500);
    expect(Buffer.byteLength(file('SOUL.md'))).toBeLessThan(4_000);
    const memory = under('memory/2').map((f) => Buffer.byteLength(f.content));
    expect(Math.min(...memory)).toBeGreaterThanOrEqual(1_000);
    expect(Math.max(...memory)).toBeLessThan(7_000);
    const topics = under('topics/').map((f) => Buffer.byteLength(f.content));
    expect(topics.filter((size) => size > 32_768).length).toBeGreaterThan(10);
    expect(topics.filter((size) => size < 5_000).length).toBeGreaterThan(topics.length / 2);
    expect(plan.manifest.totalBytes).toBeGreaterThan(10e6);
    expect(plan.manifest.totalBytes).toBeLessThan(40e6);
  });

  it('uses every documented task format', () => {
    const tasks = file('tasks/open.md');
    const open = tasks.split('\n').filter((line) => line.startsWith('- [ ] '));
    expect(open.length).toBeGreaterThanOrEqual(150);
    for (const marker of [/ P0\b/, / P1\b/, / P2\b/, / P3\b/, /!high\b/, /!low\b/, /\(priority: high\)/, /\(priority: low\)/]) {
      expect(tasks, String(marker)).toMatch(marker);
    }
    expect(tasks).toMatch(/^## P0 — Urgent$/m);
    expect(tasks).toMatch(/^## Today$/m);
    expect(tasks).toMatch(/^- \[x\] /m);
    expect(tasks).toMatch(/^- \[ \] \*\*[^*]+\*\* — /m);
    expect(tasks).toMatch(/<!-- id: t-\d+ -->/);
    expect(tasks).toMatch(/^ {2}- /m);
    expect(tasks).toMatch(/^---$/m);
  });

  it('has calendar, inbox and meeting lines in their formats', () => {
    const events = file('calendar/today.md').split('\n').filter((line) => line.startsWith('- '));
    expect(events.length).toBeGreaterThanOrEqual(5);
    for (const line of events) expect(line).toMatch(/^- \d{2}:\d{2} \S/);
    const inbox = file('messages/inbox.md').split('\n').filter((line) => line.startsWith('- '));
    expect(inbox.length).toBeGreaterThanOrEqual(250);
    for (const line of inbox) expect(line).toMatch(/^- \[(unread|read)\] [^:]+: \S/);
    expect(inbox.filter((line) => line.startsWith('- [unread]')).length).toBeGreaterThan(30);
    for (const meeting of under('meetings/').slice(-20)) expect(meeting.content).toMatch(/^Summary: \S/m);
  });

  it('mixes emotional and neutral memory lines with PII and the shapes a scrubber must spare', () => {
    const recent = under('memory/2').slice(-2).map((f) => f.content).join('\n');
    expect(recent).toMatch(/\b(anxious|tired|frustrated|worried|nervous|grateful|happy|calm|proud|excited)\b/);
    expect(recent.split('\n').some((line) => line.startsWith('- ') && !/\b(felt|feel|grateful|happy|anxious|worried|proud)\b/i.test(line))).toBe(true);
    const memory = under('memory/2').map((f) => f.content).join('\n');
    expect(memory).toMatch(/\+44 20 7946 0\d{3}/);
    expect(memory).toMatch(/\(415\) 555-01\d{2}/);
    expect(memory).toMatch(/\b415\.555\.01\d{2}\b/);
    expect(memory).toMatch(/\b[a-z._-]+@(mail\.)?example\.(org|com|net)\b/);
    expect(memory).toMatch(/\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b/);
    expect(memory).toMatch(/\bversion \d+\.\d+\.\d+\b/);
    expect(memory).toMatch(/Order #\d{5}\b/);
    expect(memory).toMatch(/https:\/\/\S+\/[0-9a-f]{20,}/);
    // Words an emotion filter must not match as substrings.
    expect(memory).toMatch(/\bcache\b/);
    expect(memory).toMatch(/\bpresentation\b/);
    expect(memory).toMatch(/\bheartbeat\b/);
  });
});

describe('ensureBrain', () => {
  it('writes the planned files, reuses a matching brain and regenerates for another seed', async () => {
    const dir = join(await scratch(), 'brain');
    const first = await ensureBrain(dir, { scale: 0.02 });
    expect(first.generated).toBe(true);
    const plan = planBrain({ scale: 0.02 });
    expect(first.manifest).toEqual(plan.manifest);
    const sample = plan.files[Math.floor(plan.files.length / 2)]!;
    expect(await readFile(join(dir, sample.path), 'utf8')).toBe(sample.content);
    expect(JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8'))).toEqual(plan.manifest);

    const before = (await stat(join(dir, sample.path))).mtimeMs;
    const second = await ensureBrain(dir, { scale: 0.02 });
    expect(second.generated).toBe(false);
    expect((await stat(join(dir, sample.path))).mtimeMs).toBe(before);

    const third = await ensureBrain(dir, { scale: 0.02, seed: 'another-seed' });
    expect(third.generated).toBe(true);
    expect(third.manifest.sha256).not.toBe(first.manifest.sha256);
    expect(await readdir(join(dir, '..'))).toEqual(['brain']); // no staging directory left behind
  });

  it('refuses to replace a directory that is not a generated brain', async () => {
    const dir = await scratch();
    await mkdir(join(dir, 'notes'));
    await writeFile(join(dir, 'notes', 'keep.md'), 'mine\n');
    await expect(ensureBrain(dir, { scale: 0.02 })).rejects.toThrow(/not a generated benchmark brain/);
    expect(await readFile(join(dir, 'notes', 'keep.md'), 'utf8')).toBe('mine\n');
  });
});
