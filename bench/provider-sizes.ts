/**
 * Each persona's instructions per provider, in bytes and exact tokens (o200k_base, the
 * project's tokenizer), with the tool definitions sent beside them (a script, not a test):
 * the service built in process on a brain (default: the example brain), asked as a caller
 * would at one instant. Gemini's own tokenizer is not public; its counts here are o200k's.
 *
 *   node --import tsx bench/provider-sizes.ts [brainRoot=examples/brain] [now=2026-11-30T17:05:00Z]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig, PROJECT_ROOT } from '../src/config.js';
import { O200K_BASE } from '../src/tokenizer.js';

const brainRoot = resolve(process.argv[2] ?? join(PROJECT_ROOT, 'examples/brain'));
const now = process.argv[3] ?? '2026-11-30T17:05:00Z';
const dir = await mkdtemp(join(tmpdir(), 'cc-provider-sizes-'));
const app = await buildApp(loadConfig({ BRAIN_ROOT: brainRoot, TRACE_DIR: join(dir, 'traces'), LOG_LEVEL: 'silent' }));
try {
  process.stdout.write(`brain ${brainRoot}, now ${now}\n`);
  for (const persona of ['mars', 'venus']) {
    for (const provider of ['openai', 'gemini']) {
      const body = (await app.inject(`/context/${persona}?now=${now}&provider=${provider}`)).json();
      const instructions: string = provider === 'gemini' ? body.setup.systemInstruction.parts[0].text : body.session.instructions;
      const tools = JSON.stringify(provider === 'gemini' ? body.setup.tools : body.session.tools);
      const bytes = Buffer.byteLength(instructions);
      process.stdout.write(
        `${persona.padEnd(6)} ${provider.padEnd(7)} instructions ${bytes} bytes, ${O200K_BASE.count(instructions)} tokens; tools JSON ${Buffer.byteLength(tools)} bytes, ${O200K_BASE.count(tools)} tokens; plan ${body.cache.provider}/${body.cache.caching}, worker-stable prefix ${body.cache.boundaries[0].tokens} tokens\n`,
      );
    }
  }
} finally {
  await app.close();
  await rm(dir, { recursive: true, force: true });
}
