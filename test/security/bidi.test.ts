import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { instructionsOf } from '../helpers/answers.js';

/**
 * Issue 27: caller text kept bidi overrides (U+202E), so a prompt shown to a person read
 * "Pay the invoice of $1000 today" for other bytes. No bidi control — marks, embeddings,
 * overrides, isolates — reaches a prompt, from a caller or from the brain.
 */

const NOW = '2026-11-30T17:05:00Z';
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('bidi controls never reach a prompt (issue 27)', () => {
  it('a task, message and evidence with U+202E compile to prompts without it: "Pay the invoice of $1000 today" is what the bytes say', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject({
      method: 'POST',
      url: '/compile',
      payload: {
        phase: 'start',
        surface: 'queued-task',
        worker: 'scribe',
        task: 'Pay the invoice of $\u202e0001\u202c today',
        evidence: [{ sourceRef: 'doc:\u2067inv\u2069', content: 'Amount: \u200f$\u202e0001\u202c' }],
        now: NOW,
      },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.instructions).not.toMatch(BIDI);
    for (const block of body.blocks as Array<{ source: string }>) expect(block.source).not.toMatch(BIDI);
    expect(body.inputPrompt).toContain('Pay the invoice of $0001 today');
  });

  it('brain text and a topicName with bidi controls reach the persona prompt without them', async () => {
    const brain = await copyExampleBrain();
    await writeFile(join(brain, 'tasks/open.md'), '- [ ] P0 Pay the invoice of $\u202e0001\u202c today\n- [ ] P1 Call \u200eSam\u200f back\n');
    const { app } = await buildTestApp({ BRAIN_ROOT: brain });
    const body = (await app.inject(`/context/venus?now=${NOW}&topicName=${encodeURIComponent('Budget \u202egnikcehc\u202c')}`)).json();
    expect(instructionsOf(body)).not.toMatch(BIDI);
    expect(body.session.instructions).not.toMatch(BIDI);
    expect(body.liveContext).not.toMatch(BIDI);
  });
});
