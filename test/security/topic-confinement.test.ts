import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { expectProblem, NOW } from '../helpers/security-harness.js';

/** The example brain with topic links that resolve out of topics/ but stay inside the brain, and one that stays within. */
async function brainWithTopicLinks(): Promise<string> {
  const root = await copyExampleBrain();
  await writeFile(join(root, 'SOUL.md'), '# Soul\n\nSOULONLYTEXT: what I never tell a topic.\n');
  await symlink('../SOUL.md', join(root, 'topics/soul.md'));
  await mkdir(join(root, 'archive'));
  await writeFile(join(root, 'archive/old.md'), '# Topic: old\n\nARCHIVEONLYTEXT\n');
  await symlink(join(root, 'archive/old.md'), join(root, 'topics/old.md'));
  await symlink('garden.md', join(root, 'topics/yard.md'));
  return root;
}

describe('topic files are confined to topics/', () => {
  it('refuses topics/soul.md -> ../SOUL.md (and an absolute link elsewhere in the brain) on the persona routes, which still connect', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await brainWithTopicLinks() });
    for (const [persona, topicId] of [['mars', 'soul'], ['venus', 'soul'], ['mars', 'old']] as const) {
      const response = await app.inject({ url: `/context/${persona}?topicId=${topicId}&now=${NOW}&runId=confined-${persona}-${topicId}` });
      const label = `${persona} ${topicId}`;
      expect(response.statusCode, label).toBe(200);
      const body = response.json() as { topic: { found: boolean } | null; inputPrompt: string; warnings: string[]; sources: Array<{ path: string }> };
      expect(body.topic, label).toMatchObject({ found: false });
      expect(body.inputPrompt, label).not.toContain('"block":"topic"');
      expect(body.inputPrompt, label).not.toContain('ARCHIVEONLYTEXT');
      // Venus never reads SOUL.md, so none of it may reach her through the topic.
      if (persona === 'venus') expect(response.body, label).not.toContain('SOULONLYTEXT');
      expect(body.warnings.join('\n'), label).toContain(`topic-unreadable: topics/${topicId}.md was refused (resolves outside topics/)`);
      expect(body.sources.map((source) => source.path), label).not.toContain(`topics/${topicId}.md`);
      const trace = await app.inject({ url: `/runs/confined-${persona}-${topicId}/trace` });
      expect(trace.body, label).not.toContain('ARCHIVEONLYTEXT');
      expect(trace.json().events[0].sources.map((source: { path: string }) => source.path), label).not.toContain(`topics/${topicId}.md`);
    }
    // SOUL.md itself is still mars's own source: only the topic route to it is refused.
    const mars = (await app.inject({ url: `/context/mars?topicId=soul&now=${NOW}` })).json() as { liveContext: string };
    expect(mars.liveContext).toContain('SOULONLYTEXT');
  });

  it('answers GET /context/topic/soul with a 404 problem naming the refusal, and serves a link that stays within topics/', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await brainWithTopicLinks() });
    for (const topicId of ['soul', 'old']) {
      const response = await app.inject({ url: `/context/topic/${topicId}` });
      const problem = expectProblem(response, [404], topicId);
      expect(problem['detail'], topicId).toContain('resolves outside topics/');
      expect(response.body, topicId).not.toMatch(/SOULONLYTEXT|ARCHIVEONLYTEXT/);
    }
    const yard = await app.inject({ url: '/context/topic/yard' });
    expect(yard.statusCode).toBe(200);
    expect(yard.json().inputPrompt).toContain('raised beds');
  });
});
