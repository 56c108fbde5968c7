import { describe, expect, it } from 'vitest';
import { compile, decideRecall, parseBlueprint, receiptsFor, sha256Hex } from '../../src/core/index.js';
import { governedWorker } from './golden/cases.js';

const FILE_SHA = sha256Hex('whatever the file held');

describe('recall policy', () => {
  it('recalls on every run by default', () => {
    expect(decideRecall('always', {})).toEqual({ policy: 'always', interactionContext: [], suppressed: false });
  });

  it('suppresses recall for a clean-room worker on a clean run: no message, no channel, no evidence', () => {
    expect(decideRecall('clean-room', {})).toEqual({ policy: 'clean-room', interactionContext: [], suppressed: true });
    expect(decideRecall('clean-room', { evidence: [] }).suppressed).toBe(true);
  });

  it('recalls as usual on a run with interaction context, and names what made it one', () => {
    expect(decideRecall('clean-room', { message: 'hi' })).toEqual({ policy: 'clean-room', interactionContext: ['message'], suppressed: false });
    expect(decideRecall('clean-room', { channelId: 'general' }).interactionContext).toEqual(['channelId']);
    expect(decideRecall('clean-room', { evidence: [{}] }).interactionContext).toEqual(['evidence']);
    expect(decideRecall('clean-room', { message: 'm', channelId: 'c', evidence: [{}] }).interactionContext).toEqual(['message', 'channelId', 'evidence']);
  });
});

describe('platform blueprint', () => {
  it('takes the revision from front matter and leaves the front matter out of the block', () => {
    expect(parseBlueprint('---\ntitle: Platform\nrevision: 2026.11\n---\nBe kind.\n', FILE_SHA)).toEqual({
      revision: '2026.11',
      revisionFrom: 'front-matter',
      body: 'Be kind.\n',
    });
    expect(parseBlueprint('---\nrevision: "r42"\n---\nBody', FILE_SHA).revision).toBe('r42');
  });

  it("uses the file's digest as the revision without front matter, or without a revision in it", () => {
    const digest = `sha256:${FILE_SHA.slice(0, 16)}`;
    expect(parseBlueprint('Be kind.\n', FILE_SHA)).toEqual({ revision: digest, revisionFrom: 'sha256', body: 'Be kind.\n' });
    expect(parseBlueprint('---\ntitle: x\n---\nBody', FILE_SHA)).toEqual({ revision: digest, revisionFrom: 'sha256', body: 'Body' });
    // A rule that merely looks like front matter further down is text.
    expect(parseBlueprint('Intro\n---\nrevision: 9\n---\n', FILE_SHA).body).toBe('Intro\n---\nrevision: 9\n---\n');
  });

  it('refuses a revision that is not a bounded token, with a warning, and falls back to the digest', () => {
    const parsed = parseBlueprint('---\nrevision: <<cc identity | x>>\n---\nBody', FILE_SHA);
    expect(parsed.revision).toBe(`sha256:${FILE_SHA.slice(0, 16)}`);
    expect(parsed.warning).toContain('front matter revision is not a token');
    expect(parseBlueprint(`---\nrevision: ${'r'.repeat(65)}\n---\nBody`, FILE_SHA).revisionFrom).toBe('sha256');
  });
});

describe('receipts', () => {
  it('records the role and blueprint blocks as delivered, the experiences applied and the preferences', () => {
    const compiled = compile(governedWorker());
    const role = compiled.blocks.find((block) => block.kind === 'role')!;
    const blueprint = compiled.blocks.find((block) => block.kind === 'blueprint')!;
    expect(receiptsFor(compiled, { role: { id: 'editor', selectedBy: 'default' }, blueprintRevision: '2026.11', preferences: governedWorker().preferences })).toEqual({
      role: { id: 'editor', selectedBy: 'default', source: 'workers/courier/roles/editor.md', sha256: role.sha256 },
      blueprint: { revision: '2026.11', source: 'platform/blueprint.md', sha256: blueprint.sha256 },
      experiences: [
        { sourceRef: 'host:lesson/17', sha256: sha256Hex(governedWorker().experiences![0]!.content) },
        { sourceRef: 'host:lesson/21', sha256: compiled.blocks.filter((block) => block.kind === 'experience')[1]!.sha256 },
      ],
      preferences: { length: 'concise', initiative: 'ask-first' },
    });
  });

  it('says "none" for a compile without a blueprint, and lists no role, experience or preference it did not apply', () => {
    const compiled = compile(governedWorker({ blueprint: undefined, role: undefined, experiences: undefined, preferences: undefined }));
    expect(receiptsFor(compiled, { role: { id: 'editor', selectedBy: 'request' } })).toEqual({
      role: null,
      blueprint: { revision: 'none', source: null, sha256: null },
      experiences: [],
      preferences: {},
    });
  });

  it('lists only the experiences that fit the budget', () => {
    const experiences = Array.from({ length: 3 }, (_, i) => ({ sourceRef: `host:lesson/${i}`, content: 'y'.repeat(1500) }));
    const input = governedWorker({ experiences });
    const compiled = compile({ ...input, policy: { ...input.policy, blocks: { ...input.policy.blocks, experience: 3200 } } });
    expect(receiptsFor(compiled, {}).experiences.map((item) => item.sourceRef)).toEqual(['host:lesson/0', 'host:lesson/1']);
  });
});
