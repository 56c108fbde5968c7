/**
 * Golden files pin the exact bytes of representative compiles. A change to layout,
 * labels, encoding or fixed texts fails here; when the change is intended, regenerate with
 *   UPDATE_GOLDEN=1 npx vitest run test/core/compile-golden.test.ts
 * and review the diff of test/core/golden/ like any other code change.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createCompiler, type CompileInput } from '../../src/core/index.js';
import { O200K_BASE } from '../../src/tokenizer.js';
import { chatTurn, governedWorker, queuedTask, voicePersona } from './golden/cases.js';

const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), 'golden');
const UPDATE = process.env['UPDATE_GOLDEN'] === '1';

const CASES: Record<string, () => CompileInput> = {
  'chat-turn': chatTurn,
  'queued-task': queuedTask,
  'voice-persona': voicePersona,
  'governed-worker': governedWorker,
};

async function golden(name: string, actual: string): Promise<void> {
  const path = join(GOLDEN_DIR, name);
  if (UPDATE) {
    await writeFile(path, actual);
    return;
  }
  expect(existsSync(path), `${name} is missing; run with UPDATE_GOLDEN=1 to create it`).toBe(true);
  // Compared as strings so a difference prints as a diff, and byte for byte.
  expect(actual).toBe(await readFile(path, 'utf8'));
  expect(Buffer.from(actual)).toEqual(await readFile(path));
}

describe('golden compiles', () => {
  for (const [name, input] of Object.entries(CASES)) {
    it(`${name}: system and input prompts are byte-identical to the golden files`, async () => {
      // As the service compiles: the cache plan counted with o200k_base.
      const compiled = createCompiler({ tokenizer: O200K_BASE }).compile(input());
      await golden(`${name}.system.txt`, compiled.systemPrompt);
      await golden(`${name}.input.txt`, compiled.inputPrompt ?? '');
      await golden(
        `${name}.plan.json`,
        `${JSON.stringify(
          {
            promptSha256: compiled.promptSha256,
            inputSha256: compiled.inputSha256,
            blocks: compiled.blocks.map(({ content: _content, ...block }) => block),
            cache: compiled.cache,
            budget: { usedChars: compiled.budget.usedChars, omitted: compiled.budget.omitted },
            tokens: compiled.tokens,
            redactions: compiled.redactions,
          },
          null,
          2,
        )}\n`,
      );
    });
  }
});
