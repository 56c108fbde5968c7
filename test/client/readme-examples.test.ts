/**
 * The README's TypeScript is the code in examples/, which `npm run typecheck` compiles
 * against the client package (tsconfig maps `@context-compiler/client` to its source): the
 * README cannot show code that does not compile.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';

const read = (path: string) => readFile(join(PROJECT_ROOT, path), 'utf8');

describe('README code', () => {
  it('is, block for block, the type-checked files in examples/', async () => {
    const readme = await read('README.md');
    const blocks = [...readme.matchAll(/```ts\n([^]*?)```/g)].map((match) => match[1]);
    expect(blocks).toEqual([await read('examples/client.ts'), await read('examples/connect.ts')]);
    const tsconfig = JSON.parse(await read('tsconfig.json')) as { include: string[]; compilerOptions: { paths: Record<string, string[]> } };
    expect(tsconfig.include).toContain('examples/**/*.ts');
    expect(tsconfig.compilerOptions.paths['@context-compiler/client']).toEqual(['./packages/client/src/index.ts']);
  });

  it('wires a voice server in a dozen lines, from the session the client package returns, one run per call with its run id logged, and every fallback logged', async () => {
    const example = await read('examples/connect.ts');
    expect(example.split('\n').filter((line) => line.trim().length > 0).length).toBeLessThanOrEqual(13);
    expect(example).toContain('await compiler.realtimeSession(persona, { topicId, runId: callId })');
    // Regression: the README's voice server dropped the run id, so a call could not be found in the traces.
    expect(example).toMatch(/process\.stdout\.write\(`\$\{JSON\.stringify\(\{ msg: 'call connected', callId, persona, source, runId \}\)\}\\n`\)/);
    expect(example).toContain("from '@context-compiler/client'");
    // The README's voice server tells its operator about every fallback (test/client/voice-server.test.ts runs it).
    expect(example).toMatch(/realtime: \{ onFallback: logFallback \}/);
    expect(example).toMatch(/const logFallback = \(\{ persona, servedAs, source, reason \}: FallbackEvent\) => process\.stderr\.write\(/);
  });
});
