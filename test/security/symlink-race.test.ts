import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { NOW } from '../helpers/security-harness.js';
import { startSwapStorm, type SwapTarget } from '../helpers/swap-storm.js';

/** Swaps the writer makes while the clients ask: the storm ends on this count, not after a time. */
const STORM_SWAPS = 2000;
const CLIENTS = 32;

/** Letters only, so no PII scrubber or clamp can alter it on the way. */
function marker(): string {
  return `OUTSIDEMARKER${[...randomBytes(16)].map((byte) => String.fromCharCode(97 + (byte % 26))).join('')}`;
}

describe('brain confinement under a symlink race', () => {
  it('delivers and traces no text from outside the root while SOUL.md, memory, topic and persona files are swapped for links out, nor after', async ({ annotate }) => {
    const root = await copyExampleBrain();
    const outside = await tempDir('cc-outside-');
    const secret = marker();
    // Each outside file says something mars would deliver: soul text, an emotional memory line, topic notes, a persona body.
    await writeFile(join(outside, 'soul.md'), `# Soul\n\n${secret} is what I am.\n`);
    await writeFile(join(outside, 'memory.md'), `# 2026-11-30\n\n- I feel ${secret} and hope and grief today.\n`);
    await writeFile(join(outside, 'topic.md'), `# Topic: garden\n\n- Alex: ${secret} in the raised beds.\n`);
    await mkdir(join(outside, 'personas'));
    await writeFile(join(outside, 'personas', 'mars.md'), `You are mars, and you say ${secret} often.\n`);
    // A parent directory swapped too: personas/ (holding an override) is moved aside for a link to a directory outside, and back.
    await writeFile(join(root, 'personas', 'mars.md'), 'You are mars, a quiet and careful thinking partner who listens first.\n');
    await rename(join(root, 'personas'), join(root, '.personas-aside'));
    await symlink(join(outside, 'personas'), join(root, 'personas'));

    const file = async (path: string, outsideName: string): Promise<SwapTarget> => ({
      path: join(root, path),
      tmp: join(root, `.swap-${outsideName}`),
      inside: await readFile(join(root, path), 'utf8'),
      outside: join(outside, outsideName),
    });
    const targets: SwapTarget[] = [
      await file('SOUL.md', 'soul.md'),
      await file('memory/2026-11-30.md', 'memory.md'),
      await file('topics/garden.md', 'topic.md'),
      { path: join(root, 'personas'), tmp: join(root, '.swap-personas'), aside: join(root, '.personas-aside'), outside: join(outside, 'personas') },
    ];

    const { app } = await buildTestApp({ BRAIN_ROOT: root, RATE_LIMIT_MAX: '1000000', LOG_LEVEL: 'warn' });
    const storm = startSwapStorm(targets);

    const runIds: string[] = [];
    let answersLeaked = 0;
    const statuses = new Map<number, number>();
    const ask = async (runId: string) => {
      runIds.push(runId);
      const response = await app.inject({ url: `/context/mars?topicId=garden&now=${NOW}&runId=${runId}` });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      if (response.body.includes(secret)) answersLeaked++;
      return response;
    };

    // Until the writer has made STORM_SWAPS swaps, each client asking at least twice among them: counts, not a time.
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let i = 0; storm.swaps() < STORM_SWAPS || i < 2; i++) await ask(`race-${client}-${i}`);
      }),
    );
    const swaps = await storm.stop();
    const stormRequests = runIds.length;
    const stormLeaks = answersLeaked;

    // The writer stopped with every target linked out of the root: refused on every request, whatever was cached.
    let staticServed = 0;
    for (let round = 0; round < 3; round++) {
      const responses = await Promise.all(Array.from({ length: CLIENTS }, (_, client) => ask(`after-${round}-${client}`)));
      for (const response of responses) {
        const body = response.json() as { warnings?: string[]; sources?: Array<{ path: string }> };
        const read = (body.sources ?? []).map((source) => source.path);
        const refused = /SOUL\.md: refused \(resolves outside the brain root\)/.test((body.warnings ?? []).join('\n'));
        if (!refused || ['SOUL.md', 'memory/2026-11-30.md', 'topics/garden.md', 'personas/mars.md'].some((linked) => read.includes(linked))) staticServed++;
      }
    }

    let tracesLeaked = 0;
    for (let i = 0; i < runIds.length; i += CLIENTS) {
      await Promise.all(
        runIds.slice(i, i + CLIENTS).map(async (runId) => {
          const trace = await app.inject({ url: `/runs/${runId}/trace` });
          expect(trace.statusCode, runId).toBe(200);
          if (trace.body.includes(secret)) tracesLeaked++;
        }),
      );
    }

    const figures = { requests: runIds.length, stormRequests, swaps, answersLeaked, stormLeaks, tracesLeaked, staticServed, statuses: Object.fromEntries(statuses) };
    await annotate(JSON.stringify(figures));
    expect(stormRequests, 'the storm ran').toBeGreaterThan(CLIENTS);
    expect(swaps, 'the writer swapped').toBeGreaterThanOrEqual(STORM_SWAPS);
    expect({ answersLeaked, tracesLeaked }, JSON.stringify(figures)).toEqual({ answersLeaked: 0, tracesLeaked: 0 });
    expect(staticServed, 'answers after the storm that read a linked file or did not refuse SOUL.md').toBe(0);
    expect([...statuses.keys()]).toEqual([200]);
  }, 120_000);
});
