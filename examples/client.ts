import { ContextCompilerError, createClient } from '@context-compiler/client';

const api = createClient({ baseUrl: process.env.CONTEXT_COMPILER_URL ?? 'http://127.0.0.1:8080', token: process.env.CC_TOKEN, timeoutMs: 2000 });
const mars = await api.context('mars', { topicId: 'real-estate' }); // prompts (systemPrompt, inputPrompt), digests, voice, session (its tools), warnings
const again = await api.contextIfChanged('mars', mars.etag, { topicId: 'real-estate' }); // or { notModified: true }
if ('notModified' in again) process.stdout.write(`unchanged since run ${mars.runId}: ${mars.budget.usedChars} chars\n`);
try {
  await api.trace(mars.runId);
} catch (error) {
  if (error instanceof ContextCompilerError) process.stderr.write(`${error.status} ${error.code}: ${error.detail}\n`);
}
// api.realtimeSession(persona, query) and api.geminiSetup(persona, query) (never throw: see "Voice server"), api.refresh(persona, runId, { etag, topicName }), api.compile(body), api.topic(id), api.personas(), api.runs(), api.health()
